package redisurl

import (
	"errors"
	"net/url"
	"strings"
)

// Redacted stands in for a password wherever options or URLs are shown.
const Redacted = "xxxxx"

// redact returns raw with the password of its user information and the value of
// any sentinel_password parameter replaced. It works on text that does not parse as
// a URL too, since it serves to quote such text in errors. A user name alone is kept
// only when a password follows it: "redis://secret@host" is the password-only form.
func redact(raw string) string { return redactUserinfo(raw, false) }

// redactLoose is redact for a URL whose user information may hold an unescaped '/',
// '?' or '#' (ambiguousUserinfo): everything from the scheme to the last '@' counts as
// user information, the user name kept only when it has none of those.
func redactLoose(raw string) string { return redactUserinfo(raw, true) }

// redactUserinfo is redact, and with loose redactLoose: they differ only in where the
// user information may end.
func redactUserinfo(raw string, loose bool) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	start := len(raw) - len(rest)
	// The user information ends at the last '@' before the path or query, as net/url
	// reads it (a password may itself hold '@'); loosely, at the last '@' of all.
	authEnd := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 && !loose {
		authEnd = i
	}
	if at := strings.LastIndexByte(rest[:authEnd], '@'); at >= 0 {
		user, _, hasPassword := strings.Cut(rest[:at], ":")
		if !hasPassword || strings.ContainsAny(user, "/?#") {
			user = ""
		}
		raw = raw[:start] + user + ":" + Redacted + raw[start+at:]
	}
	return redactQuery(raw, "sentinel_password")
}

// redactQuery replaces the value of every name=value pair of the query part of raw.
func redactQuery(raw, name string) string {
	q := strings.IndexByte(raw, '?')
	if q < 0 {
		return raw
	}
	var b strings.Builder
	b.WriteString(raw[:q+1])
	for i, pair := range strings.Split(raw[q+1:], "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		if key, _, ok := strings.Cut(pair, "="); ok && strings.EqualFold(key, name) {
			pair = key + "=" + Redacted
		}
		b.WriteString(pair)
	}
	return b.String()
}

// redactParseError returns net/url's error for a URL with that URL redacted. Other
// errors are returned as they are.
func redactParseError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	inner := ue.Err
	var esc url.EscapeError
	if errors.As(inner, &esc) {
		// The faulty escape may be part of the password.
		inner = errors.New("invalid URL escape")
	}
	return &url.Error{Op: ue.Op, URL: redact(ue.URL), Err: inner}
}

package testserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits on what the reply reader accepts. The server is real, but a broken
// or lying reply must fail the test, not exhaust its memory.
const (
	maxLine     = 1 << 20   // a simple string, error or header line
	maxBulk     = 512 << 20 // Redis's default proto-max-bulk-len
	maxElements = 1 << 24   // elements of one aggregate
	maxDepth    = 64        // nesting of aggregates
)

// nilText is how a null reply is rendered, as redis-cli does.
const nilText = "(nil)"

// ReplyError is an error reply from the server, such as
// "NOPERM User alice has no permissions to run the 'del' command".
type ReplyError struct {
	Msg string // the whole message, prefix included
}

// Error returns the message as the server sent it.
func (e *ReplyError) Error() string { return e.Msg }

// Prefix returns the first word of the message, such as "ERR", "NOPERM" or
// "WRONGPASS".
func (e *ReplyError) Prefix() string {
	prefix, _, _ := strings.Cut(e.Msg, " ")
	return prefix
}

// errProtocol marks a reply the reader cannot parse.
var errProtocol = errors.New("testserver: protocol error")

func protocolErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errProtocol, fmt.Sprintf(format, args...))
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(dst []byte, args ...string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// readReply reads one reply and renders it as text: simple and bulk strings
// as themselves, integers in decimal, nulls as "(nil)", booleans as "1" or
// "0" (what RESP2 sends for the same commands), aggregates as their elements
// joined by "\n" (a map as key, value, key, value...). An error reply at the
// top level is rendered as its message and also returned as *ReplyError;
// inside an aggregate it is only rendered. RESP3 attributes are skipped.
func readReply(r *bufio.Reader) (string, error) {
	var rerr *ReplyError
	text, err := readValue(r, 0, &rerr)
	if err != nil {
		return "", err
	}
	if rerr != nil {
		return text, rerr
	}
	return text, nil
}

// readValue reads one value at the given depth. A top-level error reply is
// stored in *top; top is nil inside aggregates.
func readValue(r *bufio.Reader, depth int, top **ReplyError) (string, error) {
	if depth > maxDepth {
		return "", protocolErrorf("aggregates nested deeper than %d", maxDepth)
	}
	line, err := readLine(r)
	if err != nil {
		return "", err
	}
	if len(line) == 0 {
		return "", protocolErrorf("empty line")
	}
	kind, rest := line[0], string(line[1:])
	switch kind {
	case '+', ',', '(':
		return rest, nil
	case '-':
		if top != nil {
			*top = &ReplyError{Msg: rest}
		}
		return rest, nil
	case ':':
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return "", protocolErrorf("bad integer %q", rest)
		}
		return strconv.FormatInt(n, 10), nil
	case '_':
		if rest != "" {
			return "", protocolErrorf("bad null %q", rest)
		}
		return nilText, nil
	case '#':
		switch rest {
		case "t":
			return "1", nil
		case "f":
			return "0", nil
		}
		return "", protocolErrorf("bad boolean %q", rest)
	case '$', '=', '!':
		n, err := parseLength(rest, maxBulk)
		if err != nil {
			return "", err
		}
		if n < 0 {
			if kind != '$' {
				return "", protocolErrorf("negative length %d", n)
			}
			return nilText, nil
		}
		body, err := readBulk(r, n)
		if err != nil {
			return "", err
		}
		switch kind {
		case '=': // verbatim string: "txt:" or "mkd:" before the text
			if len(body) < 4 || body[3] != ':' {
				return "", protocolErrorf("bad verbatim string %q", body)
			}
			return body[4:], nil
		case '!':
			if top != nil {
				*top = &ReplyError{Msg: body}
			}
		}
		return body, nil
	case '*', '~', '>', '%', '|':
		n, err := parseLength(rest, maxElements)
		if err != nil {
			return "", err
		}
		if n < 0 {
			if kind != '*' {
				return "", protocolErrorf("negative length %d", n)
			}
			return nilText, nil
		}
		if kind == '%' || kind == '|' {
			n *= 2 // keys and values
		}
		elems := make([]string, 0, min(n, 1024)) // grow as elements arrive
		for range n {
			e, err := readValue(r, depth+1, nil)
			if err != nil {
				return "", noEOF(err)
			}
			elems = append(elems, e)
		}
		if kind == '|' {
			// An attribute annotates the value that follows it.
			v, err := readValue(r, depth, top)
			return v, noEOF(err)
		}
		return strings.Join(elems, "\n"), nil
	}
	return "", protocolErrorf("unknown reply type %q", kind)
}

// parseLength parses a declared length, allowing -1 (null) and nothing above
// limit.
func parseLength(s string, limit int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < -1 {
		return 0, protocolErrorf("bad length %q", s)
	}
	if n > limit {
		return 0, protocolErrorf("length %d over the limit of %d", n, limit)
	}
	return n, nil
}

// readLine reads a CRLF-terminated line of at most maxLine bytes and returns
// it without the CRLF.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine+2 {
			return nil, protocolErrorf("line longer than %d bytes", maxLine)
		}
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if len(line) == 0 {
				return nil, err // io.EOF when the reply has not begun
			}
			return nil, noEOF(err)
		}
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, protocolErrorf("line not terminated by CRLF: %q", line)
	}
	return line[:len(line)-2], nil
}

// readBulk reads n bytes and the CRLF after them. The buffer grows as bytes
// arrive, so a lying length costs no memory.
func readBulk(r *bufio.Reader, n int) (string, error) {
	var b bytes.Buffer
	if _, err := io.CopyN(&b, r, int64(n)+2); err != nil {
		return "", noEOF(err)
	}
	body := b.Bytes()
	if body[n] != '\r' || body[n+1] != '\n' {
		return "", protocolErrorf("bulk string of %d bytes not followed by CRLF", n)
	}
	return string(body[:n]), nil
}

// noEOF turns an EOF in the middle of a reply into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

package testserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// Do runs one command as the default user on a fresh connection, written and
// read by this package rather than by the client under test, and returns the
// reply rendered as text: strings as themselves, integers in decimal, nulls
// as "(nil)", arrays as their elements joined by "\n" (see [Server.DoErr]).
// It fails the test on an error reply, a transport error, or no reply
// within 10s.
func (s *Server) Do(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
	defer cancel()
	text, err := s.DoErr(ctx, args...)
	if err != nil {
		t.Fatalf("testserver: %s: %v", quoteArgs(args), err)
		return ""
	}
	return text
}

// DoErr runs one command as the default user (authenticating with
// RequirePass when it is set) on a fresh connection and returns the reply
// rendered as text. An error reply returns its message as the text and a
// *[ReplyError]; inside an array an error is only rendered. Booleans render
// as "1" and "0", as RESP2 sends them, and RESP3 attributes are skipped. A
// transport error, or ctx ending first, returns another error, which wraps
// ctx's error in the latter case.
func (s *Server) DoErr(ctx context.Context, args ...string) (string, error) {
	var auth []string
	if s.cfg.RequirePass != "" {
		auth = []string{"AUTH", s.cfg.RequirePass}
	}
	return roundTrip(ctx, s.Addr(), auth, args)
}

// DoAs is [Server.DoErr] on a connection authenticated first with
// AUTH user pass. If AUTH fails, its error reply is returned (WRONGPASS for
// a wrong password) and the command is not run.
func (s *Server) DoAs(ctx context.Context, user, pass string, args ...string) (string, error) {
	return roundTrip(ctx, s.Addr(), []string{"AUTH", user, pass}, args)
}

// Version returns the server's version (redis_version from INFO server),
// such as "7.0.15". It fails the test if INFO cannot be run.
func (s *Server) Version(t testing.TB) string {
	t.Helper()
	s.versionMu.Lock()
	v := s.version
	s.versionMu.Unlock()
	if v != "" {
		return v
	}
	v = infoField(s.Do(t, "INFO", "server"), versionKey)
	if v == "" {
		t.Fatalf("testserver: INFO server on %s has no %s", s.Addr(), versionKey)
		return ""
	}
	s.setVersion(v)
	return v
}

func (s *Server) setVersion(v string) {
	s.versionMu.Lock()
	s.version = v
	s.versionMu.Unlock()
}

// aLongTimeAgo is a deadline in the past, which unblocks I/O at once.
var aLongTimeAgo = time.Unix(1, 0)

// roundTrip dials addr, runs the auth command (if any) and then the command,
// and returns the command's reply.
func roundTrip(ctx context.Context, addr string, auth, args []string) (text string, err error) {
	if len(args) == 0 {
		return "", errors.New("testserver: no command given")
	}
	defer func() {
		var rerr *ReplyError
		if err == nil || errors.As(err, &rerr) {
			return
		}
		if ctxErr := contextError(ctx, err); ctxErr != nil {
			err = fmt.Errorf("testserver: %s on %s: %w (%w)", quoteArgs(args[:1]), addr, ctxErr, err)
		} else {
			err = fmt.Errorf("testserver: %s on %s: %w", quoteArgs(args[:1]), addr, err)
		}
	}()

	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(deadline); err != nil {
			return "", err
		}
	}
	// Cancellation without a deadline unblocks the I/O too.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(aLongTimeAgo) })
	defer stop()

	r := newReader(conn)
	if auth != nil {
		// Not pipelined with the command: after a failed AUTH the
		// connection may still be logged in as the default user, and the
		// command must not run as that user.
		if _, err := conn.Write(appendCommand(nil, auth...)); err != nil {
			return "", err
		}
		if text, err := readReply(r); err != nil {
			return text, noEOF(err)
		}
	}
	if _, err := conn.Write(appendCommand(nil, args...)); err != nil {
		return "", err
	}
	text, err = readReply(r)
	// The server closing the connection instead of replying is an error.
	return text, noEOF(err)
}

// contextError returns ctx's error if ctx ended the round trip. The
// connection's deadline is ctx's, and it may expire a moment before ctx's
// own timer marks ctx done.
func contextError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if deadline, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func newReader(conn net.Conn) *bufio.Reader { return bufio.NewReader(conn) }

// infoField returns the value of key in an INFO reply, or "".
func infoField(info, key string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimRight(v, "\r\n")
		}
	}
	return ""
}

// quoteArgs renders a command for messages.
func quoteArgs(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(quoted, " ")
}

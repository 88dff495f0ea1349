package testserver

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

func TestAppendCommand(t *testing.T) {
	got := string(appendCommand([]byte("x"), "SET", "k", ""))
	want := "x*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
	if got != want {
		t.Fatalf("appendCommand = %q, want %q", got, want)
	}
}

// errReply marks a case whose reply is an error reply with the wanted text.
var errReply = errors.New("error reply")

var replyCases = []struct {
	name    string
	wire    string
	want    string
	wantErr error // errReply, errProtocol, io.EOF or io.ErrUnexpectedEOF
}{
	{"simple", "+OK\r\n", "OK", nil},
	{"error", "-ERR bad thing\r\n", "ERR bad thing", errReply},
	{"integer", ":42\r\n", "42", nil},
	{"negative integer", ":-7\r\n", "-7", nil},
	{"bad integer", ":x\r\n", "", errProtocol},
	{"bulk", "$3\r\nfoo\r\n", "foo", nil},
	{"bulk with CRLF inside", "$4\r\na\r\nb\r\n", "a\r\nb", nil},
	{"empty bulk", "$0\r\n\r\n", "", nil},
	{"null bulk", "$-1\r\n", "(nil)", nil},
	{"bulk without CRLF", "$3\r\nfoobar", "", errProtocol},
	{"short bulk", "$5\r\nab", "", io.ErrUnexpectedEOF},
	{"huge bulk length", "$9223372036854775807\r\n", "", errProtocol},
	{"overflowing bulk length", "$99999999999999999999\r\n", "", errProtocol},
	{"bad bulk length", "$-2\r\n", "", errProtocol},
	{"array", "*2\r\n$1\r\na\r\n:1\r\n", "a\n1", nil},
	{"null array", "*-1\r\n", "(nil)", nil},
	{"empty array", "*0\r\n", "", nil},
	{"huge array", "*99999999999\r\n", "", errProtocol},
	{"lying array", "*1000000\r\n:1\r\n", "", io.ErrUnexpectedEOF},
	{"nested", "*2\r\n*1\r\n+x\r\n$-1\r\n", "x\n(nil)", nil},
	{"error in array", "*2\r\n-ERR x\r\n+y\r\n", "ERR x\ny", nil},
	{"too deep", strings.Repeat("*1\r\n", maxDepth+2) + ":1\r\n", "", errProtocol},
	{"null", "_\r\n", "(nil)", nil},
	{"true", "#t\r\n", "1", nil},
	{"false", "#f\r\n", "0", nil},
	{"bad boolean", "#x\r\n", "", errProtocol},
	{"double", ",3.14\r\n", "3.14", nil},
	{"big number", "(123456789012345678901234567890\r\n", "123456789012345678901234567890", nil},
	{"verbatim", "=8\r\ntxt:abcd\r\n", "abcd", nil},
	{"bad verbatim", "=3\r\nabc\r\n", "", errProtocol},
	{"blob error", "!5\r\nERR x\r\n", "ERR x", errReply},
	{"map", "%2\r\n+k\r\n:1\r\n+l\r\n$-1\r\n", "k\n1\nl\n(nil)", nil},
	{"set", "~2\r\n+a\r\n+b\r\n", "a\nb", nil},
	{"push", ">2\r\n+message\r\n+x\r\n", "message\nx", nil},
	{"attribute", "|1\r\n+ttl\r\n:3\r\n+OK\r\n", "OK", nil},
	{"attribute before error", "|1\r\n+a\r\n+b\r\n-ERR x\r\n", "ERR x", errReply},
	{"null set", "~-1\r\n", "", errProtocol},
	{"unknown type", "?x\r\n", "", errProtocol},
	{"LF only", "+OK\n", "", errProtocol},
	{"empty line", "\r\n", "", errProtocol},
	{"nothing", "", "", io.EOF},
	{"unterminated", "+OK", "", io.ErrUnexpectedEOF},
	{"long simple string", "+" + strings.Repeat("a", 100) + "\r\n", strings.Repeat("a", 100), nil},
	{"too long line", "+" + strings.Repeat("a", maxLine+1) + "\r\n", "", errProtocol},
}

// readMakers deliver the same bytes in different chunks.
var readMakers = []struct {
	name string
	fn   func(io.Reader) io.Reader
}{
	{"full", func(r io.Reader) io.Reader { return r }},
	{"byte", iotest.OneByteReader},
	{"half", iotest.HalfReader},
	{"data+err", iotest.DataErrReader},
	{"random", func(r io.Reader) io.Reader { return &randomChunks{r: r, rng: rand.New(rand.NewPCG(1, 2))} }},
}

// randomChunks reads in chunks of random length.
type randomChunks struct {
	r   io.Reader
	rng *rand.Rand
}

func (c *randomChunks) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1+c.rng.IntN(len(p))]
	}
	return c.r.Read(p)
}

func TestReadReply(t *testing.T) {
	for _, tc := range replyCases {
		for _, rm := range readMakers {
			if len(tc.wire) > 1<<16 && rm.name != "full" && rm.name != "half" {
				continue // a megabyte in tiny reads costs seconds under -race
			}
			t.Run(tc.name+"/"+rm.name, func(t *testing.T) {
				// The smallest buffer, so long lines take several ReadSlice calls.
				r := bufio.NewReaderSize(rm.fn(strings.NewReader(tc.wire)), 16)
				got, err := readReply(r)
				checkReply(t, got, err, tc.want, tc.wantErr)
			})
		}
	}
}

func checkReply(t *testing.T, got string, err error, want string, wantErr error) {
	t.Helper()
	var rerr *ReplyError
	switch {
	case wantErr == errReply:
		if !errors.As(err, &rerr) {
			t.Fatalf("err = %v, want a *ReplyError", err)
		}
		if rerr.Msg != want {
			t.Fatalf("ReplyError.Msg = %q, want %q", rerr.Msg, want)
		}
	case wantErr != nil:
		if !errors.Is(err, wantErr) {
			t.Fatalf("err = %v, want %v", err, wantErr)
		}
		return
	case err != nil:
		t.Fatalf("err = %v, want none", err)
	}
	if got != want {
		t.Fatalf("reply = %q, want %q", got, want)
	}
}

func TestReplyErrorPrefix(t *testing.T) {
	e := &ReplyError{Msg: "NOPERM User alice has no permissions"}
	if e.Prefix() != "NOPERM" || e.Error() != e.Msg {
		t.Fatalf("Prefix() = %q, Error() = %q", e.Prefix(), e.Error())
	}
}

// TestCommandRoundTrip reads an encoded command back as a reply: an array of
// bulk strings renders as the arguments joined by "\n".
func TestCommandRoundTrip(t *testing.T) {
	args := []string{"SET", "key with space", "line1\r\nline2", ""}
	got, err := readReply(bufio.NewReader(bytes.NewReader(appendCommand(nil, args...))))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(args, "\n"); got != want {
		t.Fatalf("round trip = %q, want %q", got, want)
	}
}

// FuzzReadReply checks that no input panics the reader and that the chunking
// of the input does not change the result.
func FuzzReadReply(f *testing.F) {
	for _, tc := range replyCases {
		if len(tc.wire) < 1024 {
			f.Add([]byte(tc.wire))
		}
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		whole, wholeErr := readReply(bufio.NewReader(bytes.NewReader(wire)))
		bytewise, byteErr := readReply(bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(wire)), 16))
		if whole != bytewise || (wholeErr == nil) != (byteErr == nil) {
			t.Fatalf("whole: %q, %v; byte by byte: %q, %v", whole, wholeErr, bytewise, byteErr)
		}
	})
}

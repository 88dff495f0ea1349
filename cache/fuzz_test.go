package cache

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/respire/respire/resp"
)

// FuzzParseInvalidation feeds whatever frames the reader accepts to ParseInvalidation:
// it never panics, and what it accepts is a well-formed invalidation.
func FuzzParseInvalidation(f *testing.F) {
	f.Add([]byte(">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\ntk\r\n"))
	f.Add([]byte(">2\r\n$10\r\ninvalidate\r\n_\r\n"))
	f.Add([]byte(">2\r\n+invalidate\r\n*2\r\n+a\r\n$0\r\n\r\n"))
	f.Add([]byte(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n"))
	f.Add([]byte("*2\r\n$10\r\ninvalidate\r\n*0\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := resp.NewReader(bufio.NewReader(bytes.NewReader(data)), resp.Limits{})
		for {
			v, err := rd.Read()
			if err != nil {
				return
			}
			inv, ok := ParseInvalidation(v)
			switch {
			case !ok && (inv.All || inv.Keys != nil):
				t.Fatalf("rejected %s but returned %+v", v, inv)
			case ok && v.Kind() != resp.KindPush:
				t.Fatalf("accepted a %v", v.Kind())
			case ok && inv.All && inv.Keys != nil:
				t.Fatalf("both a flush and keys: %+v", inv)
			}
		}
	})
}

package testkit

import (
	"bufio"
	"net"
	"testing"

	"go.uber.org/goleak"

	"github.com/respire/respire/resp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestScript plays both sides: a client writes commands, the script expects them and
// replies, and the client reads the replies back.
func TestScript(t *testing.T) {
	for _, tt := range []struct {
		name string
		open func(testing.TB) (net.Conn, *Server)
	}{
		{"pipe", Pipe},
		{"tcp", TCP},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cli, s := tt.open(t)
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.HelloRESP3()
				s.Expect("GET", "k")
				s.Reply("$1\r\nv\r\n")
			}()
			var buf []byte
			buf, _ = resp.AppendCommand(buf, "HELLO", "3")
			buf, _ = resp.AppendCommand(buf, "GET", "k")
			if _, err := cli.Write(buf); err != nil {
				t.Fatal(err)
			}
			rd := resp.NewReader(bufio.NewReader(cli), resp.Limits{})
			hello, err := rd.Read()
			if err != nil {
				t.Fatal(err)
			}
			if m, _ := hello.Map(); m["id"].Kind() != resp.KindInteger {
				t.Errorf("HELLO reply %v has no integer id", hello)
			}
			v, err := rd.Read()
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := v.Text(); s != "v" {
				t.Errorf("GET reply %q, want %q", s, "v")
			}
			<-done
		})
	}
}

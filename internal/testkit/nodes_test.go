package testkit

import (
	"bufio"
	"context"
	"testing"
	"testing/synctest"

	"github.com/respire/respire/resp"
)

// TestNodes dials two connections to different addresses and checks that each
// command reaches the handler with the address dialed, and that Close ends the
// serving goroutines (synctest fails the test if any is left).
func TestNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNodes(func(addr string, args []string) string {
			if args[0] == "HELLO" {
				return Hello("7.2.0", 7)
			}
			return "+" + addr + "\r\n"
		})
		defer n.Close()
		for _, addr := range []string{"a:1", "b:2"} {
			cli, err := n.Dial(context.Background(), "tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			buf, _ := resp.AppendCommand(nil, "HELLO", "3")
			buf, _ = resp.AppendCommand(buf, "PING")
			go cli.Write(buf)
			rd := resp.NewReader(bufio.NewReader(cli), resp.Limits{})
			hello, err := rd.Read()
			if err != nil {
				t.Fatal(err)
			}
			if m, _ := hello.Map(); m["id"].String() != "7" {
				t.Errorf("HELLO reply %s", hello)
			}
			pong, err := rd.Read()
			if err != nil || pong.String() != `"`+addr+`"` {
				t.Errorf("PING to %s: %s, %v", addr, pong, err)
			}
		}
	})
}

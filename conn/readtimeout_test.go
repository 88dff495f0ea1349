package conn

import (
	"context"
	"testing"
	"time"

	"github.com/respire/respire/resp"
)

// The read timeout of the replies still awaited counts from the last reply of the
// read that brought others, not from its first: a push handler slower than the
// timeout between two replies of one read must not time out the replies after it.
func TestReadTimeoutCountsFromTheLastReplyOfARead(t *testing.T) {
	// Real time, not a synctest bubble: the connection's socket deadlines are real.
	// The handler is slow by three timeouts, twice what a deadline counted from the
	// first reply allows; counted from the last, the fake has a timeout and a half to
	// send c's reply once the handler returns.
	const timeout = 200 * time.Millisecond
	handled := make(chan struct{})
	c, f := dialFake(t, Options{ReadTimeout: timeout, PushHandler: func(resp.Value) {
		time.Sleep(3 * timeout) // the slow handler under test, on the reader's goroutine
		close(handled)
	}}, helloRESP3)
	ctx := context.Background()
	errs := make(chan error, 3)
	for _, k := range []string{"a", "b", "c"} {
		go func() {
			_, err := c.Do(ctx, "GET", k)
			errs <- err
		}()
		f.Expect("GET", k) // one at a time, so the fake reads them in order
	}
	// One read: a's reply, a push whose handler outlasts the timeout, b's reply.
	f.Reply("$1\r\na\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n$1\r\nb\r\n")
	<-handled
	f.Reply("$1\r\nc\r\n")
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("a reply after the slow push handler: %v", err)
		}
	}
}

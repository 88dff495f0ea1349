package conn

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/test/testserver"
)

const digestSource = "return redis.call('GET', KEYS[1])"

// scriptLoads reads the calls of SCRIPT LOAD in INFO commandstats.
func scriptLoads(t *testing.T, srv *testserver.Server) int {
	t.Helper()
	for line := range strings.Lines(srv.Do(t, "INFO", "commandstats")) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_script|load:calls=")
		if ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// TestScriptDigestRemembered: the server gives the digest once per connection (the one
// its own SCRIPT LOAD gives, the script then cached there), and each connection asks
// for itself.
func TestScriptDigestRemembered(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	want := srv.Do(t, "SCRIPT", "LOAD", digestSource)
	for _, proto := range protocols {
		c := dialT(t, srv.Addr(), Options{Protocol: proto})
		before := scriptLoads(t, srv)
		for range 2 {
			d, err := c.ScriptDigest(ctx, digestSource)
			if err != nil || d != want {
				t.Fatalf("RESP%d: ScriptDigest = %q, %v; want %q", proto, d, err, want)
			}
		}
		if n := scriptLoads(t, srv) - before; n != 1 {
			t.Errorf("RESP%d: %d SCRIPT LOADs for two ScriptDigest calls on one connection, want 1", proto, n)
		}
		if v, err := c.Do(ctx, "EVALSHA", want, 1, "k"); err != nil || !v.IsNull() {
			t.Errorf("RESP%d: EVALSHA by the digest = %v, %v", proto, v, err)
		}
	}
}

// TestScriptDigestBadReply: a reply that is not a digest is an error matching
// ErrBadDigest and is not remembered.
func TestScriptDigestBadReply(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	ask := func(reply string) (string, error) {
		res := make(chan error, 1)
		var d string
		go func() {
			var err error
			d, err = c.ScriptDigest(context.Background(), digestSource)
			res <- err
		}()
		f.Expect("SCRIPT", "LOAD", digestSource)
		f.Reply(reply)
		err := <-res
		return d, err
	}
	for _, reply := range []string{":1\r\n", "$3\r\nabc\r\n", "$40\r\n" + strings.Repeat("g", 40) + "\r\n"} {
		if d, err := ask(reply); !errors.Is(err, ErrBadDigest) {
			t.Errorf("reply %q: %q, %v; want ErrBadDigest", reply, d, err)
		}
	}
	digest := strings.Repeat("0a", 20)
	if d, err := ask("$40\r\n" + digest + "\r\n"); err != nil || d != digest {
		t.Errorf("after bad replies: %q, %v; want %q", d, err, digest)
	}
}

// TestScriptDigestLoadCancelled: SCRIPT LOAD runs nothing, so a caller that gave up on
// its reply learns that the script was not sent, whatever became of SCRIPT LOAD.
func TestScriptDigestLoadCancelled(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() {
		_, err := c.ScriptDigest(ctx, digestSource)
		res <- err
	}()
	f.Expect("SCRIPT", "LOAD", digestSource)
	cancel()
	err := <-res
	if !errors.Is(err, ErrNotSent) || errors.Is(err, ErrOutcomeUnknown) || WasWritten(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled SCRIPT LOAD: %v; want ErrNotSent and context.Canceled", err)
	}
	f.Reply("$40\r\n" + strings.Repeat("0", 40) + "\r\n") // drained, not remembered
	got := make(chan error, 1)
	go func() {
		_, err := c.ScriptDigest(context.Background(), digestSource)
		got <- err
	}()
	f.Expect("SCRIPT", "LOAD", digestSource)
	f.Reply("$40\r\n" + strings.Repeat("1", 40) + "\r\n")
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestScriptDigestByDeadline: the SCRIPT LOAD of ScriptDigestBy is waited for until its
// deadline, as a call with CallOptions.Deadline is: a server that does not answer
// fails it then, matching context.DeadlineExceeded even under a context that never
// ends, and nothing is remembered (Issue #28: a Redlock's part in FIPS 140-only mode).
func TestScriptDigestByDeadline(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{ReadTimeout: time.Minute})
	srv.Pause(t) // nothing is answered until Resume
	_, err := c.ScriptDigestBy(context.Background(), time.Now().Add(50*time.Millisecond), digestSource)
	srv.Resume(t)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotSent) {
		t.Fatalf("ScriptDigestBy past its deadline: %v, want an error matching context.DeadlineExceeded and ErrNotSent", err)
	}
	before := scriptLoads(t, srv)
	if _, err := c.ScriptDigestBy(context.Background(), time.Now().Add(time.Minute), digestSource); err != nil {
		t.Fatalf("ScriptDigestBy once the server answers: %v", err)
	}
	if n := scriptLoads(t, srv) - before; n != 1 {
		t.Errorf("%d SCRIPT LOADs after a failed one, want 1: a failure is not remembered", n)
	}
}

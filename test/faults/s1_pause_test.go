package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/history"
	"github.com/respire/respire/test/testserver"
)

// S1: a holder frozen (SIGSTOP) past its lease wakes and writes with its old
// token; the resource-side fence must refuse every such late write, the next
// holder's token must be higher, the resource must read as the newer holder
// wrote it, and the woken holder's keep-alive must end with the loss as its
// cause. The lease alone cannot stop the late write itself (package lock's
// "Leases, not mutexes"; coordination's "The fence belongs to the resource"):
// the child writes before it looks at its lease, as a resumed process would.

const (
	s1Lease    = "{s1}:lease"
	s1Fence    = "{s1}:fence"
	s1Resource = "{s1}:resource"
	s1Accepted = "{s1}:resource:accepted"
	s1TTL      = 300 * time.Millisecond
)

// TestS1HolderChild is the paused holder: it runs only as the child of
// TestS1PausedHolderFenced. Commands from the parent: "acquire", "write
// <value>", "cause", "exit".
func TestS1HolderChild(t *testing.T) {
	if !testserver.IsChild() {
		t.Skip("runs only as the child of TestS1PausedHolderFenced")
	}
	c := testclient.At(t, os.Getenv("RESPIRE_S1_ADDR"), respire.Options{})
	co := coordination.New(c)
	res, err := co.Resource(s1Resource, s1Accepted)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var fl *coordination.FencedLock
	var kaDone <-chan struct{}
	var kaCtx context.Context
	testserver.ChildSay("ready")
	in := testserver.ChildListen()
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "acquire":
			var ok bool
			fl, ok, err = co.TryAcquireFencedLock(ctx, s1Lease, s1Fence, s1TTL)
			if err != nil || !ok {
				testserver.ChildSay("acquired 0 %v %v", ok, err)
				continue
			}
			ka, err := fl.KeepAlive(ctx)
			if err != nil {
				testserver.ChildSay("acquired 0 keep-alive %v", err)
				continue
			}
			kaDone, kaCtx = ka.Done(), ka.Context()
			defer ka.Stop()
			testserver.ChildSay("acquired %d", fl.FencingToken())
		case "write":
			// A holder that woke from a pause writes at once, as a process
			// resumed mid-work would, without looking at its lease first.
			_, err := res.Write(ctx, fl.FencingToken(), "SET", arg)
			switch {
			case err == nil:
				testserver.ChildSay("wrote accepted")
			case errors.Is(err, coordination.ErrStaleToken):
				testserver.ChildSay("wrote stale")
			default:
				testserver.ChildSay("wrote error %v", err)
			}
		case "cause":
			select {
			case <-kaDone:
				cause := context.Cause(kaCtx)
				switch {
				case errors.Is(cause, lock.ErrLeaseLost):
					testserver.ChildSay("cause lost")
				case errors.Is(cause, lock.ErrLeaseExpired):
					testserver.ChildSay("cause expired")
				default:
					testserver.ChildSay("cause other %v", cause)
				}
			case <-time.After(10 * time.Second):
				testserver.ChildSay("cause none: the keep-alive still runs")
			}
		case "exit":
			return
		}
	}
}

func TestS1PausedHolderFenced(t *testing.T) {
	if testserver.IsChild() {
		t.Skip("parent only")
	}
	fig, rng := newFigure(t, "S1")
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.At(t, srv.Addr(), respire.Options{})
	co := coordination.New(c)
	res, err := co.Resource(s1Resource, s1Accepted)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := history.NewRecorder()
	const parent, child = 0, 1

	holder := testserver.StartChild(t, "TestS1HolderChild", "RESPIRE_S1_ADDR="+srv.Addr())
	holder.Expect(t, "ready", 60*time.Second)
	// The child's operations are recorded with the times the parent saw
	// around them, which bracket the real ones.
	childOp := func(kind string, input any, send, want string) string {
		call := r.Now()
		holder.Send(t, send)
		got := holder.Expect(t, want, 30*time.Second)
		op := history.Op{Client: child, Kind: kind, Input: input, Call: call, Return: r.Now(), Outcome: history.OK}
		switch {
		case kind == "acquire":
			tok, _ := strconv.ParseInt(strings.Fields(got)[0], 10, 64)
			op.Output = tok
			if tok == 0 {
				op.Outcome = history.Failed
			}
		case got == "accepted":
			op.Output = true
		case got == "stale":
			op.Output = false
		default:
			op.Outcome, op.Err = history.Unknown, errors.New(got)
		}
		r.Add(op)
		return got
	}
	parentWrite := func(tok int64, value string) {
		call := r.Begin(parent, history.KindFencedWrite, history.FenceWrite{Token: tok, Value: value})
		_, err := res.Write(ctx, tok, "SET", value)
		switch {
		case err == nil:
			call.End(history.OK, true, nil)
		case errors.Is(err, coordination.ErrStaleToken):
			call.End(history.OK, false, err)
		default:
			call.End(history.Unknown, nil, err)
		}
	}
	read := func() {
		call := r.Begin(parent, history.KindFencedRead, history.FenceRead{})
		v, err := c.Do(ctx, "GET", s1Resource)
		if err != nil {
			call.End(history.Unknown, nil, err)
			return
		}
		s := ""
		if !v.IsNull() {
			s, _ = v.Text()
		}
		call.End(history.OK, s, nil)
	}

	rounds, lateRefused := 0, 0
	causes := map[string]int{}
	deadline := time.Now().Add(Budget(5*time.Second, 20*time.Minute))
	for rounds < 2 || time.Now().Before(deadline) {
		rounds++
		if got := childOp("acquire", nil, "acquire", "acquired "); strings.HasPrefix(got, "0") {
			t.Fatalf("round %d: the child could not acquire: %s", rounds, got)
		}
		tok := r.Ops()[len(r.Ops())-1].Output.(int64)
		v := fmt.Sprintf("child-%d-early", rounds)
		childOp(history.KindFencedWrite, history.FenceWrite{Token: tok, Value: v}, "write "+v, "wrote ")

		// Freeze the holder with its keep-alive mid-lease, for a random
		// stretch past the lease's end.
		holder.Pause(t)
		fig.faults++
		waitGone(t, srv, s1Lease)
		fl, ok, err := co.TryAcquireFencedLock(ctx, s1Lease, s1Fence, s1TTL)
		call := r.Now()
		if err != nil || !ok {
			t.Fatalf("round %d: the next holder could not acquire after the lease ran out: %v %v", rounds, ok, err)
		}
		r.Add(history.Op{Client: parent, Kind: "acquire", Output: fl.FencingToken(), Outcome: history.OK, Call: call, Return: call})
		parentWrite(fl.FencingToken(), fmt.Sprintf("parent-%d", rounds))
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		holder.Resume(t)

		late := fmt.Sprintf("child-%d-late", rounds)
		switch childOp(history.KindFencedWrite, history.FenceWrite{Token: tok, Value: late}, "write "+late, "wrote ") {
		case "stale":
			lateRefused++
		}
		read()
		// The woken keep-alive must end its context with the loss and why.
		holder.Send(t, "cause")
		switch cause := holder.Expect(t, "cause ", 30*time.Second); cause {
		case "lost", "expired":
			causes[cause]++
		default:
			fig.check([]history.Violation{{Checker: "S1", Detail: fmt.Sprintf("round %d: the frozen holder's keep-alive ended with %q, not a loss", rounds, cause)}})
		}
		if _, err := fl.Release(ctx); err != nil {
			t.Fatalf("round %d: release: %v", rounds, err)
		}
	}
	holder.Send(t, "exit")
	if out, err := holder.Wait(t, 30*time.Second); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}

	ops := r.Ops()
	fig.ops = len(ops)
	fig.check(history.CheckTokensIncrease(ops, "acquire"))
	fig.check(history.CheckStaleRefused(ops))
	fig.check(history.CheckFencedRegister(ops, 30*time.Second))
	if lateRefused != rounds {
		fig.check([]history.Violation{{Checker: "S1", Detail: fmt.Sprintf("%d of %d late writes refused", lateRefused, rounds)}})
	}
	t.Logf("rounds %d: late writes refused by the fence %d; keep-alive causes %v", rounds, lateRefused, causes)
	fig.report(t)
}

// waitGone polls the server itself until key no longer exists.
func waitGone(t *testing.T, srv *testserver.Server, key string) {
	t.Helper()
	testkit.WaitWithin(t, 30*time.Second, key+" to go", func() bool { return srv.Do(t, "EXISTS", key) == "0" })
}

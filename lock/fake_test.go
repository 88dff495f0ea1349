package lock

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
)

// fakeRedis is an in-memory server just large enough for the lock's timing logic:
// HELLO 3, SET NX PX, SET IFEQ PX, GET, DELEX IFEQ and PTTL, over the connections of
// a testkit.Nodes injected with respire.Options.Dialer. It keeps time with the clock of
// the caller, so that under testing/synctest leases expire on the bubble's fake clock
// and a test can sleep through them in no time. (A synctest bubble cannot hold I/O
// with a real server, which runs outside it.)
type fakeRedis struct {
	mu       sync.Mutex
	keys     map[string]fakeEntry
	renewals []time.Time     // when each SET IFEQ that renewed arrived
	hold     chan struct{}   // when not nil, a SET IFEQ waits for it to close before it runs
	holdDel  chan struct{}   // when not nil, a DELEX waits for it to close before it runs
	holdKill chan struct{}   // when not nil, a CLIENT KILL waits for it to close, then answers :1
	ran      []string        // the name of each command served, in the order it ran ("SET IFEQ" for a renewal)
	slowSets []time.Duration // how long the replies of the next SET NX are held back, in turn
	setsNX   []string        // the token of every SET NX that took the key
	loading  int             // renewals still to be refused with LOADING, as a restarted server does
	ids      int64
	nodes    *testkit.Nodes
}

type fakeEntry struct {
	val string
	exp time.Time
}

// fakeClient starts a fakeRedis and a client of it, both closed when t ends.
func fakeClient(t *testing.T) (*fakeRedis, *respire.Client) {
	t.Helper()
	return fakeClientWith(t, respire.Options{})
}

// fakeClientWith is fakeClient with a client made with opts (its Dialer is the fake's).
func fakeClientWith(t *testing.T, opts respire.Options) (*fakeRedis, *respire.Client) {
	t.Helper()
	f := &fakeRedis{keys: map[string]fakeEntry{}}
	f.nodes = testkit.NewNodes(f.serve)
	t.Cleanup(f.nodes.Close) // after the client's Close, registered next and so run first
	opts.Dialer = f.nodes.Dial
	return f, testclient.At(t, "fake:6379", opts)
}

// set stores val at key for ttl, as another client's write would.
func (f *fakeRedis) set(key, val string, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[key] = fakeEntry{val: val, exp: time.Now().Add(ttl)}
}

// del deletes key, as another client's DEL would.
func (f *fakeRedis) del(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, key)
}

// holdRenewals makes renewals wait until the returned function is called.
func (f *fakeRedis) holdRenewals() (release func()) { return f.holdOn(&f.hold) }

// holdDeletes makes releases (DELEX) wait until the returned function is called.
func (f *fakeRedis) holdDeletes() (release func()) { return f.holdOn(&f.holdDel) }

// holdKills makes cut-offs (CLIENT KILL) wait until the returned function is called,
// as a server that does not answer them; they are answered :1 then.
func (f *fakeRedis) holdKills() (release func()) { return f.holdOn(&f.holdKill) }

// holdOn sets *hold, one of f's holds, to a channel that the returned function clears
// and closes.
func (f *fakeRedis) holdOn(hold *chan struct{}) (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	*hold = ch
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		*hold = nil
		f.mu.Unlock()
		close(ch)
	}
}

// Ran returns the names of the commands served, in the order they ran.
func (f *fakeRedis) Ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ran...)
}

// Renewals returns when the renewals that found the lock arrived.
func (f *fakeRedis) Renewals() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.renewals...)
}

// serve runs one command, held back as the test asked, and returns its raw reply.
func (f *fakeRedis) serve(_ string, args []string) string {
	name := strings.ToUpper(args[0])
	switch {
	case len(args) > 3 && name == "SET" && strings.EqualFold(args[3], "IFEQ"):
		name = "SET IFEQ"
	case len(args) > 1 && name == "CLIENT" && strings.EqualFold(args[1], "KILL"):
		name = "CLIENT KILL"
	}
	f.mu.Lock()
	hold, holdDel, holdKill := f.hold, f.holdDel, f.holdKill
	f.mu.Unlock()
	switch {
	case hold != nil && name == "SET IFEQ":
		<-hold // a renewal the server is slow to run
	case holdDel != nil && name == "DELEX":
		<-holdDel // a release the server is slow to run
	case holdKill != nil && name == "CLIENT KILL":
		<-holdKill // a cut-off the server does not answer
		f.mu.Lock()
		f.ran = append(f.ran, name)
		f.mu.Unlock()
		return ":1\r\n"
	}
	reply := f.exec(args)
	f.mu.Lock()
	f.ran = append(f.ran, name)
	f.mu.Unlock()
	if d := f.slowSet(args); d > 0 {
		time.Sleep(d) // the SET ran at once; its reply is what is slow
	}
	return reply
}

// slowSet returns how long the reply of args is held back: the next of slowSets for a
// SET NX, else 0.
func (f *fakeRedis) slowSet(args []string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(args) < 4 || !strings.EqualFold(args[3], "NX") || len(f.slowSets) == 0 {
		return 0
	}
	d := f.slowSets[0]
	f.slowSets = f.slowSets[1:]
	return d
}

// held reports whether key holds a live value.
func (f *fakeRedis) held(key string) bool { return f.exec([]string{"GET", key}) != fakeNull }

const fakeNull = "_\r\n"

// exec runs one command and returns its raw RESP3 reply.
func (f *fakeRedis) exec(args []string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	get := func(key string) (fakeEntry, bool) {
		e, ok := f.keys[key]
		if ok && !now.Before(e.exp) {
			delete(f.keys, key)
			return fakeEntry{}, false
		}
		return e, ok
	}
	px := func(s string) time.Time {
		ms, _ := strconv.ParseInt(s, 10, 64)
		return now.Add(time.Duration(ms) * time.Millisecond)
	}
	opt := func(i int) string { return strings.ToUpper(args[i]) }
	switch cmd := strings.ToUpper(args[0]); {
	case cmd == "HELLO":
		f.ids++
		return testkit.Hello("8.4.0", f.ids)
	case cmd == "SET" && len(args) == 6 && opt(3) == "NX" && opt(4) == "PX":
		if _, held := get(args[1]); held {
			return fakeNull
		}
		f.keys[args[1]] = fakeEntry{val: args[2], exp: px(args[5])}
		f.setsNX = append(f.setsNX, args[2])
		return "+OK\r\n"
	case cmd == "SET" && len(args) == 7 && opt(3) == "IFEQ" && opt(5) == "PX" && f.loading > 0:
		f.loading--
		return "-LOADING Redis is loading the dataset in memory\r\n"
	case cmd == "SET" && len(args) == 7 && opt(3) == "IFEQ" && opt(5) == "PX":
		if e, held := get(args[1]); !held || e.val != args[4] {
			return fakeNull
		}
		f.keys[args[1]] = fakeEntry{val: args[2], exp: px(args[6])}
		f.renewals = append(f.renewals, now)
		return "+OK\r\n"
	case cmd == "GET" && len(args) == 2:
		e, held := get(args[1])
		if !held {
			return fakeNull
		}
		return fmt.Sprintf("$%d\r\n%s\r\n", len(e.val), e.val)
	case cmd == "DELEX" && len(args) == 4 && opt(2) == "IFEQ":
		if e, held := get(args[1]); !held || e.val != args[3] {
			return ":0\r\n"
		}
		delete(f.keys, args[1])
		return ":1\r\n"
	case cmd == "PTTL" && len(args) == 2:
		e, held := get(args[1])
		if !held {
			return ":-2\r\n"
		}
		return fmt.Sprintf(":%d\r\n", e.exp.Sub(now).Milliseconds())
	}
	return "-ERR unknown command '" + args[0] + "'\r\n"
}

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
)

// reshardDuration is how long writers run while slots move; the issue asks for 20s.
const reshardDuration = 20 * time.Second

// Live resharding: 32 goroutines SET then GET unique keys for 20 s while slots move
// between the masters back and forth. Afterwards every acknowledged write is readable, and no
// caller ever saw MOVED or ASK (or any other error).
func TestClusterLiveResharding(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	c := clusterClient(t, cl, respire.Options{})
	ctx := clusterTestContext(t)

	// Half the writes go to a few hot slots, the ones that move; the rest anywhere.
	hot := []int{11, 5555, 9999, 16000}
	tags := make([]string, len(hot))
	for i, s := range hot {
		tags[i] = "{" + clusterserver.KeyIn(s, "hot") + "}"
	}

	const writers = 32
	var (
		stop      atomic.Bool
		wg        sync.WaitGroup
		mu        sync.Mutex
		acked     = map[string]string{}
		failures  []error
		redirects atomic.Int64
		ops       atomic.Int64
	)
	for g := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			// Paced (at most 100 rounds a second each, 3,200 in all), so that the test
			// leaves CPU to the packages that run beside it.
			pace := time.NewTicker(10 * time.Millisecond)
			defer pace.Stop()
			for i := 0; !stop.Load(); i++ {
				<-pace.C
				var key string
				if i%2 == 0 {
					key = fmt.Sprintf("%s:%d:%d", tags[rng.IntN(len(tags))], g, i)
				} else {
					key = fmt.Sprintf("any:%d:%d", g, i)
				}
				val := fmt.Sprintf("v%d", rng.Uint64())
				_, err := c.Do(ctx, "SET", key, val)
				if err == nil {
					mu.Lock()
					acked[key] = val
					mu.Unlock()
					var v resp.Value
					v, err = c.Do(ctx, "GET", key)
					if s, _ := v.Text(); err == nil && s != val {
						err = fmt.Errorf("GET %s = %q right after SET %q", key, s, val)
					}
				}
				ops.Add(1)
				if err != nil {
					if resp.HasCode(err, "MOVED") || resp.HasCode(err, "ASK") {
						redirects.Add(1)
					}
					mu.Lock()
					failures = append(failures, fmt.Errorf("%s: %w", key, err))
					mu.Unlock()
				}
			}
		})
	}

	masters := cl.Masters(t)
	start := time.Now()
	moves := 0
	for time.Since(start) < reshardDuration {
		slot := hot[moves%len(hot)]
		from := cl.MasterOf(t, slot)
		to := masters[0]
		for i, m := range masters {
			if m.ID == from.ID {
				to = masters[(i+1)%len(masters)]
			}
		}
		cl.MigrateSlot(t, slot, to)
		moves++
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("%d slot migrations in %v; %d SET+GET rounds by %d goroutines, %d acknowledged writes",
		moves, elapsed.Round(time.Millisecond), ops.Load(), writers, len(acked))

	if n := redirects.Load(); n > 0 {
		t.Errorf("callers saw MOVED or ASK %d times", n)
	}
	for i, err := range failures {
		if i == 5 {
			t.Errorf("... and %d more", len(failures)-5)
			break
		}
		t.Errorf("failed call: %v", err)
	}
	if moves < 2*len(hot) {
		t.Errorf("only %d migrations: every hot slot should have moved there and back", moves)
	}

	// Every acknowledged write is readable, through the client and on the owner itself.
	keys := make([]string, 0, len(acked))
	for k := range acked {
		keys = append(keys, k)
	}
	lost := 0
	for batch := range chunk(keys, 500) {
		cmds := make([][]any, len(batch))
		for i, k := range batch {
			cmds[i] = []any{"GET", k}
		}
		res, err := c.DoMulti(ctx, cmds...)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if s, _ := r.Value.Text(); r.Err != nil || s != acked[batch[i]] {
				lost++
				if lost <= 5 {
					t.Errorf("acknowledged %s = %q, read %v %v", batch[i], acked[batch[i]], r.Value, r.Err)
				}
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d acknowledged writes of %d are not readable", lost, len(acked))
	}
	for i, k := range keys {
		if i == 50 {
			break
		}
		if got := owner(t, cl, k); got != acked[k] {
			t.Errorf("owner of slot %d has %s = %q, want %q", cluster.Slot(k), k, got, acked[k])
		}
	}
}

func chunk[T any](s []T, n int) func(func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			m := min(n, len(s))
			if !yield(s[:m]) {
				return
			}
			s = s[m:]
		}
	}
}

// availability records, per hash tag, when writes succeed, and the longest gap
// between two successes: how long writes to that shard were unavailable.
type availability struct {
	mu      sync.Mutex
	last    map[string]time.Time
	maxGap  map[string]time.Duration
	errs    map[string]int
	lastErr map[string]error
}

func (a *availability) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	for k := range a.last {
		a.last[k] = now
	}
	a.maxGap = map[string]time.Duration{}
	a.errs = map[string]int{}
	a.lastErr = map[string]error{}
}

func (a *availability) record(tag string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.errs[tag]++
		a.lastErr[tag] = err
		return
	}
	now := time.Now()
	if gap := now.Sub(a.last[tag]); gap > a.maxGap[tag] {
		a.maxGap[tag] = gap
	}
	a.last[tag] = now
}

func (a *availability) report(tag string) (time.Duration, int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.maxGap[tag], a.errs[tag], a.lastErr[tag]
}

// waitWritable polls until a write for tag succeeds, failing after timeout: the client
// must recover by itself.
func waitWritable(t *testing.T, c *respire.Client, tag string, timeout time.Duration) {
	t.Helper()
	testkit.WaitWithin(t, timeout, "writes to "+tag, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.Do(ctx, "SET", tag+":probe", 1)
		return err
	})
}

// Failover during traffic, both ways: a coordinated CLUSTER FAILOVER (and back), then a
// master killed with SIGKILL. The client recovers by itself; how long writes to the
// shard were unavailable is reported as a figure.
func TestClusterFailoverDuringTraffic(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{})
	c := clusterClient(t, cl, respire.Options{ReadTimeout: time.Second, DialTimeout: time.Second})

	slots := []int{0, 6000, 12000}
	tags := make([]string, len(slots))
	for i, s := range slots {
		tags[i] = "{" + clusterserver.KeyIn(s, "fo") + "}"
	}
	av := &availability{last: map[string]time.Time{}}
	av.reset()
	var (
		stop  atomic.Bool
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked = map[string]ackedWrite{}
	)
	for g := range 9 {
		tag := tags[g%len(tags)]
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("%s:%d:%d", tag, g, i)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := c.Do(ctx, "SET", key, i)
				cancel()
				av.record(tag, err)
				if err == nil {
					mu.Lock()
					acked[key] = ackedWrite{tag, i}
					mu.Unlock()
				} else {
					time.Sleep(5 * time.Millisecond) // pacing retries of a failed write, not synchronisation
				}
			}
		})
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	phase := func(name, tag string, change func()) {
		t.Helper()
		waitWritable(t, c, tag, 10*time.Second)
		av.reset()
		start := time.Now()
		change()
		waitWritable(t, c, tag, 15*time.Second)
		// Let traffic run a little so the gap after recovery is measured too.
		settle := time.Now().Add(200 * time.Millisecond)
		for time.Now().Before(settle) {
			time.Sleep(10 * time.Millisecond) // letting traffic run; nothing waits on it
		}
		gap, errs, last := av.report(tag)
		t.Logf("%s: writes to the shard unavailable for %v (longest gap between successful writes); %d failed writes; change took %v; last error: %v",
			name, gap.Round(time.Millisecond), errs, time.Since(start).Round(time.Millisecond), last)
	}

	m0 := cl.MasterOf(t, slots[0])
	r0 := cl.ReplicasOf(t, m0)[0]
	phase("CLUSTER FAILOVER", tags[0], func() { cl.Failover(t, r0) })
	phase("CLUSTER FAILOVER back", tags[0], func() { cl.Failover(t, m0) })

	m1 := cl.MasterOf(t, slots[1])
	phase("kill -9 of the master", tags[1], func() { cl.KillMaster(t, m1) })
	// The others never stopped.
	waitWritable(t, c, tags[2], time.Second)

	stop.Store(true)
	wg.Wait()
	// A coordinated failover loses nothing; a crash may lose what the replica had not
	// received yet, which is reported.
	lost := map[string]int{}
	total := map[string]int{}
	ctx := clusterTestContext(t)
	for k, w := range acked {
		total[w.tag]++
		v, err := c.Do(ctx, "GET", k)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := v.Int(); err != nil || int(n) != w.val {
			lost[w.tag]++
		}
	}
	if lost[tags[0]] > 0 || lost[tags[2]] > 0 {
		t.Errorf("acknowledged writes lost without a crash: %d of %d (coordinated failover), %d of %d (untouched shard)",
			lost[tags[0]], total[tags[0]], lost[tags[2]], total[tags[2]])
	}
	t.Logf("acknowledged writes lost to the crash: %d of %d", lost[tags[1]], total[tags[1]])
}

type ackedWrite struct {
	tag string
	val int
}

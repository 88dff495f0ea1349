package sentinel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/sentinel"
	"github.com/respire/respire/test/sentinelserver"
	"github.com/respire/respire/test/testserver"
)

// clientName marks the test client's connections in CLIENT LIST.
const clientName = "respire-sentinel-test"

// sentinelClient is a client of d's master through its Sentinels, with o's other
// fields.
func sentinelClient(t *testing.T, d *sentinelserver.Deployment, o respire.Options) *respire.Client {
	t.Helper()
	o.Addrs, o.SentinelMaster, o.ClientName = d.SentinelAddrs(), d.MasterName(), clientName
	return testclient.New(t, o)
}

// servedBy returns the address of the connection the client uses for key now.
func servedBy(c *respire.Client) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cn, err := link.Of(c).Conn(ctx, route.SharedLane, "any")
	if err != nil {
		return "", err
	}
	return cn.Addr(), nil
}

func TestClientBadInput(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1, Sentinels: 1})
	connect := func(o respire.Options) (time.Duration, error) {
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := respire.NewClient(ctx, o)
		if err == nil {
			c.Close()
		}
		return time.Since(began), err
	}
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) respire.Options
		want error
	}{
		{"unknown master name", func(t *testing.T) respire.Options {
			return respire.Options{Addrs: d.SentinelAddrs(), SentinelMaster: "no-such-master"}
		}, sentinel.ErrUnknownMaster},
		{"no reachable Sentinel", func(t *testing.T) respire.Options {
			return respire.Options{Addrs: []string{nowhere(t), nowhere(t)}, SentinelMaster: "mymaster"}
		}, sentinel.ErrNoSentinel},
		{"Sentinel names a replica", func(t *testing.T) respire.Options {
			m := testserver.Start(t, testserver.Config{})
			r := testserver.Start(t, testserver.Config{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(m.Port())}})
			liar := sentinelserver.StartLoneSentinel(t, "mymaster", r.Port())
			return respire.Options{Addrs: []string{liar.Addr()}, SentinelMaster: "mymaster"}
		}, sentinel.ErrNotMaster},
		{"Sentinel that does not answer", func(t *testing.T) respire.Options {
			d.Sentinels[0].Pause(t)
			t.Cleanup(func() { d.Sentinels[0].Resume(t) })
			return respire.Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName(), DialTimeout: 500 * time.Millisecond}
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			took, err := connect(tc.opts(t))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			t.Logf("after %v: %v", took, err)
			if took > fastFail {
				t.Fatalf("took %v", took)
			}
		})
	}
}

// TestClientAuthAndURL connects with a redis+sentinel URL to Sentinels and data nodes
// that both want passwords.
func TestClientAuthAndURL(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1, Password: "node-pw", SentinelPassword: "sentinel-pw"})
	url := fmt.Sprintf("redis+sentinel://:node-pw@%s/%s/3?sentinel_password=sentinel-pw&client_name=%s",
		strings.Join(d.SentinelAddrs(), ","), d.MasterName(), clientName)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := respire.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	got, err := d.Nodes[0].DoErr(ctx, "EVAL", "redis.call('SELECT', 3) return redis.call('GET', 'k')", "0")
	if err != nil || got != "v" {
		t.Fatalf("k in db 3 of the master = %q, %v", got, err)
	}

	// Wrong or missing Sentinel credentials fail at once, saying why.
	for _, q := range []string{"sentinel_password=wrong", ""} {
		began := time.Now()
		bad := strings.Replace(url, "sentinel_password=sentinel-pw", q, 1)
		_, err := respire.Connect(ctx, bad)
		if !errors.Is(err, sentinel.ErrNoSentinel) || !(resp.HasCode(err, "WRONGPASS") || resp.HasCode(err, "NOAUTH")) {
			t.Errorf("%s: err = %v, want ErrNoSentinel with WRONGPASS or NOAUTH", bad, err)
		}
		if time.Since(began) > fastFail {
			t.Errorf("%s: took %v", bad, time.Since(began))
		}
	}
}

// writeLoop is the workload of the failover tests: goroutines writing distinct keys,
// every fourth one followed by WAIT 2 on the same connection.
type writeLoop struct {
	c    *respire.Client
	stop chan struct{}
	wg   sync.WaitGroup
	ok   atomic.Int64

	mu       sync.Mutex
	acked    []string    // keys whose SET was acknowledged
	durable  []string    // keys acknowledged and then reported on both replicas by WAIT 2
	okAt     []time.Time // when each acknowledged write returned
	failures map[string]int
}

const waitReplicas = 2

func startWriteLoop(c *respire.Client, workers int) *writeLoop {
	w := &writeLoop{c: c, stop: make(chan struct{}), failures: map[string]int{}}
	for g := range workers {
		w.wg.Add(1)
		go w.run(g)
	}
	return w
}

func (w *writeLoop) run(g int) {
	defer w.wg.Done()
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		default:
		}
		key := fmt.Sprintf("w:%d:%d", g, n)
		durable, err := w.write(key, n%4 == 3)
		if err != nil {
			w.mu.Lock()
			w.failures[failureKind(err)]++
			w.mu.Unlock()
			// Back off a little so that a dead master is not hammered.
			timer := time.NewTimer(5 * time.Millisecond)
			select {
			case <-w.stop:
				timer.Stop()
				return
			case <-timer.C:
			}
			continue
		}
		w.ok.Add(1)
		w.mu.Lock()
		w.acked = append(w.acked, key)
		w.okAt = append(w.okAt, time.Now())
		if durable {
			w.durable = append(w.durable, key)
		}
		w.mu.Unlock()
	}
}

// write sets key; withWait also runs WAIT on the same connection and reports whether
// both replicas had the write.
func (w *writeLoop) write(key string, withWait bool) (durable bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if !withWait {
		_, err := w.c.Do(ctx, "SET", key, key)
		return false, err
	}
	cn, release, err := w.c.Dedicated(ctx, key)
	if err != nil {
		return false, err
	}
	if _, err := cn.Do(ctx, "SET", key, key); err != nil {
		release(false)
		return false, err
	}
	v, err := cn.DoBlocking(ctx, "WAIT", waitReplicas, 500)
	release(err == nil)
	if err != nil {
		return false, nil // the SET was acknowledged; its durability is unknown
	}
	n, _ := v.Int()
	return n >= waitReplicas, nil
}

func failureKind(err error) string {
	s := err.Error()
	for _, k := range []string{"READONLY", "connection refused", "outcome unknown", "not sent", "not a master", "closed", "deadline"} {
		if strings.Contains(s, k) {
			return k
		}
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

func (w *writeLoop) halt() {
	close(w.stop)
	w.wg.Wait()
}

// longestGap returns the longest time after from without an acknowledged write.
func (w *writeLoop) longestGap(from time.Time) time.Duration {
	w.mu.Lock()
	times := slices.Clone(w.okAt)
	w.mu.Unlock()
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	prev := from
	for _, at := range times {
		if at.Before(from) {
			continue
		}
		gap = max(gap, at.Sub(prev))
		prev = at
	}
	return gap
}

// missingOn returns the keys that server lacks.
func missingOn(t *testing.T, server *testserver.Server, keys []string) []string {
	t.Helper()
	var missing []string
	for chunk := range slices.Chunk(keys, 500) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := server.DoErr(ctx, append([]string{"MGET"}, chunk...)...)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range strings.Split(got, "\n") {
			if v != chunk[i] {
				missing = append(missing, chunk[i])
			}
		}
	}
	return missing
}

func TestFailoverDuringWrites(t *testing.T) {
	t.Run("SENTINEL FAILOVER", func(t *testing.T) {
		testFailoverDuringWrites(t, func(d *sentinelserver.Deployment) *testserver.Server { return d.Failover(t) })
	})
	t.Run("kill -9 of the master", func(t *testing.T) {
		testFailoverDuringWrites(t, func(d *sentinelserver.Deployment) *testserver.Server {
			old := d.KillMaster(t)
			return d.WaitNewMaster(t, old.Addr())
		})
	})
}

func testFailoverDuringWrites(t *testing.T, fault func(*sentinelserver.Deployment) *testserver.Server) {
	const workers = 16
	d := sentinelserver.Start(t, sentinelserver.Config{})
	old := d.Nodes[0]
	c := sentinelClient(t, d, respire.Options{})
	ctx := context.Background()
	sub, err := c.Subscribe(ctx, "news")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	receive(t, c, sub, "before")

	w := startWriteLoop(c, workers)
	defer func() {
		select {
		case <-w.stop:
		default:
			w.halt()
		}
	}()
	testkit.WaitWithin(t, 10*time.Second, "writes before the fault", func() error {
		if n := w.ok.Load(); n < 500 {
			return fmt.Errorf("%d writes", n)
		}
		return nil
	})

	// Watch, while the fault happens, when the client moves off the old master.
	moved := make(chan time.Time, 1)
	stopWatch := make(chan struct{})
	var watching sync.WaitGroup
	watching.Add(1)
	go func() {
		defer watching.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case <-tick.C:
			}
			if addr, err := servedBy(c); err == nil && addr != old.Addr() {
				moved <- time.Now()
				return
			}
		}
	}()
	faultAt := time.Now()
	nm := fault(d)
	namedAt := time.Now()
	if nm == old {
		t.Fatal("the fault left the old master in place")
	}
	// Nothing tells the client: it follows by itself.
	var switchedAt time.Time
	timeout := time.NewTimer(15 * time.Second)
	select {
	case switchedAt = <-moved:
		timeout.Stop()
	case <-timeout.C:
	}
	close(stopWatch)
	watching.Wait()
	if switchedAt.IsZero() {
		t.Fatal("the client did not leave the old master within 15s of the Sentinels naming a new one")
	}
	if addr, err := servedBy(c); err != nil || addr != nm.Addr() {
		t.Fatalf("the client uses %s (%v), want the new master %s", addr, err, nm.Addr())
	}
	before := w.ok.Load()
	testkit.WaitWithin(t, 10*time.Second, "writes on the new master", func() error {
		if n := w.ok.Load() - before; n < 500 {
			return fmt.Errorf("%d writes since the switch", n)
		}
		return nil
	})
	w.halt()

	missing := missingOn(t, nm, w.acked)
	missingDurable := missingOn(t, nm, w.durable)
	t.Logf("%d writers: %d acknowledged writes (%d confirmed by WAIT %d); failures by kind %v",
		workers, len(w.acked), len(w.durable), waitReplicas, w.failures)
	t.Logf("Sentinels named the new master %v after the fault; the client used it %v after the fault",
		namedAt.Sub(faultAt).Round(time.Millisecond), switchedAt.Sub(faultAt).Round(time.Millisecond))
	t.Logf("unavailability window (longest time without an acknowledged write): %v",
		w.longestGap(faultAt).Round(time.Millisecond))
	t.Logf("acknowledged writes the new master lacks: %d of %d", len(missing), len(w.acked))
	if len(missingDurable) > 0 {
		t.Errorf("%d writes confirmed by WAIT %d are missing on the new master, e.g. %v",
			len(missingDurable), waitReplicas, missingDurable[:min(5, len(missingDurable))])
	}
	if len(w.acked) == 0 || len(w.durable) == 0 {
		t.Fatalf("the workload proved nothing: %d acknowledged, %d durable", len(w.acked), len(w.durable))
	}

	// The subscription moved to the new master too.
	receive(t, c, sub, "after")

	// Nothing of the client stays connected to the old master, if it still runs.
	testkit.WaitWithin(t, 10*time.Second, "the old master to have no client connection", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		list, err := old.DoErr(ctx, "CLIENT", "LIST")
		if err != nil {
			return nil // killed
		}
		if n := strings.Count(list, "name="+clientName); n > 0 {
			return fmt.Errorf("%d connections of the client on the old master", n)
		}
		return nil
	})
}

// receive publishes on the client until the subscription receives a message.
func receive(t *testing.T, c *respire.Client, sub *respire.Subscription, payload string) {
	t.Helper()
	testkit.WaitWithin(t, 10*time.Second, "a message on the subscription", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := c.Do(ctx, "PUBLISH", "news", payload); err != nil {
			return err
		}
		timer := time.NewTimer(100 * time.Millisecond)
		defer timer.Stop()
		for {
			select {
			case m := <-sub.Messages():
				if m.Payload == payload {
					return nil
				}
			case <-timer.C:
				return errors.New("no message")
			}
		}
	})
}

// TestReplicaReads: with ReplicaReads, read-only commands go to a replica the
// Sentinels name, writes to the master, before and after a failover.
func TestReplicaReads(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{})
	c := sentinelClient(t, d, respire.Options{ReplicaReads: true})
	ctx := context.Background()
	gets := func(s *testserver.Server) int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		info, err := s.DoErr(ctx, "INFO", "commandstats")
		if err != nil {
			return -1 // killed
		}
		for line := range strings.Lines(info) {
			if rest, ok := strings.CutPrefix(line, "cmdstat_get:calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				return n
			}
		}
		return 0
	}
	readBack := func(key string) {
		t.Helper()
		if _, err := c.Do(ctx, "SET", key, "v"); err != nil {
			t.Fatal(err)
		}
		// Replicas lag: the read may miss the write for a moment.
		testkit.WaitWithin(t, 5*time.Second, "the write on the replica", func() error {
			v, err := c.Do(ctx, "GET", key)
			if err != nil {
				return err
			}
			if v.IsNull() {
				return errors.New("not there yet")
			}
			return nil
		})
	}

	readBack("before")
	master := d.Master(t)
	if n := gets(master); n != 0 {
		t.Fatalf("the master served %d GETs", n)
	}
	served := 0
	for _, r := range d.Nodes[1:] {
		served += gets(r)
	}
	if served == 0 {
		t.Fatal("no replica served a GET")
	}

	nm := d.Failover(t)
	testkit.WaitWithin(t, 15*time.Second, "writes to the new master", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.Do(ctx, "SET", "after", "v")
		return err
	})
	base := gets(nm)
	readBack("after2")
	// Once the Sentinels list the new replicas, the new master serves no reads.
	testkit.WaitWithin(t, 15*time.Second, "reads to leave the new master", func() error {
		before := gets(nm)
		for range 20 {
			if _, err := c.Do(ctx, "GET", "after2"); err != nil {
				return err
			}
		}
		if n := gets(nm) - before; n != 0 {
			return fmt.Errorf("the new master served %d of 20 GETs", n)
		}
		return nil
	})
	t.Logf("GETs served by the new master right after the failover: %d", gets(nm)-base)
}

// TestFollowsPastAHungSentinel: the Sentinel the client listens to stops answering
// (SIGSTOP: its connections stay open) and a failover happens through the others; the
// client notices, listens elsewhere and follows.
func TestFollowsPastAHungSentinel(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) { testFollowsPastAHungSentinel(t, proto) })
	}
}

func testFollowsPastAHungSentinel(t *testing.T, proto int) {
	d := sentinelserver.Start(t, sentinelserver.Config{})
	c := sentinelClient(t, d, respire.Options{Protocol: proto, DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
	var hung int
	testkit.WaitWithin(t, 10*time.Second, "the subscription", func() (err error) { hung, err = listener(d, -1); return err })
	d.PauseSentinel(t, hung)
	t.Cleanup(func() { d.ResumeSentinel(t, hung) })
	faultAt := time.Now()
	nm := d.Failover(t)
	testkit.WaitWithin(t, 10*time.Second, "the client to follow", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
			return err
		}
		addr, err := servedBy(c)
		if err == nil && addr != nm.Addr() {
			err = fmt.Errorf("served by %s, want %s", addr, nm.Addr())
		}
		return err
	})
	t.Logf("Sentinel %d hung; the client wrote to the new master %v after the failover began", hung, time.Since(faultAt).Round(time.Millisecond))
}

// TestCachedReadsAcrossFailover: the tracked connection to the old master is closed
// when the Sentinels name a new one, which flushes the client-side cache; reads then
// go to the new master and are tracked there.
func TestCachedReadsAcrossFailover(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1})
	c := sentinelClient(t, d, respire.Options{ClientSideCache: &cache.Options{}})
	ctx := context.Background()
	read := func() (string, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		v, err := c.DoCached(ctx, time.Hour, "GET", "cached")
		if err != nil {
			return "", err
		}
		return v.Text()
	}
	if _, err := c.Do(ctx, "SET", "cached", "before"); err != nil {
		t.Fatal(err)
	}
	if s, err := read(); err != nil || s != "before" {
		t.Fatalf("first read: %q, %v", s, err)
	}
	if s, err := read(); err != nil || s != "before" || c.CacheStats().Hits != 1 {
		t.Fatalf("second read: %q, %v, %+v", s, err, c.CacheStats())
	}

	d.Failover(t)
	testkit.WaitWithin(t, 15*time.Second, "a write on the new master", func() error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := c.Do(ctx, "SET", "cached", "after")
		return err
	})
	testkit.WaitWithin(t, 5*time.Second, "the cached read to see the new master's value", func() error {
		s, err := read()
		if err != nil {
			return err
		}
		if s != "after" {
			return fmt.Errorf("read %q", s)
		}
		return nil
	})
	if st := c.CacheStats(); st.Flushes == 0 {
		t.Fatalf("no flush across the failover: %+v", st)
	}
	// Tracking works on the new master: a change made elsewhere reaches the cache.
	if _, err := c.Do(ctx, "SET", "cached", "later"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitWithin(t, 5*time.Second, "the invalidation from the new master", func() error {
		if s, err := read(); err != nil || s != "later" {
			return fmt.Errorf("read %q, %v", s, err)
		}
		return nil
	})
}

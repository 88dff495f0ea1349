package lock

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// A cut-off kills lock traffic only. 32 goroutines send plain GET/SET on the client
// while 50 renewals, stuck behind CLIENT PAUSE WRITE until their context ends, are
// cut off: no data command fails, every lock cut off reports ErrOwnershipUncertain, and
// the other locks, renewed all along on the lock connection the cut-offs kill (by hand
// and by keep-alives), never lose their leases.
func TestSeverSparesOtherTraffic(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.At(t, srv.Addr(), respire.Options{})
	severStorm(t, c, srv, 50, func(stem string, i int) string { return stem + strconv.Itoa(i) })
}

// The same on a Cluster: every key is on one node, whose shared connection carries the
// data traffic and whose lock connection the cut-offs kill.
func TestSeverSparesOtherTrafficOnCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	const slot = 100
	c := testclient.New(t, respire.Options{Addrs: cl.Seeds(), Cluster: true})
	severStorm(t, c, cl.MasterOf(t, slot).Server, 20, func(stem string, i int) string {
		return clusterserver.KeyIn(slot, stem+strconv.Itoa(i)+":")
	})
}

// severStorm runs the data traffic, the other locks and the cut-offs on c, whose keys
// (key(stem, i)) are all served by srv.
func severStorm(t *testing.T, c *respire.Client, srv *testserver.Server, cutoffs int, key func(stem string, i int) string) {
	const (
		dataWorkers = 32
		renewers    = 8
		keepAlives  = 4
	)
	locks := New(c)
	ctx := context.Background()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var dataOps, dataErrs atomic.Int64
	for w := range dataWorkers {
		wg.Go(func() {
			key := key("data:", w)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				var err error
				if i%2 == 0 {
					_, err = c.Do(dctx, "SET", key, i)
				} else {
					_, err = c.Do(dctx, "GET", key)
				}
				cancel()
				dataOps.Add(1)
				if err != nil && dataErrs.Add(1) <= 3 {
					t.Errorf("data command: %v", err)
				}
			}
		})
	}

	var renewals, renewFailures atomic.Int64
	held := make([]*Lock, 0, renewers+keepAlives)
	for i := range renewers {
		mu, err := locks.Acquire(ctx, key("other:", i), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, mu)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				ok, err := mu.ResetExpiry(rctx, time.Minute)
				cancel()
				renewals.Add(1)
				if (!ok || err != nil) && renewFailures.Add(1) <= 3 {
					t.Errorf("renewal of %s: %v %v", mu.Key(), ok, err)
				}
			}
		})
	}
	for i := range keepAlives {
		// Short leases, renewed every second, so that some renewals meet the cut-offs;
		// a renewal cut off is sent again within its lease, which leaves room for a
		// machine whose cores the rest of `make test` keeps busy (at 800ms, all four
		// leases were lost there together, while the test passed alone).
		mu, ok, err := locks.TryAcquire(ctx, key("kept:", i), 2*time.Second, WithKeepAlive())
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		held = append(held, mu)
	}

	for done, attempt := 0, 0; done < cutoffs; attempt++ {
		mu, err := locks.Acquire(ctx, key("severed:", attempt), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		srv.Do(t, "CLIENT", "PAUSE", "60", "WRITE")
		tctx, cancel := context.WithTimeout(ctx, 15*time.Millisecond)
		ok, err := mu.ResetExpiry(tctx, time.Minute)
		cancel()
		if errors.Is(err, conn.ErrNotSent) {
			continue // the context ended before the renewal was written: nothing to sever
		}
		if ok || !errors.Is(err, ErrOwnershipUncertain) || !errors.Is(err, conn.ErrOutcomeUnknown) {
			t.Fatalf("renewal stuck behind the pause: %v %v", ok, err)
		}
		if cause := context.Cause(mu.KeepAliveContext()); !errors.Is(cause, ErrOwnershipUncertain) {
			t.Fatalf("a lock cut off reports %v", cause)
		}
		done++
	}
	srv.Do(t, "CLIENT", "UNPAUSE")
	close(stop)
	wg.Wait()

	// The cut-offs go on once the renewals returned at their deadlines.
	testkit.WaitFor(t, "the cut-offs", func() bool { return srv.CommandStat(t, "client|kill", "calls") >= cutoffs })
	kills := srv.CommandStat(t, "client|kill", "calls")
	t.Logf("%d data commands, %d renewals of other locks, %d CLIENT KILLs", dataOps.Load(), renewals.Load(), kills)
	if dataErrs.Load() != 0 || renewFailures.Load() != 0 {
		t.Fatalf("%d data commands and %d renewals of other locks failed", dataErrs.Load(), renewFailures.Load())
	}
	if kills < cutoffs {
		t.Fatalf("%d CLIENT KILLs, want at least %d", kills, cutoffs)
	}
	for _, mu := range held {
		if err := mu.KeepAliveContext().Err(); err != nil {
			t.Errorf("%s: context ended: %v", mu.Key(), context.Cause(mu.KeepAliveContext()))
		}
		if got := srv.Do(t, "GET", mu.Key()); got != mu.Token().b {
			t.Errorf("%s: the server holds %q, not the lock's token", mu.Key(), got)
		}
		if out, err := mu.Release(ctx); out != Released || err != nil {
			t.Errorf("%s: release %v %v", mu.Key(), out, err)
		}
	}
}

package coordination

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/testserver"
)

func TestReadersShareWritersExclude(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	ctx := context.Background()
	readers := make([]*RWLease, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			r, ok, err := co.TryAcquireReadLock(ctx, "rw:report", 500*time.Millisecond)
			if err == nil && !ok {
				err = errNotShared
			}
			readers[i], errs[i] = r, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := co.TryAcquireWriteLock(ctx, "rw:report", time.Minute); ok || err != nil {
		t.Fatal("a writer among readers:", ok, err)
	}
	// Expiry frees: no reader renews, and the writer gets in once every lease is over.
	var w *RWLease
	testkit.WaitFor(t, "the readers' leases to expire", func() bool {
		var ok bool
		var err error
		w, ok, err = co.TryAcquireWriteLock(ctx, "rw:report", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if !w.Write() || readers[0].Write() {
		t.Fatal("Write")
	}
	if _, ok, _ := co.TryAcquireReadLock(ctx, "rw:report", time.Minute); ok {
		t.Fatal("a reader beside a writer")
	}
	if _, ok, _ := co.TryAcquireWriteLock(ctx, "rw:report", time.Minute); ok {
		t.Fatal("two writers")
	}
	if ok, err := readers[0].ResetExpiry(ctx, time.Minute); ok || err != nil {
		t.Fatal("an expired reader renewed:", ok, err)
	}
	if ok, err := w.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
		t.Fatal("renewal:", ok, err)
	}
	if out, err := w.Release(ctx); out != lock.Released || err != nil {
		t.Fatal(out, err)
	}
	r, ok, err := co.TryAcquireReadLock(ctx, "rw:report", time.Minute)
	if err != nil || !ok {
		t.Fatal("a reader after the writer's release:", ok, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if srv.Do(t, "EXISTS", "rw:report") != "0" {
		t.Fatal("the key outlived its last lease")
	}
}

var errNotShared = errors.New("a reader was refused beside readers")

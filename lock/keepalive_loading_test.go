package lock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A renewal refused with LOADING (a restarted server reading its AOF, which may hold
// the lease) is tried again while the lease lasts: the lock survives a short load and
// is lost to expiry, not to the refusal, when the load outlasts the lease.
func TestKeepAliveRetriesLoading(t *testing.T) {
	const lease = 10 * time.Second
	cases := []struct {
		name    string
		loading int           // renewals refused before the server answers
		check   time.Duration // when to look, from the acquisition
		cause   error         // nil: the keep-alive still runs
	}{
		{name: "LOADING then OK keeps the lock", loading: 3, check: lease + lease/4},
		{name: "LOADING past the lease loses it", loading: 1 << 30, check: lease + time.Second, cause: ErrLeaseExpired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				f, c := fakeClient(t)
				start := time.Now()
				mu, err := New(c).Acquire(ctx, "ka", lease)
				if err != nil {
					t.Fatal(err)
				}
				defer mu.Close()
				f.mu.Lock()
				f.loading = tc.loading
				f.mu.Unlock()
				ka, err := mu.KeepAlive(ctx)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(tc.check - time.Since(start))
				synctest.Wait()
				cause := context.Cause(ka.Context())
				if tc.cause == nil {
					if cause != nil {
						t.Fatalf("the keep-alive ended: %v", cause)
					}
					if got := f.Renewals(); len(got) == 0 || got[0].Sub(start) <= lease/2 {
						t.Fatalf("renewals at %v; want the first after the refusals at %v", since(start, got), lease/2)
					}
					if !f.held("ka") {
						t.Fatal("the lease is gone though the keep-alive runs")
					}
					return
				}
				if !errors.Is(cause, tc.cause) {
					t.Fatalf("the keep-alive ended with %v; want %v", cause, tc.cause)
				}
				if n := len(f.Renewals()); n != 0 {
					t.Fatalf("%d renewals went through a loading server", n)
				}
			})
		})
	}
}

package lock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// A managed release goes on the lock connection only when it may be cut off while
// that connection is live: when its caller can cancel it and it has no deadline.
// Without cancellation or with a deadline it is never cut off on a live connection,
// and joins the shared connection's batches instead of splitting the lock's cycle
// over two connections; the lock connection is then never dialled. Before, every
// release dialled and used the lock connection.
func TestReleaseLane(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tt := range []struct {
		name     string
		release  func(m *Lock) (ReleaseOutcome, error)
		lockLane bool
	}{
		{"uncancellable", func(m *Lock) (ReleaseOutcome, error) { return m.Release(context.Background()) }, false},
		{"deadline", func(m *Lock) (ReleaseOutcome, error) {
			return m.ReleaseBy(cancellable, time.Now().Add(time.Minute))
		}, false},
		{"cancellable", func(m *Lock) (ReleaseOutcome, error) { return m.Release(cancellable) }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := "lane-" + tt.name
			locks := New(testclient.At(t, srv.Addr(), respire.Options{ClientName: name}))
			key := "lane:" + tt.name
			m, ok, err := locks.TryAcquire(context.Background(), key, time.Minute)
			if !ok || err != nil {
				t.Fatalf("TryAcquire: %v, %v", ok, err)
			}
			if out, err := tt.release(m); out != Released || err != nil {
				t.Fatalf("release: %v, %v", out, err)
			}
			want := 1 // the shared connection
			if tt.lockLane {
				want++
			}
			if n := strings.Count(srv.Do(t, "CLIENT", "LIST"), "name="+name+" "); n != want {
				t.Errorf("%d connections to the server, want %d", n, want)
			}
			if srv.Do(t, "EXISTS", key) != "0" {
				t.Error("the release left the key")
			}
		})
	}
}

package route

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/internal/testkit"
)

// pipes hands out a fresh scripted connection (internal/testkit) for each dial and
// runs script on its server end, so a test sees which dial served what.
type pipes struct {
	t      *testing.T
	script func(dial int, s *testkit.Server)
	mu     sync.Mutex
	dials  int
	wg     sync.WaitGroup
}

func (p *pipes) dial(context.Context, string, string) (net.Conn, error) {
	cli, srv := testkit.Pipe(p.t)
	p.mu.Lock()
	n := p.dials
	p.dials++
	p.mu.Unlock()
	p.wg.Go(func() { p.script(n, srv) })
	return cli, nil
}

// One server retries a command once on a new connection when that is safe: a read
// whose connection broke after it was written, never a write (its outcome is unknown).
func TestStandaloneRetriesOnlyWhatIsSafe(t *testing.T) {
	for _, tt := range []struct {
		name      string
		args      []any
		wantDials int
		wantErr   error
	}{
		{"read", []any{"GET", "k"}, 2, nil},
		{"write", []any{"SET", "k", "v"}, 1, conn.ErrOutcomeUnknown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &pipes{t: t, script: func(dial int, s *testkit.Server) {
				s.HelloRESP3()
				s.Read() // the command
				if dial == 0 {
					s.Close() // lost after it was written
					return
				}
				s.Reply("+v\r\n")
			}}
			r, err := NewStandalone("10.0.0.9:6379", Options{Conn: conn.Options{Dialer: p.dial}, PoolSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			info, _ := command.LookupArgs(tt.args)
			v, _, err := r.Do(t.Context(), &Cmd{Args: tt.args, Info: info}, &Call{})
			r.Close()
			p.wg.Wait()
			switch {
			case tt.wantErr == nil && (err != nil || v.String() != `"v"`):
				t.Errorf("Do = %v, %v; want the second connection's reply", v, err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("Do = %v, %v; want %v", v, err, tt.wantErr)
			}
			if p.dials != tt.wantDials {
				t.Errorf("%d dials, want %d", p.dials, tt.wantDials)
			}
		})
	}
}

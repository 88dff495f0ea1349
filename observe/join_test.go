package observe

import (
	"context"
	"fmt"
	"testing"
)

// logObserver appends "name:event" to a shared log for each event, and tags the
// context CommandStart and BatchStart return with its name.
type logObserver struct {
	Base
	name string
	log  *[]string
}

type tagKey struct{}

func (o logObserver) add(event string) { *o.log = append(*o.log, o.name+":"+event) }

func (o logObserver) CommandStart(ctx context.Context, e CommandStart) context.Context {
	o.add("start " + e.Name)
	prev, _ := ctx.Value(tagKey{}).(string)
	return context.WithValue(ctx, tagKey{}, prev+o.name)
}

func (o logObserver) CommandEnd(ctx context.Context, e CommandEnd) {
	o.add(fmt.Sprintf("end %s ctx=%v", e.Name, ctx.Value(tagKey{})))
}

func (o logObserver) BatchStart(ctx context.Context, e BatchStart) context.Context {
	o.add("batch " + e.Kind.String())
	prev, _ := ctx.Value(tagKey{}).(string)
	return context.WithValue(ctx, tagKey{}, prev+o.name)
}

func (o logObserver) BatchEnd(ctx context.Context, e BatchEnd) {
	o.add(fmt.Sprintf("batch end ctx=%v", ctx.Value(tagKey{})))
}
func (o logObserver) Conn(e Conn)                    { o.add("conn " + e.Kind.String()) }
func (o logObserver) PoolWait(PoolWait)              { o.add("pool wait") }
func (o logObserver) Redirect(e Redirect)            { o.add("redirect " + e.Kind.String()) }
func (o logObserver) Topology(Topology)              { o.add("topology") }
func (o logObserver) Failover(Failover)              { o.add("failover") }
func (o logObserver) Cutoff(Cutoff)                  { o.add("cutoff") }
func (o logObserver) Cache(e Cache)                  { o.add("cache " + e.Kind.String()) }
func (o logObserver) Lock(_ context.Context, e Lock) { o.add("lock " + e.Kind.String()) }

func TestJoinNone(t *testing.T) {
	if got := Join(); got != nil {
		t.Errorf("Join() = %v, want nil", got)
	}
	if got := Join(nil, nil); got != nil {
		t.Errorf("Join(nil, nil) = %v, want nil", got)
	}
}

func TestJoinOne(t *testing.T) {
	var log []string
	a := logObserver{name: "a", log: &log}
	if got := Join(nil, a, nil); got != Observer(a) {
		t.Errorf("Join(nil, a, nil) = %#v, want a itself", got)
	}
}

// Every event reaches each observer, in the order given, and the contexts the starts
// return are chained, so the second observer's span is a child of the first's.
func TestJoinFansOut(t *testing.T) {
	var log []string
	a, b, c := logObserver{name: "a", log: &log}, logObserver{name: "b", log: &log}, logObserver{name: "c", log: &log}
	m := Join(a, nil, Join(b, c)) // a nested Join is flattened
	if n := len(m.(joined)); n != 3 {
		t.Fatalf("Join of a and Join(b, c) holds %d observers, want 3", n)
	}
	ctx := m.CommandStart(context.Background(), CommandStart{Name: "GET"})
	m.CommandEnd(ctx, CommandEnd{Name: "GET"})
	ctx = m.BatchStart(context.Background(), BatchStart{Kind: Pipeline})
	m.BatchEnd(ctx, BatchEnd{Kind: Pipeline})
	m.Conn(Conn{Kind: ConnLost})
	m.PoolWait(PoolWait{})
	m.Redirect(Redirect{Kind: Ask})
	m.Topology(Topology{})
	m.Failover(Failover{})
	m.Cutoff(Cutoff{})
	m.Cache(Cache{Kind: CacheFlush})
	m.Lock(context.Background(), Lock{Kind: LockLost})

	var want []string
	for _, ev := range []string{"start GET", "end GET ctx=abc", "batch pipeline", "batch end ctx=abc",
		"conn lost", "pool wait", "redirect ask", "topology", "failover", "cutoff", "cache flush", "lock lost"} {
		for _, name := range []string{"a", "b", "c"} {
			want = append(want, name+":"+ev)
		}
	}
	if fmt.Sprint(log) != fmt.Sprint(want) {
		t.Errorf("events seen:\n%v\nwant:\n%v", log, want)
	}
}

package respireotel

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/test/sentinelserver"
)

// A Sentinel failover the client follows is counted in respire.sentinel.failovers, and
// the commands after it have spans naming the new master, from their start on.
func TestFailover(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1})
	h, sampler := newSampledHarness(t)
	c := h.client(t, respire.Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName()})
	ctx := context.Background()
	if _, err := c.Do(ctx, "SET", "otel:failover", "before"); err != nil {
		t.Fatal(err)
	}
	master := masterKey.String(d.MasterName())
	before := h.sum(t, "respire.sentinel.failovers", master)

	next := d.Failover(t)
	testkit.WaitWithin(t, 30*time.Second, "the client following the failover", func() bool {
		return h.sum(t, "respire.sentinel.failovers", master) > before
	})
	h.spans.Reset()
	testkit.WaitWithin(t, 30*time.Second, "a SET on the new master", func() bool {
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := c.Do(tctx, "SET", "otel:failover", "after")
		return err == nil
	})
	sets := h.ended("SET")
	if len(sets) == 0 {
		t.Fatal("no SET span after the failover")
	}
	last := sets[len(sets)-1]
	if v, _ := attr(last, semconv.ServerPortKey); v.AsInt64() != int64(next.Port()) {
		t.Errorf("SET after the failover went to port %d, the new master is on %d", v.AsInt64(), next.Port())
	}
	// The failover was seen before the last SET started: it started for the new master.
	kv, _ := sampler.attrs("SET")
	if !has(attribute.NewSet(kv...), []attribute.KeyValue{semconv.ServerPort(next.Port())}) {
		t.Errorf("SET after the failover started with %v, the new master is on %d", kv, next.Port())
	}
}

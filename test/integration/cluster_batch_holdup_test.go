//go:build unix

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/test/clusterserver"
)

// A Cluster pipeline's caller reads the replies of the part it sends last itself (on a
// quiet connection) before it waits for the others, which the connections' readers
// collect: while one of its nodes does not answer, whichever part that node has, the
// other nodes' traffic waits for nobody. Node x is stopped (SIGSTOP) while a pipeline of
// a key on x and one on y is in flight, in both orders; other callers' GETs on y must
// answer meanwhile, and the pipeline once x resumes.
func TestClusterPipelineHoldsUpNoOtherNode(t *testing.T) {
	// A node timeout far past the pause, so that the cluster does not fail x over.
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true, NodeTimeout: time.Minute})
	c := clusterClient(t, cl, respire.Options{})
	ctx := clusterTestContext(t)
	masters := cl.Masters(t)
	x, y := masters[0], masters[1]
	var onX, onY string
	for _, k := range clusterserver.SampleKeys(64, "holdup:") {
		switch n := cl.MasterOf(t, cluster.Slot(k)); {
		case n.ID == x.ID && onX == "":
			onX = k
		case n.ID == y.ID && onY == "":
			onY = k
		}
	}
	if onX == "" || onY == "" {
		t.Fatal("no sample key on one of the two masters")
	}
	for _, k := range []string{onX, onY} {
		if _, err := c.Do(ctx, "SET", k, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, order := range [][]string{{onX, onY}, {onY, onX}} {
		x.Pause(t)
		done := make(chan error, 1)
		go func() {
			p := c.Pipeline()
			for _, k := range order {
				p.Do("GET", k)
			}
			res, err := p.Exec(ctx)
			for i, r := range res {
				if s, _ := r.Value.Text(); err == nil && (r.Err != nil || s != order[i]) {
					err = r.Err
				}
			}
			done <- err
		}()
		for range 20 {
			// Far below the pause, which lasts until every one of them has answered.
			other, cancel := context.WithTimeout(ctx, 10*time.Second)
			v, err := c.Do(other, "GET", onY)
			cancel()
			if s, _ := v.Text(); err != nil || s != onY {
				x.Resume(t)
				t.Fatalf("order %q: another caller's GET on the answering node: %v %v", order, v, err)
			}
		}
		x.Resume(t)
		if err := <-done; err != nil {
			t.Fatalf("order %q: the pipeline: %v", order, err)
		}
	}
}

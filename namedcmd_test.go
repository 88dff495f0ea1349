package respire

import (
	"context"
	"testing"
	"time"

	"github.com/respire/respire/cache"
	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// namedGet is GET as a typed command sends it: a name that carries its table entry.
func namedGet(t *testing.T) *argkind.Name {
	info, ok := command.Lookup("get")
	if !ok {
		t.Fatal("GET is not in the table")
	}
	return &argkind.Name{Text: "GET", Entry: info}
}

// A command whose name carries its entry (*argkind.Name, as typed commands send it)
// runs on every path as its text would: Do, DoCached, DoMulti, a Pipeline, a
// transaction, a Cluster client with a key prefix, and an observer names it by its
// entry.
func TestNamedCommandOnEveryPath(t *testing.T) {
	ctx := context.Background()
	srv := testserver.Start(t, testserver.Config{})
	srv.Do(t, "SET", "app:k", "v")
	get := namedGet(t)
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, KeyPrefix: "app:", Observer: rec,
		ClientSideCache: &cache.Options{}})

	want := func(what string, s string, err error) {
		t.Helper()
		if err != nil || s != "v" {
			t.Errorf("%s: %q, %v; want v", what, s, err)
		}
	}
	v, err := c.Do(ctx, get, "k")
	want("Do", text(v), err)
	if e := rec.lastEnd(t); e.Name != "GET" {
		t.Errorf("the observer named it %q, want GET", e.Name)
	}
	for range 2 {
		v, err = c.DoCached(ctx, time.Minute, get, "k")
		want("DoCached", text(v), err)
	}
	if st := c.CacheStats(); st.Hits != 1 {
		t.Errorf("cache stats %+v; want the second DoCached a hit", st)
	}
	res, err := c.DoMulti(ctx, []any{get, "k"}, []any{"GET", "k"})
	if err == nil {
		want("DoMulti", text(res[0].Value), res[0].Err)
	} else {
		t.Errorf("DoMulti: %v", err)
	}
	res, err = c.Pipeline().Do(get, "k").Exec(ctx)
	if err == nil {
		want("Pipeline", text(res[0].Value), res[0].Err)
	} else {
		t.Errorf("Pipeline: %v", err)
	}
	err = c.Watch(ctx, func(tx *Tx) error {
		v, err := tx.Do(ctx, get, "k")
		want("Tx.Do", text(v), err)
		res, err := tx.Exec(ctx, []any{get, "k"})
		if err != nil {
			return err
		}
		want("Tx.Exec", text(res[0].Value), res[0].Err)
		return nil
	}, "k")
	if err != nil {
		t.Errorf("Watch: %v", err)
	}

	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	cc := newClientT(t, Options{Addrs: cl.Seeds(), Cluster: true, KeyPrefix: "app:"})
	for _, key := range []string{"k", "other", "{x}y"} {
		if _, err := cc.Do(ctx, "SET", key, "v"); err != nil {
			t.Fatal(err)
		}
		v, err := cc.Do(ctx, get, key)
		want("Cluster Do "+key, text(v), err)
	}
	res, err = cc.DoMulti(ctx, []any{get, "k"}, []any{get, "other"})
	if err != nil {
		t.Fatalf("Cluster DoMulti: %v", err)
	}
	want("Cluster DoMulti", text(res[1].Value), res[1].Err)
}

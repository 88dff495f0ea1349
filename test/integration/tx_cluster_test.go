package integration

import (
	"context"
	"errors"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/test/clusterserver"
)

// A transaction bound to a node whose slot then moves fails with ErrTxSlotMoved, from
// Do (the read is answered MOVED) and from Exec (the queued write is answered MOVED and
// EXEC aborted): the caller never gets a bare redirection, and nothing ran.
func TestClusterTxSlotMoved(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true, Masters: 2})
	ctx := clusterTestContext(t)
	c := clusterClient(t, cl, respire.Options{})
	other := func(slot int) *clusterserver.Node {
		src := cl.MasterOf(t, slot)
		for _, m := range cl.Masters(t) {
			if m.ID != src.ID {
				return m
			}
		}
		t.Fatal("one master only")
		return nil
	}
	cases := []struct {
		name string
		slot int
		run  func(tx *respire.Tx, key string) error
	}{
		{"Do", 1000, func(tx *respire.Tx, key string) error {
			_, err := tx.Do(ctx, "GET", key)
			return err
		}},
		{"Exec", 2000, func(tx *respire.Tx, key string) error {
			_, err := tx.Exec(ctx, []any{"SET", key, "x"})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := clusterserver.KeyIn(tc.slot, "txmoved")
			if _, err := c.Do(ctx, "SET", key, "before"); err != nil {
				t.Fatal(err)
			}
			err := c.Watch(ctx, func(tx *respire.Tx) error {
				if _, err := tx.Do(ctx, "GET", key); err != nil {
					return err
				}
				cl.MigrateSlot(t, tc.slot, other(tc.slot))
				return tc.run(tx, key)
			}, key)
			if !errors.Is(err, respire.ErrTxSlotMoved) {
				t.Fatalf("%s after the slot moved: %v; want ErrTxSlotMoved", tc.name, err)
			}
			if v, err := c.Do(context.Background(), "GET", key); err != nil || v.String() != `"before"` {
				t.Errorf("after the failed transaction %s = %v, %v; want it unchanged", key, v, err)
			}
		})
	}
}

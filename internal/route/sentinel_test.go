package route

import (
	"errors"
	"fmt"
	"testing"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
)

const (
	masterA  = "10.0.1.1:6379"
	masterB  = "10.0.1.2:6379"
	replicaR = "10.0.1.3:6379"
)

// newSentinelForTest is a Sentinel router without a Monitor: the test calls switchTo
// and setReplicas as the Monitor would. ROLE answers as the address says.
func newSentinelForTest(t *testing.T) (*Router, *sentinelRouter, *fakeNodes) {
	nodes := newFakeNodes(t, func(addr string, args []string) string {
		switch {
		case args[0] == "ROLE" && addr == replicaR:
			return "*5\r\n$5\r\nslave\r\n$8\r\n10.0.1.1\r\n:6379\r\n$9\r\nconnected\r\n:0\r\n"
		case args[0] == "ROLE":
			return "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"
		}
		return fmt.Sprintf("$%d\r\n%s\r\n", len(addr), addr) // who answered
	})
	o := nodes.options()
	o.ReplicaReads = true
	r := &sentinelRouter{o: o, master: "m", lent: map[*conn.Conn]*endpoint{}, dialled: map[*conn.Conn]*endpoint{}}
	return &Router{d: &one{backend: r, replicaReads: true}}, r, nodes
}

// A failover retires everything of the old master: its shared connection, the
// dedicated connections lent out (their release closes them) and the connections
// dialled for subscriptions; what comes after goes to the new master. Read-only
// commands go to the replica while there is one, else to the master.
func TestSentinelFailoverRetiresTheOldMaster(t *testing.T) {
	router, r, nodes := newSentinelForTest(t)
	defer nodes.close()
	defer router.Close()
	ctx := t.Context()
	r.switchTo(masterA)

	sharedA, err := router.Shared(ctx, Any())
	if err != nil || sharedA.Addr() != masterA {
		t.Fatalf("Shared = %v, %v; want a connection to %s", sharedA, err, masterA)
	}
	lent, err := router.Dedicated(ctx, Any())
	if err != nil {
		t.Fatal(err)
	}
	sub, err := router.Dial(ctx, Any(), nil)
	if err != nil {
		t.Fatal(err)
	}

	r.switchTo(masterB)
	for name, cn := range map[string]*conn.Conn{"shared": sharedA, "lent": lent, "dialled": sub} {
		if Alive(cn) {
			t.Errorf("the old master's %s connection is still open", name)
		}
	}
	router.Release(lent, true) // into the retired pool: closed, no panic
	if cn, err := router.Shared(ctx, Any()); err != nil || cn.Addr() != masterB {
		t.Errorf("after the switch: shared %v, %v; want a connection to %s", cn, err, masterB)
	}
	if cn, err := router.Dedicated(ctx, Any()); err != nil || cn.Addr() != masterB {
		t.Errorf("after the switch: dedicated %v, %v; want a connection to %s", cn, err, masterB)
	} else {
		router.Release(cn, true)
	}

	readOnly := Target{Slot: AnySlot, Replica: true}
	if cn, err := router.Shared(ctx, readOnly); err != nil || cn.Addr() != masterB {
		t.Errorf("a read without replicas went to %v (%v), want the master", cn, err)
	}
	r.setReplicas([]string{replicaR})
	if cn, err := router.Shared(ctx, readOnly); err != nil || cn.Addr() != replicaR {
		t.Errorf("a read went to %v (%v), want the replica %s", cn, err, replicaR)
	}
	v, _, err := router.Do(ctx, get("k"), &Call{})
	if s, _ := v.Text(); err != nil || s != replicaR {
		t.Errorf("GET answered %q, %v; want the replica's answer", s, err)
	}

	router.Close()
	if _, err := router.Dedicated(ctx, Any()); !errors.Is(err, ErrClosed) {
		t.Errorf("Dedicated after Close: %v, want ErrClosed", err)
	}
	if _, err := router.Dial(ctx, Any(), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Dial after Close: %v, want ErrClosed", err)
	}
}

// The router takes whether a command is read-only from the entry its caller gives
// (Cmd.Info, from the client's table and what COMMAND INFO taught it), never from a
// table of its own: MYGET, GET renamed on the server, is a read the default table does
// not know, and goes to the replica as the caller's entry says; without an entry the
// same command is not taken for a read.
func TestReplicaReadsFollowTheCallersEntry(t *testing.T) {
	router, r, nodes := newSentinelForTest(t)
	defer nodes.close()
	defer router.Close()
	ctx := t.Context()
	r.switchTo(masterA)
	r.setReplicas([]string{replicaR})

	learned := &command.Info{Name: "myget", Arity: 2, Flags: command.FlagReadonly, KeySpecs: get("k").Info.KeySpecs}
	for _, tc := range []struct {
		info *command.Info
		want string
	}{{learned, replicaR}, {nil, masterA}} {
		cmd := &Cmd{Args: []any{"MYGET", "k"}, Info: tc.info}
		if got := router.AddrOf(cmd); got != tc.want {
			t.Errorf("AddrOf(MYGET, entry %v) = %q, want %q", tc.info != nil, got, tc.want)
		}
		v, _, err := router.Do(ctx, cmd, &Call{})
		if s, _ := v.Text(); err != nil || s != tc.want {
			t.Errorf("MYGET (entry %v) answered by %q, %v; want %s", tc.info != nil, s, err, tc.want)
		}
	}
}

package cmds

import (
	"context"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/test/sentinelserver"
)

// TestSentinel runs typed commands through a client that finds its master by
// Sentinel, and a typed SENTINEL command on a Sentinel itself.
func TestSentinel(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := respire.NewClient(ctx, respire.Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := HSet("sen:h", FieldValue{"f", "v"}).Do(ctx, c); err != nil {
		t.Fatal(err)
	}
	if m, err := HGetAll("sen:h").Do(ctx, c); err != nil || m["f"] != "v" {
		t.Fatalf("HGETALL through Sentinel: %v %v", m, err)
	}

	sen, err := respire.NewClient(ctx, respire.Options{Addrs: d.SentinelAddrs()[:1]})
	if err != nil {
		t.Fatal(err)
	}
	defer sen.Close()
	addr, err := SentinelGetMasterAddrByName(d.MasterName()).Do(ctx, sen)
	if err != nil || len(addr) != 2 || addr[0]+":"+addr[1] != d.MasterAddr(t) {
		t.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %v %v, want %s", addr, err, d.MasterAddr(t))
	}
	masters, err := SentinelMasters().Do(ctx, sen)
	if err != nil || len(masters) != 1 || masters[0]["name"] != d.MasterName() {
		t.Errorf("SENTINEL MASTERS: %v %v", masters, err)
	}
	master, err := SentinelMaster(d.MasterName()).Do(ctx, sen)
	if err != nil || master["name"] != d.MasterName() {
		t.Errorf("SENTINEL MASTER: %v %v", master, err)
	}
}

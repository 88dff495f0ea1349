package cluster

import (
	"errors"
	"testing"
)

// FuzzParseSlots feeds CLUSTER SLOTS replies, real and damaged: ParseSlots never
// panics, fails only with ErrTopology, and what it accepts covers at most every slot
// with non-empty addresses.
func FuzzParseSlots(f *testing.F) {
	f.Add([]byte("*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"))
	f.Add([]byte("*2\r\n*4\r\n:0\r\n:8191\r\n*2\r\n$0\r\n\r\n:7000\r\n*2\r\n$1\r\n?\r\n:7001\r\n" +
		"*3\r\n:8192\r\n:16383\r\n*3\r\n$3\r\n::1\r\n:7002\r\n_\r\n"))
	f.Add([]byte("*1\r\n*3\r\n:100\r\n:5\r\n*2\r\n+h\r\n:1\r\n"))
	f.Add([]byte("*2\r\n*3\r\n:0\r\n:10\r\n*2\r\n+a\r\n:1\r\n*3\r\n:5\r\n:20\r\n*2\r\n+b\r\n:2\r\n"))
	f.Add([]byte("*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n+h\r\n:70000\r\n"))
	f.Fuzz(func(t *testing.T, wire []byte) {
		v, err := readValue(wire)
		if err != nil {
			return
		}
		top, err := ParseSlots(v, "h:1")
		checkParsedTopology(t, top, err)
	})
}

// checkParsedTopology is what the topology fuzz targets require of a parse: failure
// only with ErrTopology, and a topology covering at most every slot, with addresses.
func checkParsedTopology(t *testing.T, top *Topology, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrTopology) {
			t.Fatalf("error %v does not match ErrTopology", err)
		}
		return
	}
	if top.Covered() > SlotCount {
		t.Fatalf("%d slots covered", top.Covered())
	}
	for _, a := range top.Addrs() {
		if a == "" {
			t.Fatal("empty address")
		}
	}
}

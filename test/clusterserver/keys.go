package clusterserver

import (
	"strconv"

	"github.com/respire/respire/cluster"
)

// KeyIn returns a key with the given stem that hashes to slot, for a test that needs
// keys on a chosen node or slot.
func KeyIn(slot int, stem string) string {
	for i := 0; ; i++ {
		k := stem + strconv.Itoa(i)
		if cluster.Slot(k) == slot {
			return k
		}
	}
}

// SampleKeys returns n keys spread evenly over the slot space, so every master gets
// its share.
func SampleKeys(n int, stem string) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = KeyIn(i*cluster.SlotCount/n, stem)
	}
	return keys
}

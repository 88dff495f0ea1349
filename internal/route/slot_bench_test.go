package route

import (
	"testing"

	"github.com/respire/respire/internal/command"
)

// BenchmarkSlotOf is what a Cluster works out per command before its table look-up:
// the key positions from the command's entry, and the slot of the key.
func BenchmarkSlotOf(b *testing.B) {
	args := []any{"GET", "respbench:spread:1234"}
	info, ok := command.LookupArgs(args)
	if !ok {
		b.Fatal("GET is not in the table")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SlotOf(info, args, "", nil); err != nil {
			b.Fatal(err)
		}
	}
}

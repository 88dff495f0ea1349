package route

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

// SlotOf returns the hash slot of a command's keys (AnySlot when it has none), or an
// error matching ErrCrossSlot when they hash to different slots. info is the
// command's entry (nil: a command without keys), which for a command the table lacks
// the server described. prefix is the client's key prefix and prefixed the positions
// it applies to (shard channels, which also pick the slot, do not get it). It reads
// args without retaining them.
func SlotOf(info *command.Info, args []any, prefix string, prefixed []int) (int, error) {
	if info == nil {
		return AnySlot, nil
	}
	if info.OneKeyFirst() {
		if len(args) < 2 {
			return AnySlot, nil // refused by the server
		}
		p := ""
		if prefix != "" && slices.Contains(prefixed, 1) {
			p = prefix
		}
		return argSlot(p, args[1]), nil
	}
	var buf [8]int
	slot := AnySlot
	for _, i := range command.InfoKeyIndexes(info, args, buf[:0]) {
		p := ""
		if prefix != "" && slices.Contains(prefixed, i) {
			p = prefix
		}
		s := argSlot(p, args[i])
		switch {
		case slot == AnySlot:
			slot = s
		case s != slot:
			return AnySlot, crossSlotError(args[0], slot, s)
		}
	}
	return slot, nil
}

// keySlot is the slot of a key the client's own methods take as a string.
func keySlot(prefix, key string) int { return cluster.PrefixedSlot(prefix, key) }

// argSlot is the slot of one key argument, as the server will read its text.
func argSlot(prefix string, a any) int {
	if k, ok := argkind.Text(a); ok {
		return cluster.PrefixedSlot(prefix, k)
	}
	var scratch [48]byte
	enc, err := resp.AppendArg(scratch[:0], 0, a)
	if err != nil {
		return 0 // refused when the command is encoded
	}
	// Strip the bulk header "$n\r\n" and the trailing CRLF.
	if i := bytes.IndexByte(enc, '\n'); i >= 0 && len(enc) >= i+3 {
		enc = enc[i+1 : len(enc)-2]
	}
	return cluster.PrefixedSlot(prefix, enc)
}

// crossSlotError names the command and two of its slots. It copies the name, so the
// caller's arguments do not escape.
func crossSlotError(name any, a, b int) error {
	return fmt.Errorf("%w: the keys of %s hash to slots %d and %d; use a {hash tag} to keep them together", ErrCrossSlot, upperName(name), a, b)
}

// upperName is a copy of a command name in upper case for an error message, "command"
// when it is not text. It copies before converting, so that the caller's argument
// (whose text argkind.Text shares for a []byte kind) does not escape.
func upperName(a any) string {
	if s, ok := argkind.Text(a); ok {
		return string(bytes.ToUpper([]byte(s)))
	}
	return "command"
}

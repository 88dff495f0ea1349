package history

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// CheckTokensIncrease checks the fencing tokens of successful acquisitions
// (operations of the given kind, outcome OK, Output an int64 token): an
// acquisition that began after another one returned must carry a strictly
// greater token. Concurrent acquisitions may be ordered either way.
func CheckTokensIncrease(ops []Op, kind string) []Violation {
	var acq []Op
	for _, op := range ops {
		if op.Kind == kind && op.Outcome == OK {
			acq = append(acq, op)
		}
	}
	byReturn := slices.Clone(acq)
	slices.SortFunc(byReturn, func(a, b Op) int { return cmp.Compare(a.Return, b.Return) })
	var found []Violation
	// acq is in call order: walk it, folding in every acquisition that
	// returned strictly before the current one's call.
	var best Op
	seen := false
	j := 0
	for _, op := range acq {
		for j < len(byReturn) && byReturn[j].Return < op.Call {
			if !seen || byReturn[j].Output.(int64) > best.Output.(int64) {
				best, seen = byReturn[j], true
			}
			j++
		}
		if seen && op.Output.(int64) <= best.Output.(int64) {
			found = append(found, Violation{Checker: "tokens-increase", Detail: fmt.Sprintf("token %d of %v is not above token %d of %v, which returned before it began", op.Output, op, best.Output, best)})
		}
	}
	return found
}

// FenceWrite is the input of a write to a fenced resource: the writer's token
// and the value it writes.
type FenceWrite struct {
	Token int64
	Value string
}

// FenceRead is the input of a read of a fenced resource's value.
type FenceRead struct{}

// Operation kinds CheckFencedRegister reads. A "fenced-write" has Input
// FenceWrite and, when OK, Output true if accepted or false if refused as
// stale; a "fenced-read" has Input FenceRead and Output the string read ("" for
// a missing key).
const (
	KindFencedWrite = "fenced-write"
	KindFencedRead  = "fenced-read"
)

type fenceState struct {
	highest int64
	value   string
}

// fencedModel is the sequential specification of a fenced register: a write
// runs if its token is at least the highest accepted, which it then becomes.
var fencedModel = porcupine.Model{
	Init: func() any { return fenceState{} },
	Step: func(state, input, output any) (bool, any) {
		s := state.(fenceState)
		switch in := input.(type) {
		case FenceWrite:
			accepted := in.Token >= s.highest
			if output == nil { // unknown outcome: either is allowed
				if accepted {
					return true, fenceState{highest: in.Token, value: in.Value}
				}
				return true, s
			}
			if output.(bool) != accepted {
				return false, s
			}
			if accepted {
				return true, fenceState{highest: in.Token, value: in.Value}
			}
			return true, s
		case FenceRead:
			return output == nil || output.(string) == s.value, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string { return fmt.Sprintf("%v -> %v", input, output) },
}

// CheckFencedRegister checks that the fenced-write and fenced-read operations
// are linearizable against a register that refuses a token below the highest
// it accepted: no stale write accepted, no fresh write refused, no read of a
// value that was never the register's. Operations that Failed are left out
// (they did not run); Unknown ones may take effect at any instant after their
// call. The check gives up after timeout and reports that as a violation, so
// keep histories to a few thousand operations.
func CheckFencedRegister(ops []Op, timeout time.Duration) []Violation {
	var hist []porcupine.Operation
	for _, op := range ops {
		if op.Kind != KindFencedWrite && op.Kind != KindFencedRead {
			continue
		}
		po := porcupine.Operation{ClientId: op.Client, Input: op.Input, Call: int64(op.Call), Return: int64(op.Return)}
		switch op.Outcome {
		case Failed:
			continue
		case Unknown:
			// It may land any time after its call, or never.
			po.Output, po.Return = nil, int64(time.Duration(1<<62))
		default:
			po.Output = op.Output
		}
		hist = append(hist, po)
	}
	switch porcupine.CheckOperationsTimeout(fencedModel, hist, timeout) {
	case porcupine.Ok:
		return nil
	case porcupine.Illegal:
		return []Violation{{Checker: "fenced-register", Detail: fmt.Sprintf("%d operations are not linearizable as a fenced register (stale write accepted, fresh write refused, or a read of a value never current)", len(hist))}}
	default:
		return []Violation{{Checker: "fenced-register", Detail: fmt.Sprintf("porcupine gave no answer within %v for %d operations", timeout, len(hist))}}
	}
}

// CheckStaleRefused is the fence's promise without a model: once a write with
// token t has been accepted (returned OK with Output true), a write with a
// lower token that began after that must not be accepted.
func CheckStaleRefused(ops []Op) []Violation {
	var writes []Op
	for _, op := range ops {
		if op.Kind == KindFencedWrite && op.Outcome == OK {
			writes = append(writes, op)
		}
	}
	var found []Violation
	for _, w := range writes {
		if !w.Output.(bool) {
			continue
		}
		for _, later := range writes {
			if later.Call > w.Return && later.Output.(bool) && later.Input.(FenceWrite).Token < w.Input.(FenceWrite).Token {
				found = append(found, Violation{Checker: "stale-refused", Detail: fmt.Sprintf("%v accepted after %v", later, w)})
			}
		}
	}
	return found
}

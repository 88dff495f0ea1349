package history

import (
	"fmt"
	"slices"
)

// CheckOwnReplies finds replies handed to the wrong caller. Each operation's
// Input is what its request carried and, when OK, its Output must be what the
// request asked for back: scenarios send a unique id (ECHO id, or SET k id then
// GET k on a key no one else writes) and record the id as Input, the reply as
// Output. Operations that failed or have an unknown outcome carry no reply.
// kinds limits the check to those operation kinds (all when empty).
func CheckOwnReplies(ops []Op, kinds ...string) []Violation {
	var found []Violation
	for _, op := range ops {
		if op.Outcome != OK || !kindIn(op.Kind, kinds) {
			continue
		}
		if fmt.Sprint(op.Output) != fmt.Sprint(op.Input) {
			found = append(found, Violation{Checker: "own-replies", Detail: fmt.Sprintf("%v got a reply carrying %v", op, op.Output)})
		}
	}
	return found
}

func kindIn(kind string, kinds []string) bool {
	return len(kinds) == 0 || slices.Contains(kinds, kind)
}

// Element is the input of an acknowledged-write check: a unique value added
// to a collection (RPUSH, SADD, XADD, a fenced RPUSH).
type Element struct {
	Key   string
	Value string
}

// CheckNoLostWrites finds acknowledged additions missing from the final state:
// every operation of the given kind with outcome OK and an Element input must
// have its value in final[key]. Failed and unknown additions may be absent.
func CheckNoLostWrites(ops []Op, kind string, final map[string][]string) []Violation {
	present := make(map[Element]bool)
	for key, values := range final {
		for _, v := range values {
			present[Element{Key: key, Value: v}] = true
		}
	}
	var found []Violation
	for _, op := range ops {
		if op.Kind != kind || op.Outcome != OK {
			continue
		}
		el := op.Input.(Element)
		if !present[el] {
			found = append(found, Violation{Checker: "no-lost-writes", Detail: fmt.Sprintf("acknowledged %v is missing from %q", op, el.Key)})
		}
	}
	return found
}

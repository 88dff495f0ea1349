package history

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Outcome says what the recorder knows about an operation's effect.
type Outcome int

const (
	// Pending marks an operation that has been called and not yet ended.
	Pending Outcome = iota
	// OK means the operation took effect and its output is the system's answer.
	OK
	// Failed means the operation is known not to have taken effect (refused,
	// not sent, or answered with an error that proves it did not run).
	Failed
	// Unknown means the operation may or may not have taken effect, at any
	// instant after its call (a timeout, a reset after the command was written).
	Unknown
)

// String names the outcome for failure messages.
func (o Outcome) String() string {
	switch o {
	case Pending:
		return "pending"
	case OK:
		return "ok"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Op is one recorded operation. Call and Return are monotonic offsets from
// the recorder's start; Return is zero while the operation is pending.
type Op struct {
	ID      int64  // unique within the recorder, in call order
	Client  int    // which actor ran it (goroutine, process, holder)
	Kind    string // what it was, e.g. "acquire", "write", "read", "echo"
	Input   any
	Output  any
	Outcome Outcome
	Err     error
	Call    time.Duration
	Return  time.Duration
}

// String describes the operation for failure messages.
func (op Op) String() string {
	s := fmt.Sprintf("#%d client %d %s(%v) [%v, %v] %v -> %v", op.ID, op.Client, op.Kind, op.Input, op.Call, op.Return, op.Outcome, op.Output)
	if op.Err != nil {
		s += fmt.Sprintf(" (%v)", op.Err)
	}
	return s
}

// Recorder collects operations with monotonic timestamps. The zero value is
// not usable; call NewRecorder.
type Recorder struct {
	start time.Time

	mu  sync.Mutex
	ops []Op
}

// NewRecorder returns an empty recorder whose clock starts now.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now()}
}

// Now returns the recorder's current monotonic offset, for timestamps taken
// outside Begin/End (a signal sent, a fault switched on).
func (r *Recorder) Now() time.Duration {
	return time.Since(r.start)
}

// Call is an operation that has begun; End records how it finished.
type Call struct {
	r   *Recorder
	idx int
}

// Begin records the call of an operation and returns the handle to end it.
func (r *Recorder) Begin(client int, kind string, input any) *Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := len(r.ops)
	r.ops = append(r.ops, Op{ID: int64(idx), Client: client, Kind: kind, Input: input, Call: r.Now()})
	return &Call{r: r, idx: idx}
}

// ID returns the operation's id, unique within the recorder: scenarios use it
// as the request id a reply must echo.
func (c *Call) ID() int64 { return int64(c.idx) }

// End records the operation's return with its outcome, output and error.
// Ending a call twice keeps the first end.
func (c *Call) End(outcome Outcome, output any, err error) {
	now := c.r.Now()
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	op := &c.r.ops[c.idx]
	if op.Outcome != Pending {
		return
	}
	op.Outcome, op.Output, op.Err, op.Return = outcome, output, err, now
}

// Add records an operation observed elsewhere (another process) with the
// times given, which must bracket the real operation: a wider interval only
// makes the checkers more lenient, never wrong. It returns the id assigned.
func (r *Recorder) Add(op Op) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = int64(len(r.ops))
	r.ops = append(r.ops, op)
	return op.ID
}

// Ops returns a copy of every operation recorded, in call order. Operations
// still pending are reported as Unknown, returning at the time of the call to
// Ops, since their effect may already have happened.
func (r *Recorder) Ops() []Op {
	now := r.Now()
	r.mu.Lock()
	ops := slices.Clone(r.ops)
	r.mu.Unlock()
	for i := range ops {
		if ops[i].Outcome == Pending {
			ops[i].Outcome, ops[i].Return = Unknown, now
		}
	}
	slices.SortStableFunc(ops, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	return ops
}

// Count returns how many recorded operations have the given kind and outcome.
func Count(ops []Op, kind string, outcome Outcome) int {
	n := 0
	for _, op := range ops {
		if op.Kind == kind && op.Outcome == outcome {
			n++
		}
	}
	return n
}

// Violation is one broken promise found in a history.
type Violation struct {
	Checker string // which checker found it
	Detail  string // what was wrong, naming the operations involved
}

// String formats the violation for a test log.
func (v Violation) String() string { return v.Checker + ": " + v.Detail }

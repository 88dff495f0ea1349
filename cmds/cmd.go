package cmds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

var (
	// Nil is the error of a command whose reply is null where a value was asked for:
	// GET of a missing key, SET NX that did not set, LPOP of an empty list. It is
	// resp.ErrNull itself, so errors.Is(err, cmds.Nil) also holds for the null
	// errors of resp.Value's accessors.
	Nil = resp.ErrNull
	// ErrInvalidArg is matched by the errors of arguments no server would accept in
	// the form asked for (an expiration that is not a whole number of the unit the
	// command takes, an argument of a type the client cannot send).
	ErrInvalidArg = errors.New("cmds: invalid argument")
	// ErrNoResult is the error of a pipelined reply read before the pipeline's Exec,
	// or after a later Exec of the same pipeline replaced its results.
	ErrNoResult = errors.New("cmds: no result: the pipeline has not run this command")
	// ErrUnexpectedReply is matched by the errors of replies whose shape is not the
	// one the command's reply schema gives (a damaged reply, a server that answers
	// differently); the reply is never guessed at.
	ErrUnexpectedReply = errors.New("cmds: unexpected reply")
)

// Doer runs one command and returns its reply: *respire.Client and *respire.Tx are
// Doers. The typed commands call those two directly, so that a command's arguments
// stay on the caller's stack; another Doer (a test double, a wrapper) is given a copy
// of each argument as its text, which it may keep.
type Doer interface {
	Do(ctx context.Context, args ...any) (resp.Value, error)
}

// fixedArgs is how many arguments a command lays out without allocating: every
// command of a few arguments with its common options fits. The generator
// (internal/cmdgen, bounded) writes commands that never exceed it to store their
// arguments in place, and must use the same number.
const fixedArgs = 16

// argv is a command's arguments as they are sent. Commands return it by value and
// add to it through inlined calls, so the arguments, and the interface values the
// constructors made of the caller's strings and numbers, stay on the caller's stack;
// past fixedArgs the arguments move to the heap as copies (spill).
type argv struct {
	n     int
	fixed [fixedArgs]any
	// over is every argument, as copies, once there are more than fixedArgs. It is
	// a pointer to a slice of its own, not a slice, so that spilling stores nothing
	// read from argv: escape analysis does not tell fields apart, and a slice field
	// appended to in place would move the fixed arguments to the heap too.
	over *[]any
	bad  problem
}

// problem is what is wrong with a command's arguments, recorded by its methods and
// turned into an error when it runs. It holds no pointer on purpose: escape analysis
// does not tell a value's fields apart, so an error value kept beside the arguments,
// returned on the error path, would move every argument to the heap on every path.
type problem struct {
	kind problemKind
	d    time.Duration // the duration of problemSeconds and problemMilliseconds
	arg  int           // the argument of problemType
}

// problemKind is the kind of a problem; the zero value is none.
type problemKind uint8

const (
	problemNone         problemKind = iota
	problemSeconds                  // a duration that is not whole seconds
	problemMilliseconds             // a duration that is not whole milliseconds
	problemChoice                   // a required choice was not made
	problemEmpty                    // a required list is empty
	problemType                     // an argument of a type that cannot be sent
	problemNilDoer                  // Do with a nil Doer
)

// err returns the problem as an error of the command name.
func (p problem) err(name string) error {
	var why string
	switch p.kind {
	case problemNone:
		return nil
	case problemSeconds:
		why = p.d.String() + " is not a whole number of seconds"
	case problemMilliseconds:
		why = p.d.String() + " is not a whole number of milliseconds"
	case problemChoice:
		why = "one of its required choices was not made"
	case problemEmpty:
		why = "a list it requires is empty"
	case problemType:
		why = fmt.Sprintf("argument %d has a type the client cannot send", p.arg)
	case problemNilDoer:
		why = "run with a nil Doer"
	}
	return fmt.Errorf("%w: %s: %s", ErrInvalidArg, name, why)
}

// add appends one argument.
func (v *argv) add(a any) {
	if v.n < fixedArgs {
		v.fixed[v.n] = a
		v.n++
		return
	}
	v.spill(a)
}

// spill moves the arguments to the heap and appends a. The arguments are copied as
// their text rather than moved: moving them would make the compiler put every
// command's arguments on the heap, because escape analysis cannot tell the rare
// spilling path from the common one.
//
//go:noinline
func (v *argv) spill(a any) {
	if v.over == nil {
		over := make([]any, 0, 2*fixedArgs)
		v.over = &over
		for i := range v.n {
			over = append(over, v.text(v.fixed[i], i))
			v.fixed[i] = nil
		}
		*v.over = over
	}
	o := v.over
	*o = append(*o, v.text(a, len(*o)))
}

// text returns a's text as the server receives it, recording the first unusable
// argument (i is its index).
func (v *argv) text(a any, i int) any {
	b, err := resp.AppendArgText(nil, i, a)
	if err != nil && v.bad.kind == problemNone {
		v.bad = problem{kind: problemType, arg: i}
	}
	return string(b)
}

// check records the problem a field holds in place of a converted value
// (durationSeconds), unless an earlier one was recorded.
func (v *argv) check(a any) {
	if p, ok := a.(problem); ok && v.bad.kind == problemNone {
		v.bad = p
	}
}

// fail records that the command cannot be sent as built.
func (v *argv) fail(kind problemKind) {
	if v.bad.kind == problemNone {
		v.bad.kind = kind
	}
}

// list returns a heap copy of the arguments, which the caller may keep, the name
// as a string: what a person printing or comparing them expects to see.
func (v *argv) list() []any {
	if v.over != nil {
		return *v.over
	}
	out := append([]any(nil), v.fixed[:v.n]...)
	if n, ok := out[0].(*argkind.Name); ok {
		out[0] = n.Text
	}
	return out
}

// args returns the arguments laid out.
func (v *argv) args() []any {
	if v.over != nil {
		return *v.over
	}
	return v.fixed[:v.n]
}

// detach returns a heap copy of args that shares nothing with them: each argument as
// its text. A command's *argkind.Name becomes its name too, though it is static and
// could be kept: storing anything read from args would move every caller's arguments
// to the heap, escape analysis not telling the name from the rest.
func detach(args []any) ([]any, problem) {
	var v argv
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = v.text(a, i)
	}
	return out, v.bad
}

// entry returns the key table's entry of the command name ("get", "config|get") for
// the command's argkind.Name, or nil for a command the table lacks: the client then
// looks the name up as it does an untyped command's.
func entry(name string) any {
	if info, ok := command.Lookup(name); ok {
		return info
	}
	return nil
}

// run sends the command laid out in args, named name, through r, unless it has the
// problem bad. The generated commands call it with their arguments on their own
// stack: a command of a fixed layout as a slice literal, the others from their argv.
func run(ctx context.Context, r Doer, args []any, bad problem, name string) (resp.Value, error) {
	if bad.kind != problemNone {
		return resp.Value{}, bad.err(name)
	}
	switch d := r.(type) {
	case *respire.Client:
		return d.Do(ctx, args...)
	case *respire.Tx:
		return d.Do(ctx, args...)
	case nil:
		return resp.Value{}, problem{kind: problemNilDoer}.err(name)
	}
	copied, bad := detach(args)
	if bad.kind != problemNone {
		return resp.Value{}, bad.err(name)
	}
	return r.Do(ctx, copied...)
}

// cached sends the command laid out in args, named name, through c's client-side
// cache, as run does.
func cached(ctx context.Context, c *respire.Client, ttl time.Duration, args []any, bad problem, name string) (resp.Value, error) {
	if bad.kind != problemNone {
		return resp.Value{}, bad.err(name)
	}
	return c.DoCached(ctx, ttl, args...)
}

// durationSeconds is d as a whole number of seconds, for arguments given in seconds,
// or the problem that d is not one: the field holding it keeps the problem, so that
// a later call of the same option replaces it (argv.check reports it at sending).
func durationSeconds(d time.Duration) any {
	if d%time.Second != 0 {
		return problem{kind: problemSeconds, d: d}
	}
	return int64(d / time.Second)
}

// durationMilliseconds is d as a whole number of milliseconds, or the problem that d
// is not one, as durationSeconds.
func durationMilliseconds(d time.Duration) any {
	if d%time.Millisecond != 0 {
		return problem{kind: problemMilliseconds, d: d}
	}
	return int64(d / time.Millisecond)
}

// fractionalSeconds is d in seconds with a fraction, for timeouts the server reads as
// a decimal (BLPOP).
func fractionalSeconds(d time.Duration) any { return d.Seconds() }

// expiration chooses between a seconds and a milliseconds form (EX or PX): seconds
// when d is a whole number of them, as the shorter and more common form. A d that
// is not whole milliseconds gives its problem as the value, as durationSeconds does.
func expiration(d time.Duration, ex, px string) (token, value any) {
	if d%time.Second == 0 {
		return ex, int64(d / time.Second)
	}
	return px, durationMilliseconds(d)
}

// expirationAt chooses between a Unix time in seconds and one in milliseconds (EXAT
// or PXAT) the same way.
func expirationAt(t time.Time, exat, pxat string) (token, value any) {
	if ms := t.UnixMilli(); ms%1000 != 0 {
		return pxat, ms
	}
	return exat, t.Unix()
}

package coordination

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

var (
	//go:embed scripts/fenced_write.lua
	fencedWriteSource string
	fencedWriteScript = respire.NewScript(fencedWriteSource)
)

// StaleTokenError is the error of a fenced write refused because the resource has
// accepted a higher fencing token: a newer holder has written, this writer's lease
// is over and it must stop. It matches ErrStaleToken.
type StaleTokenError struct {
	Token   int64 // the token presented
	Highest int64 // the highest token the resource had accepted
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("coordination: stale fencing token %d: the resource has accepted %d", e.Token, e.Highest)
}

// Is matches ErrStaleToken.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }

// Resource is a Redis key that fenced writers change only through Write: each write
// presents the writer's fencing token and runs only if that token is at least the
// highest one the resource has accepted, which it then records, all in one script.
// Equal tokens may write again (one lease, several writes); a lower one is refused, so
// a holder that paused past its lease cannot overwrite its successor's work. This is
// what makes a fencing token mean something: a lock alone cannot stop a late write.
//
// The highest accepted token is kept at a key of its own, which must never expire or
// be deleted. A Resource is safe for concurrent use.
type Resource struct {
	co       *Coordinator
	key      string
	accepted string
}

// Resource returns the fenced resource at key, whose highest accepted token is kept
// at acceptedKey. Both keys must hash to one Cluster slot once the client's key prefix
// is applied (ErrCrossSlot otherwise): give them one {hash tag}.
func (co *Coordinator) Resource(key, acceptedKey string) (*Resource, error) {
	if err := co.check(); err != nil {
		return nil, err
	}
	if err := co.checkPair("resource", key, "accepted-token", acceptedKey); err != nil {
		return nil, err
	}
	return &Resource{co: co, key: key, accepted: acceptedKey}, nil
}

// Key returns the resource's key as given, without the client's key prefix.
func (r *Resource) Key() string { return r.key }

// Write runs one write command on the resource key if token is at least the highest
// token the resource has accepted, and returns the command's reply. command is the
// command's name and args are its arguments after the key, which the script puts
// first: Write(ctx, t, "SET", value), Write(ctx, t, "HSET", field, value),
// Write(ctx, t, "RPUSH", item). A command that writes nothing, that the command table
// does not know, or that touches a key besides the resource's (RENAME, MSET, DEL of
// two keys) is refused with ErrInvalidArg before anything is sent.
//
// A refused write returns an error matching ErrStaleToken (a *StaleTokenError); the
// command did not run. An error reply of the command itself is returned as it is,
// and records nothing.
func (r *Resource) Write(ctx context.Context, token int64, command string, args ...any) (resp.Value, error) {
	if r == nil || r.co == nil {
		return resp.Value{}, fmt.Errorf("%w: Resource without a Coordinator (use Coordinator.Resource)", ErrInvalidArg)
	}
	if token < 1 {
		return resp.Value{}, fmt.Errorf("%w: fencing token %d is under 1", ErrInvalidArg, token)
	}
	if command == "" {
		return resp.Value{}, fmt.Errorf("%w: empty command", ErrInvalidArg)
	}
	if err := checkResourceWrite(r.co.ln.Table, command, args); err != nil {
		return resp.Value{}, err
	}
	argv := make([]any, 0, 2+len(args))
	argv = append(argv, strconv.FormatInt(token, 10), command)
	argv = append(argv, args...)
	v, err := fencedWriteScript.Run(ctx, r.co.c, []string{r.accepted, r.key}, argv...)
	if err != nil {
		return resp.Value{}, err
	}
	res, err := v.Array()
	if err != nil || len(res) == 0 {
		return resp.Value{}, fmt.Errorf("coordination: fenced write answered %v", v)
	}
	verdict, err := res[0].Int()
	if err != nil {
		return resp.Value{}, fmt.Errorf("coordination: fenced write answered %v", v)
	}
	if verdict == 0 {
		highest := int64(0)
		if len(res) > 1 {
			highest, _ = res[1].Int()
		}
		return resp.Value{}, &StaleTokenError{Token: token, Highest: highest}
	}
	if len(res) < 2 {
		return resp.Null(), nil // Lua turns a nil reply into the end of its array
	}
	return res[1], nil
}

// checkResourceWrite refuses, before anything is sent, a command that the fence cannot
// guard: one that writes nothing, one the command table does not know (its keys are
// unknown), or one that touches a key besides the resource's. Such a key would escape
// the client's key prefix and the Cluster slot check, and the fence would guard a
// write it never saw.
func checkResourceWrite(table *command.Table, name string, args []any) error {
	full := make([]any, 0, 2+len(args))
	full = append(full, name, "resource")
	full = append(full, args...)
	info, ok := table.LookupArgs(full)
	if !ok {
		return fmt.Errorf("%w: %s is not a command whose keys are known", ErrInvalidArg, name)
	}
	if info.Flags&command.FlagWrite == 0 {
		return fmt.Errorf("%w: %s does not write", ErrInvalidArg, name)
	}
	var buf [4]int
	if keys := command.InfoKeyIndexes(info, full, buf[:0]); len(keys) != 1 || keys[0] != 1 {
		return fmt.Errorf("%w: %s touches %d keys; a fenced write touches the resource's alone", ErrInvalidArg, name, len(keys))
	}
	return nil
}

// HighestAccepted returns the highest fencing token the resource has accepted, 0 when
// none.
func (r *Resource) HighestAccepted(ctx context.Context) (int64, error) {
	if r == nil || r.co == nil {
		return 0, fmt.Errorf("%w: Resource without a Coordinator (use Coordinator.Resource)", ErrInvalidArg)
	}
	v, err := r.co.c.Do(ctx, "GET", r.accepted)
	if err != nil || v.IsNull() {
		return 0, err
	}
	return v.Int()
}

package emulator

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/respire/respire/resp"
)

// adminClientName is the admin connection's CLIENT SETNAME.
const adminClientName = "respire-emulator-admin"

// errAdminClosed is returned by an admin connection used after the emulator stopped.
var errAdminClosed = errors.New("emulator: admin connection closed")

// admin is the emulator's own backend connection, authenticated with the configured
// admin credentials. It checks the permissions of emulated commands (ACL DRYRUN) and
// runs them (EVALSHA), so that a client needs neither EVAL nor anything but the
// permission the real command needs. One request runs at a time; the connection is
// dialled again after a failure.
type admin struct {
	addr, user, pass string

	mu sync.Mutex // one request at a time; guards rd, db
	rd *resp.Reader
	db int // the database the connection has selected

	connMu sync.Mutex // guards nc and closed, so that close never waits for a request
	nc     net.Conn
	closed bool
}

func newAdmin(addr, user, pass string) *admin {
	return &admin{addr: addr, user: user, pass: pass}
}

// connect dials (and authenticates) when there is no connection. The caller holds mu.
func (a *admin) connect() error {
	a.connMu.Lock()
	nc, closed := a.nc, a.closed
	a.connMu.Unlock()
	if closed {
		return errAdminClosed
	}
	if nc != nil {
		return nil
	}
	nc, err := net.Dial("tcp", a.addr)
	if err != nil {
		return err
	}
	a.connMu.Lock()
	if a.closed {
		a.connMu.Unlock()
		nc.Close()
		return errAdminClosed
	}
	a.nc = nc
	a.connMu.Unlock()
	a.rd = resp.NewReader(bufio.NewReader(nc), resp.Limits{})
	a.db = 0
	var auth []any
	switch {
	case a.user != "":
		auth = []any{"AUTH", a.user, a.pass}
	case a.pass != "":
		auth = []any{"AUTH", a.pass}
	}
	if auth != nil {
		v, err := a.roundTrip(auth...)
		if err != nil {
			return err
		}
		if err := v.Err(); err != nil {
			a.drop()
			return fmt.Errorf("emulator: admin AUTH: %w", err)
		}
	}
	// A name, so that CLIENT LIST on the backend tells this connection from the
	// clients'; a user not allowed CLIENT SETNAME works without one.
	_, err = a.roundTrip("CLIENT", "SETNAME", adminClientName)
	return err
}

// roundTrip sends one command and reads its reply; a transport error drops the
// connection. The caller holds mu.
func (a *admin) roundTrip(args ...any) (resp.Value, error) {
	cmd, err := resp.AppendCommand(nil, args...)
	if err != nil {
		return resp.Value{}, err
	}
	a.connMu.Lock()
	nc := a.nc
	a.connMu.Unlock()
	if nc == nil {
		return resp.Value{}, errAdminClosed
	}
	if _, err := nc.Write(cmd); err != nil {
		a.drop()
		return resp.Value{}, err
	}
	v, err := a.rd.Read()
	if err != nil {
		a.drop()
		return resp.Value{}, err
	}
	return v, nil
}

// doIdempotent runs one command that is safe to repeat, connecting first if needed.
// A connection that has gone stale since its last use (the backend restarted, a test
// killed it) fails on first use; the command is then repeated once on a fresh one, so
// that the client never pays for the admin connection's history. The caller holds mu.
func (a *admin) doIdempotent(args ...any) (resp.Value, error) {
	for attempt := 0; ; attempt++ {
		if err := a.connect(); err != nil {
			return resp.Value{}, err
		}
		v, err := a.roundTrip(args...)
		if err == nil || attempt == 1 || errors.Is(err, errAdminClosed) {
			return v, err
		}
	}
}

// drop closes the current connection; the next request dials again.
func (a *admin) drop() {
	a.connMu.Lock()
	if a.nc != nil {
		a.nc.Close()
		a.nc = nil
	}
	a.connMu.Unlock()
}

// close closes the connection for good, interrupting a request in flight.
func (a *admin) close() {
	a.connMu.Lock()
	a.closed = true
	if a.nc != nil {
		a.nc.Close()
		a.nc = nil
	}
	a.connMu.Unlock()
}

// ping checks that the admin connection works (at Start).
func (a *admin) ping() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, err := a.doIdempotent("PING")
	if err != nil {
		return err
	}
	return v.Err()
}

// denial is why ACL DRYRUN refused a command.
type denial int

const (
	allowed       denial = iota
	deniedCommand        // the user may not run the command
	deniedKey            // the user may not access one of its keys
)

// dryRun asks whether user may run cmd. An error reply (an unknown user) comes back as
// a *resp.ServerError, a transport failure as another error.
func (a *admin) dryRun(user string, cmd []string) (denial, error) {
	args := make([]any, 0, len(cmd)+3)
	args = append(args, "ACL", "DRYRUN", user)
	for _, c := range cmd {
		args = append(args, c)
	}
	a.mu.Lock()
	v, err := a.doIdempotent(args...)
	a.mu.Unlock()
	if err != nil {
		return allowed, err
	}
	if err := v.Err(); err != nil {
		return allowed, err
	}
	text, err := v.Text()
	if err != nil {
		return allowed, fmt.Errorf("emulator: ACL DRYRUN replied %v", v)
	}
	switch {
	case text == "OK":
		return allowed, nil
	case strings.HasPrefix(text, "This user has no permissions to run"):
		return deniedCommand, nil
	case strings.HasPrefix(text, "This user has no permissions to access"):
		return deniedKey, nil
	}
	return allowed, resp.NewServerError("ERR emulator: ACL DRYRUN: " + text)
}

// eval runs s in database db and returns its reply, an error reply included; the error
// is a transport failure, after which the outcome is unknown. With asking, ASKING
// precedes the script (a client's ASKING, in a Cluster, applies to the command it
// precedes, which is this one).
func (a *admin) eval(db int, asking bool, s *script, keys, argv []string) (resp.Value, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.connect(); err != nil {
		return resp.Value{}, err
	}
	if a.db != db {
		v, err := a.roundTrip("SELECT", strconv.Itoa(db))
		if err != nil {
			return resp.Value{}, err
		}
		if err := v.Err(); err != nil {
			return v, nil
		}
		a.db = db
	}
	run := func(args ...any) (resp.Value, error) {
		if asking {
			if _, err := a.roundTrip("ASKING"); err != nil {
				return resp.Value{}, err
			}
		}
		return a.roundTrip(args...)
	}
	v, err := run(evalArgs("EVALSHA", s.sha, keys, argv)...)
	if err != nil {
		return resp.Value{}, err
	}
	if resp.HasCode(v.Err(), "NOSCRIPT") {
		return run(evalArgs("EVAL", s.src, keys, argv)...)
	}
	return v, nil
}

// evalArgs builds EVAL/EVALSHA's arguments.
func evalArgs(verb, body string, keys, argv []string) []any {
	args := make([]any, 0, 3+len(keys)+len(argv))
	args = append(args, verb, body, strconv.Itoa(len(keys)))
	for _, k := range keys {
		args = append(args, k)
	}
	for _, a := range argv {
		args = append(args, a)
	}
	return args
}

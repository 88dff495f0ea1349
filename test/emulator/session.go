package emulator

import (
	"strconv"
	"strings"
	"time"

	"github.com/respire/respire/resp"
	"github.com/tidwall/redcon"
)

// command is one command received from a client.
type command struct {
	args  [][]byte
	raw   []byte   // its exact bytes (redcon turns inline commands into RESP)
	names []string // see commandNames; names[0] is the command's name
}

// transaction is the state of a client inside MULTI.
type transaction struct {
	// dirty marks a command the emulator rejected at queue time (NOPERM, arity):
	// EXEC must abort as a server's would, though the backend never saw the error.
	dirty bool
	// queued counts the commands queued so far; selects are the SELECTs among them
	// (position in EXEC's reply and database), applied once EXEC has run them.
	queued  int
	selects []queuedSelect
}

type queuedSelect struct{ pos, db int }

// queue notes a command the backend answered QUEUED; db >= 0 for a SELECT.
func (tx *transaction) queue(db int) {
	if db >= 0 {
		tx.selects = append(tx.selects, queuedSelect{pos: tx.queued, db: db})
	}
	tx.queued++
}

// session serves one client connection: it reads the client's commands (readClient),
// handles them strictly one after another (run), and owns the backend connection
// whose reader forwards replies and push frames.
type session struct {
	e  *Emulator
	f  *features
	dc redcon.DetachedConn
	cw *clientWriter
	be *backend

	cmds       chan command  // readClient → run
	clientGone chan struct{} // closed when readClient returns
	stop       chan struct{} // closed when run ends

	// What the client negotiated, as a server tracks it for a connection. Only run
	// touches these.
	proto           int    // 2 or 3 (HELLO)
	user            string // AUTH, HELLO AUTH; "default" until then
	db              int    // SELECT
	tx              *transaction
	subscribedRESP2 bool // a RESP2 SUBSCRIBE was sent: replies no longer match commands
	asking          bool // the previous command was ASKING: it applies to this one
}

// blockingCommands may wait server-side indefinitely: once their client is gone the
// emulator stops waiting for their reply and closes the backend connection, as the
// server frees a blocked client that disconnects.
var blockingCommands = map[string]bool{
	"BLPOP": true, "BRPOP": true, "BRPOPLPUSH": true, "BLMOVE": true, "BLMPOP": true,
	"BZPOPMIN": true, "BZPOPMAX": true, "BZMPOP": true, "WAIT": true, "WAITAOF": true,
	"XREAD": true, "XREADGROUP": true,
}

// subscribeCommands change the connection's mode; their confirmations (push frames
// in RESP3, one array per channel in RESP2) are forwarded as they come, not matched.
var subscribeCommands = map[string]bool{
	"SUBSCRIBE": true, "PSUBSCRIBE": true, "SSUBSCRIBE": true,
	"UNSUBSCRIBE": true, "PUNSUBSCRIBE": true, "SUNSUBSCRIBE": true,
}

// helloMarker is the liveness check sent on the client's own backend connection
// around an emulated command. HELLO without arguments changes nothing and is allowed
// to every authenticated user, whatever its ACL rules.
var helloMarker = []byte("*1\r\n$5\r\nHELLO\r\n")

// discardCmd ends a transaction the emulator aborts at EXEC.
var discardCmd = []byte("*1\r\n$7\r\nDISCARD\r\n")

func newSession(e *Emulator, dc redcon.DetachedConn, be *backend) *session {
	return &session{
		e: e, f: &e.f, dc: dc, be: be,
		cw:         newClientWriter(dc.NetConn()),
		cmds:       make(chan command),
		clientGone: make(chan struct{}),
		stop:       make(chan struct{}),
		proto:      2,
		user:       "default",
	}
}

// start runs the session's goroutines; first is the command redcon handed over.
func (s *session) start(first command) {
	go s.be.run(s.cw)
	go s.readClient()
	go s.run(first)
}

// kill closes both connections; the goroutines then end on their own.
func (s *session) kill() {
	s.cw.close()
	s.be.close()
}

// readClient reads the client's commands, logs and counts them on receipt, and hands
// them to run.
func (s *session) readClient() {
	defer close(s.clientGone)
	for {
		cmd, err := s.dc.ReadCommand()
		if err != nil {
			return
		}
		c := s.e.receive(cmd)
		select {
		case s.cmds <- c:
		case <-s.stop:
			return
		}
	}
}

// run handles the commands in order until the client or the backend connection ends.
func (s *session) run(first command) {
	defer s.finish()
	if !s.handle(first) {
		return
	}
	for {
		select {
		case c := <-s.cmds:
			if !s.handle(c) {
				return
			}
		case <-s.clientGone:
			return // every command it read has been handled
		case <-s.be.dead:
			return
		}
	}
}

// finish closes both connections and waits for the other two goroutines.
func (s *session) finish() {
	close(s.stop)
	s.kill()
	<-s.be.dead
	<-s.clientGone
	s.e.sessionEnded(s)
}

// handle applies the hooks to one command, then forwards or emulates it. It returns
// false when the session must end.
func (s *session) handle(c command) bool {
	asking := s.asking
	s.asking = c.names[0] == "ASKING"
	h := s.e.hooks
	if d := h.delay(c.names); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.be.dead: // killed while held: the command never runs
			return false
		}
	}
	when, dropping := h.takeDrop(c.names)
	if dropping && when == BeforeForward {
		return false
	}
	dropAfter := dropping && when == AfterForward
	if raw, ok := h.forcedReply(c.names); ok {
		if dropAfter {
			return false
		}
		s.cw.write(raw)
		return true
	}
	if em := s.f.plan(c.args); em != nil {
		em.asking = asking
		return s.emulate(em, dropAfter)
	}
	return s.forward(c, dropAfter)
}

// forward sends a command to the backend and waits for its reply, which the backend
// reader forwards (rewritten for the profile where needed).
func (s *session) forward(c command, dropAfter bool) bool {
	name := c.names[0]
	if name == "EXEC" && s.tx != nil && s.tx.dirty {
		return s.abortExec(dropAfter)
	}
	if subscribeCommands[name] {
		if s.proto == 2 && !strings.Contains(name, "UNSUB") {
			s.subscribedRESP2 = true
		}
		if err := s.be.send(nil, c.raw); err != nil {
			return false
		}
		return !dropAfter
	}
	p := newPending()
	p.dropClient = dropAfter
	p.rewrite = s.rewriter(c)
	if err := s.be.send(p, c.raw); err != nil {
		return false
	}
	v, ok := s.await(p, blockingCommands[name])
	if !ok {
		return false
	}
	s.observe(c, v)
	return !dropAfter
}

// await waits for p's reply. It gives up when the backend connection ends and, for a
// blocking command, when the client is gone.
func (s *session) await(p *pending, blocking bool) (resp.Value, bool) {
	var gone <-chan struct{}
	if blocking {
		gone = s.clientGone
	}
	select {
	case v := <-p.done:
		return v, true
	case <-s.be.dead:
		select {
		case v := <-p.done: // read just before the connection ended
			return v, true
		default:
			return resp.Value{}, false
		}
	case <-gone:
		return resp.Value{}, false
	}
}

// rewriter returns how a forwarded reply is rewritten for the profile: HELLO's
// identity fields, the Redis 7 wording of errors, and what Redis 6 lacks. The user is
// taken now, as the reply belongs to this command.
func (s *session) rewriter(c command) func(resp.Value, []byte) []byte {
	addr := s.e.cfg.RewriteAddr
	if s.f.passThrough() && addr == nil {
		return nil
	}
	name, sub := c.names[0], ""
	if len(c.names) > 1 {
		sub = c.names[1]
	}
	f, user, args := s.f, s.user, c.args
	return func(v resp.Value, raw []byte) []byte {
		if out, ok := f.redis6Reply(args, v); ok {
			return out
		}
		if addr != nil {
			if msg, ok := errorText(v); ok {
				if out, ok := rewriteRedirect(msg, addr); ok {
					return errorFrame(out)
				}
			}
			if name == "CLUSTER" {
				if out, ok := rewriteCluster(sub, v, addr); ok {
					return resp.AppendValue(nil, out)
				}
			}
		}
		if f.passThrough() {
			return raw
		}
		if name == "HELLO" {
			if out, ok := f.rewriteHello(v); ok {
				return resp.AppendValue(nil, out)
			}
		}
		if msg, ok := errorText(v); ok {
			if out, changed := f.rewriteError(msg, user); changed {
				return errorFrame(out)
			}
		}
		return raw
	}
}

// observe tracks what a forwarded command changed in the connection's state.
func (s *session) observe(c command, v resp.Value) {
	switch c.names[0] {
	case "HELLO":
		if v.Kind() != resp.KindMap && v.Kind() != resp.KindArray {
			return
		}
		if m, err := v.Map(); err == nil {
			if n, err := m["proto"].Int(); err == nil {
				s.proto = int(n)
			}
		}
		for i := 2; i < len(c.args); i++ {
			switch upper(c.args[i]) {
			case "AUTH":
				if i+2 < len(c.args) {
					s.user = string(c.args[i+1])
				}
				i += 2
			case "SETNAME":
				i++
			}
		}
	case "AUTH":
		if isOK(v) {
			if len(c.args) == 3 {
				s.user = string(c.args[1])
			} else {
				s.user = "default"
			}
		}
	case "SELECT":
		if isOK(v) && len(c.args) == 2 {
			if n, err := strconv.Atoi(string(c.args[1])); err == nil {
				s.db = n
			}
		}
	case "RESET":
		if t, err := v.Text(); err == nil && t == "RESET" {
			s.proto, s.user, s.db, s.tx, s.subscribedRESP2 = 2, "default", 0, nil, false
		}
	case "MULTI":
		if isOK(v) {
			s.tx = &transaction{}
		}
	case "EXEC":
		// A SELECT run by EXEC changes the database the emulated commands use.
		if elems, err := v.Array(); err == nil && v.Kind() == resp.KindArray && s.tx != nil {
			for _, sel := range s.tx.selects {
				if sel.pos < len(elems) && isOK(elems[sel.pos]) {
					s.db = sel.db
				}
			}
		}
		s.tx = nil
	case "DISCARD":
		s.tx = nil
	}
	if s.tx != nil && c.names[0] != "MULTI" && isQueued(v) {
		db := -1
		if c.names[0] == "SELECT" && len(c.args) == 2 {
			if n, err := strconv.Atoi(string(c.args[1])); err == nil {
				db = n
			}
		}
		s.tx.queue(db)
	}
}

// abortExec answers EXEC of a transaction the emulator marked dirty: the backend's
// transaction is discarded and the client gets EXECABORT.
func (s *session) abortExec(dropAfter bool) bool {
	p := newPending()
	p.internal = true
	if err := s.be.send(p, discardCmd); err != nil {
		return false
	}
	if _, ok := s.await(p, false); !ok {
		return false
	}
	s.tx = nil
	if dropAfter {
		return false
	}
	s.cw.write(errorFrame(errExecAbort))
	return true
}

// emulate runs a command the profile has and the backend lacks.
//
// Outside MULTI: the permission of the real command is checked with ACL DRYRUN on
// the admin connection; a HELLO on the client's own backend connection then proves
// that connection alive (and authenticated) and starts holding its push frames; the
// script runs atomically on the admin connection; a second HELLO collects the
// invalidations the script caused, which follow the reply as on a real server.
//
// The remaining race: a CLIENT KILL that reaches the backend after the first HELLO
// and before the script does not stop the script — a window of one loopback round
// trip. A kill before it (during a Delay, say) always does: the command never runs.
func (s *session) emulate(em *emulated, dropAfter bool) bool {
	if em.arityErr != "" {
		if s.tx != nil {
			s.tx.dirty = true
		}
		return s.reply(errorFrame(em.arityErr), dropAfter)
	}
	if s.tx != nil {
		return s.queueEmulated(em, dropAfter)
	}
	if s.subscribedRESP2 {
		return s.reply(errorFrame("ERR emulator: '"+em.name+"' is not emulated on a RESP2 connection in subscribed mode"), dropAfter)
	}
	verdict, err := s.e.admin.dryRun(s.user, em.perm)
	if err != nil {
		if msg, ok := serverErrorText(err); ok {
			return s.reply(errorFrame(msg), dropAfter)
		}
		return false // admin connection lost: the outcome is unknown, like a lost connection
	}
	mark, ok := s.marker(true)
	if !ok {
		return false // the client's own connection is gone: never run the command
	}
	if msg, ok := errorText(mark); ok {
		switch {
		case strings.HasPrefix(msg, "NOAUTH"):
			return s.reply(errorFrame(errNoAuth), dropAfter)
		case strings.HasPrefix(msg, "ERR Can't execute 'hello'"):
			return s.reply(errorFrame(strings.Replace(msg, "'hello'", "'"+em.name+"'", 1)), dropAfter)
		}
	}
	switch verdict {
	case deniedCommand:
		return s.reply(errorFrame(s.f.noPermCommand(s.user, em.name)), dropAfter)
	case deniedKey:
		return s.reply(errorFrame(s.f.noPermKey()), dropAfter)
	}
	if em.execErr != "" {
		return s.reply(errorFrame(em.execErr), dropAfter)
	}
	v, err := s.e.admin.eval(s.db, em.asking, em.script, em.keys, em.argv)
	if err != nil {
		return false // outcome unknown: drop the client as a lost connection would
	}
	if dropAfter {
		return false
	}
	if _, ok := s.marker(false); !ok {
		return false
	}
	s.cw.release(s.encode(v))
	return true
}

// queueEmulated handles an emulated command inside MULTI. Permission and arity fail
// at queue time, as on a server; otherwise the command is queued on the client's own
// backend connection as an EVAL of its script, so that it runs in order and atomically
// with the transaction at EXEC. That EVAL needs the user to be allowed EVAL and the
// script's commands; if the backend refuses it, the client gets an explicit emulator
// error and EXEC aborts.
func (s *session) queueEmulated(em *emulated, dropAfter bool) bool {
	verdict, err := s.e.admin.dryRun(s.user, em.perm)
	if err != nil {
		if msg, ok := serverErrorText(err); ok {
			s.tx.dirty = true
			return s.reply(errorFrame(msg), dropAfter)
		}
		return false
	}
	switch verdict {
	case deniedCommand:
		s.tx.dirty = true
		return s.reply(errorFrame(s.f.noPermCommand(s.user, em.name)), dropAfter)
	case deniedKey:
		s.tx.dirty = true
		return s.reply(errorFrame(s.f.noPermKey()), dropAfter)
	}
	var args []any
	if em.execErr != "" {
		args = evalArgs("EVAL", errorScript.src, nil, []string{em.execErr})
	} else {
		args = evalArgs("EVAL", em.script.src, em.keys, em.argv)
	}
	cmd, err := resp.AppendCommand(nil, args...)
	if err != nil {
		return false
	}
	p := newPending()
	p.dropClient = dropAfter
	name := em.name
	p.rewrite = func(v resp.Value, raw []byte) []byte {
		if msg, ok := errorText(v); ok {
			return errorFrame("ERR emulator: '" + name + "' inside MULTI is queued as EVAL, which the backend refused: " + msg)
		}
		return raw
	}
	if err := s.be.send(p, cmd); err != nil {
		return false
	}
	v, ok := s.await(p, false)
	if !ok {
		return false
	}
	if _, isErr := errorText(v); isErr {
		s.tx.dirty = true
	} else if isQueued(v) {
		s.tx.queue(-1)
	}
	return !dropAfter
}

// marker sends the liveness HELLO on the client's backend connection and waits for
// its reply, which is not forwarded; hold starts holding push frames once it is read.
func (s *session) marker(hold bool) (resp.Value, bool) {
	p := newPending()
	p.internal, p.holdAfter = true, hold
	if err := s.be.send(p, helloMarker); err != nil {
		return resp.Value{}, false
	}
	return s.await(p, false)
}

// reply answers an emulated command (and releases held push frames after it), or with
// AfterForward drops the connection instead.
func (s *session) reply(frame []byte, dropAfter bool) bool {
	if dropAfter {
		return false
	}
	s.cw.release(frame)
	return true
}

// encode writes a script's reply as the real command's, in the client's protocol:
// null is "$-1" under RESP2 and "_" under RESP3.
func (s *session) encode(v resp.Value) []byte {
	if msg, ok := errorText(v); ok && s.e.cfg.RewriteAddr != nil {
		if out, ok := rewriteRedirect(msg, s.e.cfg.RewriteAddr); ok {
			return errorFrame(out)
		}
	}
	if v.IsNull() {
		if s.proto >= 3 {
			return []byte("_\r\n")
		}
		return []byte("$-1\r\n")
	}
	return resp.AppendValue(nil, v)
}

// errorFrame is a simple error reply carrying msg (code first, no "-").
func errorFrame(msg string) []byte {
	return append(append([]byte{'-'}, msg...), '\r', '\n')
}

// errorText returns the message of an error reply.
func errorText(v resp.Value) (string, bool) {
	if v.Kind() != resp.KindError {
		return "", false
	}
	return serverErrorText(v.Err())
}

// serverErrorText returns the message of a *resp.ServerError.
func serverErrorText(err error) (string, bool) {
	if se, ok := err.(*resp.ServerError); ok {
		return se.Msg, true
	}
	return "", false
}

func isQueued(v resp.Value) bool {
	t, err := v.Text()
	return err == nil && v.Kind() == resp.KindSimpleString && t == "QUEUED"
}

func isOK(v resp.Value) bool {
	t, err := v.Text()
	return err == nil && v.Kind() == resp.KindSimpleString && t == "OK"
}

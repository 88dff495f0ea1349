package emulator

import (
	"strings"
	"sync"
	"time"
)

// DropWhen says when [Emulator.DropConn] closes a client connection.
type DropWhen int

const (
	// BeforeForward closes the connection instead of running the command: it never
	// reaches the backend.
	BeforeForward DropWhen = iota + 1
	// AfterForward runs the command on the backend, then closes the connection
	// instead of delivering the reply: the client cannot know the outcome.
	AfterForward
)

// String returns the constant's name.
func (w DropWhen) String() string {
	switch w {
	case BeforeForward:
		return "BeforeForward"
	case AfterForward:
		return "AfterForward"
	}
	return "DropWhen(?)"
}

// hooks holds the counters, the command log and the faults tests arm, shared by every
// connection of an emulator.
type hooks struct {
	mu     sync.Mutex
	counts map[string]int64
	log    [][]string
	delays map[string]time.Duration
	drops  []drop // one-shot, oldest first
	forced map[string][]byte
}

type drop struct {
	name string
	when DropWhen
}

func newHooks() *hooks {
	h := &hooks{}
	h.reset()
	return h
}

// reset clears everything. The caller holds mu or owns h.
func (h *hooks) reset() {
	h.counts = make(map[string]int64)
	h.log = nil
	h.delays = make(map[string]time.Duration)
	h.drops = nil
	h.forced = make(map[string][]byte)
}

// record logs and counts a command received from a client and returns its names.
func (h *hooks) record(args [][]byte) []string {
	names := commandNames(args)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, strs(args))
	for _, n := range names {
		h.counts[n]++
	}
	return names
}

// delay returns how long to hold a command with these names: the longest delay set
// for any of them.
func (h *hooks) delay(names []string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var d time.Duration
	for _, n := range names {
		d = max(d, h.delays[n])
	}
	return d
}

// takeDrop consumes the oldest drop armed for one of the names.
func (h *hooks) takeDrop(names []string) (DropWhen, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, d := range h.drops {
		if matches(names, d.name) {
			h.drops = append(h.drops[:i], h.drops[i+1:]...)
			return d.when, true
		}
	}
	return 0, false
}

// forcedReply returns the raw reply forced for one of the names (the first name that
// has one, the command's own name first).
func (h *hooks) forcedReply(names []string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range names {
		if raw, ok := h.forced[n]; ok {
			return raw, true
		}
	}
	return nil, false
}

func matches(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// hookName normalises a name given to the hook methods: upper case, single spaces.
func hookName(name string) string {
	return strings.Join(strings.Fields(strings.ToUpper(name)), " ")
}

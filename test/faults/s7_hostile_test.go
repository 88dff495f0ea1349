package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/history"
)

// hostileServer is a loopback listener that completes the handshake like a Redis 7
// server and answers every other command with the same hostile bytes, then does what
// its ending says. It stands for a compromised or broken server (or a man in the
// middle): S7 of issue 14.
type hostileServer struct {
	ln      net.Listener
	payload []byte
	end     hostileEnd
	wg      sync.WaitGroup
	stop    chan struct{}
}

// hostileEnd is what the server does once it has sent its payload.
type hostileEnd int

const (
	endStall hostileEnd = iota // keep it open and send nothing more: a stalled reply
	endClose                   // close the connection: a truncated one
	endServe                   // go on answering commands with the payload
)

// newHostile starts a hostile server; close stops it and its connections.
func newHostile(t *testing.T, payload []byte, end hostileEnd) *hostileServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostileServer{ln: ln, payload: payload, end: end, stop: make(chan struct{})}
	h.wg.Add(1)
	go h.accept()
	return h
}

func startHostile(t *testing.T, payload []byte, end hostileEnd) *hostileServer {
	t.Helper()
	h := newHostile(t, payload, end)
	t.Cleanup(h.close)
	return h
}

func (h *hostileServer) close() {
	close(h.stop)
	h.ln.Close()
	h.wg.Wait()
}

func (h *hostileServer) accept() {
	defer h.wg.Done()
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.wg.Add(2)
		go func() {
			defer h.wg.Done()
			<-h.stop
			c.Close()
		}()
		go func() {
			defer h.wg.Done()
			h.serve(c)
		}()
	}
}

// handshakeReply answers the connection set-up commands as Redis 7 does; nil means the
// command is one the payload answers.
func handshakeReply(name string) []byte {
	switch strings.ToUpper(name) {
	case "HELLO":
		return []byte("%3\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n+id\r\n:7\r\n")
	case "CLIENT", "SELECT", "PING":
		return []byte("+OK\r\n")
	}
	return nil
}

func (h *hostileServer) serve(c net.Conn) {
	defer c.Close()
	rd := resp.NewReader(bufio.NewReader(c), resp.Limits{})
	for {
		cmd, err := rd.Read()
		if err != nil {
			return
		}
		name := ""
		if args, _ := cmd.Array(); len(args) > 0 {
			name, _ = args[0].Text()
		}
		if reply := handshakeReply(name); reply != nil {
			if _, err := c.Write(reply); err != nil {
				return
			}
			continue
		}
		if _, err := c.Write(h.payload); err != nil {
			return
		}
		switch h.end {
		case endClose:
			return
		case endStall:
			<-h.stop
			return
		}
	}
}

// nested returns depth levels of the aggregate header open, then leaf.
func nested(open string, depth int, leaf string) []byte {
	return []byte(strings.Repeat(open, depth) + leaf)
}

// TestS7HostileServer sends malformed, truncated and oversized replies and checks that
// each ends in a typed error (protocol, limit, or an outcome-unknown I/O error), that
// no reply allocates more than a small bound however large the length it declares, and
// that nothing panics or hangs. Each case runs on both read paths: a caller whose
// context can end reads its own reply inline; one whose context cannot hands it to the
// connection's reader goroutine.
func TestS7HostileServer(t *testing.T) {
	const allocBound = 8 << 20 // a lying header may cost a bulk chunk or two, not its length
	truncated := []error{io.ErrUnexpectedEOF}
	cases := []struct {
		name    string
		payload []byte
		end     hostileEnd
		lim     resp.Limits // zero: the defaults, which must hold by themselves
		want    []error     // the call's error matches one of these, and ErrOutcomeUnknown
	}{
		{name: "bulk longer than MaxBulkLen", payload: []byte("$9223372036854775807\r\n"), want: []error{resp.ErrLimit}},
		{name: "bulk length overflowing int64", payload: []byte("$99999999999999999999\r\n"), want: []error{resp.ErrProtocol}},
		{name: "bulk lying under the limit", payload: []byte("$536870000\r\nabc"), end: endClose, want: truncated},
		{name: "bulk over a small limit", payload: []byte("$70000\r\nabc"), lim: resp.Limits{MaxBulkLen: 64 << 10}, want: []error{resp.ErrLimit}},
		{name: "negative bulk length", payload: []byte("$-5\r\n"), want: []error{resp.ErrProtocol}},
		{name: "bulk without CRLF", payload: []byte("$3\r\nabcXY"), want: []error{resp.ErrProtocol}},
		{name: "array longer than MaxAggregateLen", payload: []byte("*99999999999\r\n"), want: []error{resp.ErrLimit}},
		{name: "array lying under the limits", payload: []byte("*13000000\r\n:1\r\n:2\r\n"), end: endClose, want: truncated},
		{name: "map lying under the limits", payload: []byte("%6500000\r\n+k\r\n"), end: endClose, want: truncated},
		// MaxAggregateLen allows 1<<26 elements; MaxReplyMemory does not allow 5 GiB of Values.
		{name: "array over the memory limit", payload: []byte("*67108864\r\n"), want: []error{resp.ErrLimit}},
		{name: "small elements over the memory limit", payload: []byte("*2\r\n*10000\r\n" + strings.Repeat("_\r\n", 10000) + "*10000\r\n"),
			lim: resp.Limits{MaxReplyMemory: 1 << 20}, want: []error{resp.ErrLimit}},
		{name: "10,000-deep arrays", payload: nested("*1\r\n", 10000, ":1\r\n"), want: []error{resp.ErrLimit}},
		{name: "10,000-deep maps", payload: nested("%1\r\n+k\r\n", 10000, ":1\r\n"), want: []error{resp.ErrLimit}},
		{name: "10,000-deep attributes", payload: nested("|1\r\n+k\r\n*1\r\n", 10000, ":1\r\n"), want: []error{resp.ErrLimit}},
		{name: "10,000-deep pushes", payload: nested(">1\r\n", 10000, ":1\r\n"), want: []error{resp.ErrLimit}},
		{name: "invalid type mid-array", payload: []byte("*3\r\n:1\r\n@x\r\n:3\r\n"), want: []error{resp.ErrProtocol}},
		{name: "invalid type at the top", payload: []byte("@hello\r\n"), want: []error{resp.ErrProtocol}},
		{name: "NUL type byte", payload: []byte("\x00\r\n"), want: []error{resp.ErrProtocol}},
		{name: "line without end", payload: append([]byte("+"), strings.Repeat("a", 1<<20)...), lim: resp.Limits{MaxLineLen: 64 << 10}, want: []error{resp.ErrLimit}},
		{name: "line without end, short", payload: append([]byte("-"), strings.Repeat("a", 2000)...), lim: resp.Limits{MaxLineLen: 1000}, want: []error{resp.ErrLimit}},
		{name: "line ended by LF only", payload: []byte("+OK\n"), want: []error{resp.ErrProtocol}},
		{name: "invalid integer", payload: []byte(":12a\r\n"), want: []error{resp.ErrProtocol}},
		{name: "invalid double", payload: []byte(",0x1p3\r\n"), want: []error{resp.ErrProtocol}},
		{name: "invalid boolean", payload: []byte("#x\r\n"), want: []error{resp.ErrProtocol}},
		{name: "null with payload", payload: []byte("_x\r\n"), want: []error{resp.ErrProtocol}},
		{name: "verbatim without format", payload: []byte("=2\r\nab\r\n"), want: []error{resp.ErrProtocol}},
		{name: "big number over the bulk limit", payload: append(append([]byte("("), strings.Repeat("9", 70000)...), "\r\n"...),
			lim: resp.Limits{MaxBulkLen: 64 << 10, MaxLineLen: 128 << 10}, want: []error{resp.ErrLimit}},
		{name: "truncated simple string", payload: []byte("+OK"), end: endClose, want: truncated},
		{name: "truncated array", payload: []byte("*2\r\n:1\r\n"), end: endClose, want: truncated},
		{name: "malformed push mid-stream", payload: []byte(">2\r\n+invalidate\r\n@\r\n+OK\r\n"), want: []error{resp.ErrProtocol}},
	}
	paths := []struct {
		name   string
		inline bool
	}{{"inline", true}, {"reader", false}}
	for _, tc := range cases {
		for _, path := range paths {
			t.Run(tc.name+"/"+path.name, func(t *testing.T) {
				h := startHostile(t, tc.payload, tc.end)
				base, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				c, err := respire.NewClient(base, respire.Options{Addrs: []string{h.ln.Addr().String()}, Limits: tc.lim, ReadTimeout: 300 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx := base
				if !path.inline {
					ctx = context.WithoutCancel(base)
				}
				want := tc.want

				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				v, err := c.Do(ctx, "GET", "k")
				runtime.ReadMemStats(&after)

				switch {
				case err == nil:
					t.Fatalf("GET succeeded with %s", v)
				case base.Err() != nil:
					t.Fatalf("GET hung until its context ended: %v", err)
				case !matchesAny(err, want):
					t.Fatalf("GET: %v; want an error matching one of %v", err, want)
				case !errors.Is(err, conn.ErrOutcomeUnknown):
					t.Fatalf("GET: %v; want it to match conn.ErrOutcomeUnknown (it was written)", err)
				}
				if got := after.TotalAlloc - before.TotalAlloc; got > allocBound {
					t.Errorf("reading the reply allocated %d bytes; want at most %d", got, allocBound)
				}
				// The poisoned connection is gone; a new one meets the same server and
				// fails the same way rather than hanging.
				if _, err := c.Do(ctx, "GET", "k"); err == nil || base.Err() != nil {
					t.Fatalf("second GET: %v (context: %v)", err, base.Err())
				}
			})
		}
	}
}

func matchesAny(err error, targets []error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// s7Frames are valid replies of every RESP3 type, which TestS7RandomCorruption damages.
var s7Frames = []string{
	"+OK\r\n",
	"$5\r\nhello\r\n",
	"*3\r\n$1\r\na\r\n:5\r\n_\r\n",
	"%2\r\n+k\r\n,1.5\r\n+n\r\n(12345678901234567890\r\n",
	"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n",
	"~2\r\n#t\r\n#f\r\n",
	"=7\r\ntxt:abc\r\n",
	"!9\r\nERR inner\r\n",
	">3\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n*0\r\n+OK\r\n", // a push, then the reply
}

// corrupt damages a frame one of several ways: truncation, a changed byte, a lying
// length, deep nesting or trailing garbage. It reports how the server should end.
func corrupt(rng *rand.Rand, frame string) ([]byte, hostileEnd) {
	b := []byte(frame)
	end := hostileEnd(rng.IntN(2)) // stall or close
	switch rng.IntN(5) {
	case 0:
		return b[:rng.IntN(len(b))], endClose
	case 1:
		b[rng.IntN(len(b))] = byte(rng.IntN(256))
	case 2:
		// Replace the first length or integer with a random, often absurd, one.
		if i := strings.IndexAny(frame, "$*%~>|=!:"); i >= 0 {
			if j := strings.Index(frame[i:], "\r\n"); j > 0 {
				n := strconv.FormatInt(rng.Int64N(1<<62)>>rng.IntN(62), 10)
				if rng.IntN(4) == 0 {
					n = "-" + n
				}
				b = []byte(frame[:i+1] + n + frame[i+j:])
			}
		}
	case 3:
		open := []string{"*1\r\n", "%1\r\n+k\r\n", ">1\r\n", "|1\r\n+a\r\n+b\r\n", "~1\r\n"}[rng.IntN(5)]
		b = append([]byte(strings.Repeat(open, 1+rng.IntN(10000))), b...)
	default:
		garbage := make([]byte, 1+rng.IntN(64))
		for i := range garbage {
			garbage[i] = byte(rng.IntN(256))
		}
		b = append(b, garbage...)
	}
	return b, end
}

// s7Causes are what a hostile reply may legitimately end in: the call fails with one of
// these under ErrOutcomeUnknown, or gets a server error or a reply.
var s7Causes = []error{resp.ErrProtocol, io.EOF, io.ErrUnexpectedEOF, os.ErrDeadlineExceeded,
	syscall.ECONNRESET, syscall.EPIPE, conn.ErrUnexpectedReply}

// TestS7RandomCorruption serves randomly damaged replies, seeded, for the scenario's
// budget. Each GET is an operation of the history; a violation is a call that fails
// with an untyped error or one not marked outcome-unknown, that outlives its context,
// or whose reply cost more than the allocation bound.
func TestS7RandomCorruption(t *testing.T) {
	const allocBound = 8 << 20
	fig, rng := newFigure(t, "S7")
	rec := history.NewRecorder()
	deadline := time.Now().Add(Budget(3*time.Second, 20*time.Minute))
	var before, after runtime.MemStats
	skipped := 0
	for i := 0; time.Now().Before(deadline); i++ {
		frame := s7Frames[rng.IntN(len(s7Frames))]
		payload, end := corrupt(rng, frame)
		h := newHostile(t, payload, end)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		if rng.IntN(2) == 0 {
			ctx = context.WithoutCancel(ctx) // the reader goroutine's path
		}
		c, err := respire.NewClient(ctx, respire.Options{Addrs: []string{h.ln.Addr().String()},
			ReadTimeout: 200 * time.Millisecond})
		if err != nil {
			// The handshake shares the short read timeout, which a loaded machine can
			// miss; such a round tests nothing and is counted, not failed.
			cancel()
			h.close()
			skipped++
			continue
		}
		call := rec.Begin(0, "get", payload)
		runtime.ReadMemStats(&before)
		v, err := c.Do(ctx, "GET", "k")
		runtime.ReadMemStats(&after)
		var se *resp.ServerError
		switch {
		case err == nil:
			call.End(history.OK, v.String(), nil)
		case errors.As(err, &se):
			call.End(history.Failed, nil, err)
		default:
			call.End(history.Unknown, nil, err)
			if !errors.Is(err, conn.ErrOutcomeUnknown) || !matchesAny(err, s7Causes) {
				fig.check([]history.Violation{{Checker: "S7 typed error",
					Detail: fmt.Sprintf("reply %q: %v", payload, err)}})
			}
		}
		// Lengths must cost nothing until bytes arrive; bytes that do arrive may cost a
		// parsed value each (80 bytes for a 3-byte "_\r\n") in every retry of the read.
		if got, bound := after.TotalAlloc-before.TotalAlloc, allocBound+uint64(400*len(payload)); got > bound {
			fig.check([]history.Violation{{Checker: "S7 bounded memory",
				Detail: fmt.Sprintf("reply of %d bytes cost %d bytes (bound %d)", len(payload), got, bound)}})
		}
		c.Close()
		cancel()
		h.close()
		fig.ops++
		fig.faults++
	}
	ops := rec.Ops()
	if len(ops) == 0 {
		t.Fatalf("no round connected (%d handshakes timed out)", skipped)
	}
	t.Logf("%d rounds whose handshake timed out on a loaded machine", skipped)
	t.Logf("%d replies read, %d server errors, %d failed calls", history.Count(ops, "get", history.OK),
		history.Count(ops, "get", history.Failed), history.Count(ops, "get", history.Unknown))
	fig.report(t)
}

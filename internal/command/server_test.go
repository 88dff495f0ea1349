package command

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests compare the evaluator with a real redis-server's own answer,
// COMMAND GETKEYS, which runs the server's key extraction without executing anything.

// startRedis starts a redis-server on a free loopback port in a temporary directory,
// with persistence off, and returns a connection to it. Both are closed when the test
// ends.
func startRedis(t *testing.T) *redisConn {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (%v): install it with apt-get install redis-server", err)
	}
	// The port can be taken between choosing and binding it; try a few.
	var lastErr error
	for range 3 {
		c, err := tryStartRedis(t, path)
		if err == nil {
			return c
		}
		lastErr = err
	}
	t.Fatal(lastErr)
	return nil
}

func tryStartRedis(t *testing.T, path string) (*redisConn, error) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()

	logPath := filepath.Join(dir, "redis.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	}

	addr := net.JoinHostPort("127.0.0.1", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c := &redisConn{conn: conn, br: bufio.NewReader(conn)}
			t.Cleanup(func() {
				conn.Close()
				stop()
			})
			return c, nil
		}
		if time.Now().After(deadline) {
			stop()
			out, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("redis-server on %s did not start: %v\n%s", addr, err, out)
		}
		time.Sleep(10 * time.Millisecond) // polling for the listener, with a deadline
	}
}

// redisConn is the least client that can ask COMMAND GETKEYS: it does not depend on the
// library's own codec, which it is meant to help test.
type redisConn struct {
	conn net.Conn
	br   *bufio.Reader
}

type serverError string

func (e serverError) Error() string { return string(e) }

// do sends args as bulk strings and returns the reply: string, int64, nil, []any, or a
// serverError as the error.
func (c *redisConn) do(args ...string) (any, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := c.conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return nil, err
	}
	return c.read()
}

func (c *redisConn) read() (any, error) {
	line, err := c.br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("bad reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, serverError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > 1<<20 {
			return nil, fmt.Errorf("bad bulk length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.br, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > 1<<16 {
			return nil, fmt.Errorf("bad array length %q", body)
		}
		var elems []any
		for range n {
			v, err := c.read()
			if err != nil {
				var se serverError
				if errors.As(err, &se) {
					elems = append(elems, se)
					continue
				}
				return nil, err
			}
			elems = append(elems, v)
		}
		return elems, nil
	}
	return nil, fmt.Errorf("bad reply line %q", line)
}

// getKeys asks the server for the keys of args. ok is false when the server refuses
// the arguments (wrong arity, invalid numkeys...), so there is nothing to compare.
func (c *redisConn) getKeys(t *testing.T, args []string) (keys []string, ok bool) {
	t.Helper()
	reply, err := c.do(append([]string{"COMMAND", "GETKEYS"}, args...)...)
	var se serverError
	switch {
	case errors.As(err, &se) && strings.Contains(string(se), "no key arguments"):
		return nil, true
	case errors.As(err, &se):
		return nil, false
	case err != nil:
		t.Fatalf("COMMAND GETKEYS %q: %v", args, err)
	}
	list, isList := reply.([]any)
	if !isList {
		t.Fatalf("COMMAND GETKEYS %q: reply %#v", args, reply)
	}
	for _, k := range list {
		s, isString := k.(string)
		if !isString {
			t.Fatalf("COMMAND GETKEYS %q: element %#v", args, k)
		}
		keys = append(keys, s)
	}
	return keys, true
}

// ourKeys returns the arguments PrefixableKeyIndexes finds (the server's GETKEYS, too,
// leaves out not_key channels), sorted for comparison with the server's answer.
func ourKeys(args []string) []string {
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	var keys []string
	for _, i := range PrefixableKeyIndexes(anyArgs, nil) {
		keys = append(keys, args[i])
	}
	slices.Sort(keys)
	return keys
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// serverCases are real commands with their arguments; each must be accepted by
// COMMAND GETKEYS and give the same keys as the evaluator.
var serverCases = []string{
	"GET k",
	"SET k v EX 10 GET",
	"MGET a b c",
	"MSET k1 v1 k2 v2",
	"MSETNX k1 v1 k2 v2 k3 v3",
	"DEL a b c",
	"EVAL script 2 k1 k2 a1 a2",
	"EVALSHA 0123 1 k1 a1",
	"EVAL_RO script 1 k1",
	"FCALL fn 2 k1 k2 a",
	"FCALL_RO fn 1 k1",
	"ZUNIONSTORE dst 2 a b WEIGHTS 1 2",
	"ZINTERSTORE dst 3 a b c AGGREGATE MAX",
	"ZDIFFSTORE dst 2 a b",
	"ZUNION 2 a b WITHSCORES",
	"ZINTERCARD 2 a b LIMIT 3",
	"LMPOP 2 a b LEFT COUNT 2",
	"ZMPOP 1 z MIN",
	"BLMPOP 0 2 a b RIGHT",
	"BZMPOP 0 3 a b c MAX COUNT 1",
	"XREAD STREAMS k1 k2 0 0",
	"XREAD COUNT 10 BLOCK 100 STREAMS k1 0",
	"XREAD STREAMS streams streams 0 0",
	"XREADGROUP GROUP g c STREAMS k1 k2 > >",
	"XREADGROUP GROUP streams c COUNT 1 NOACK STREAMS k >",
	"XREADGROUP GROUP g streams BLOCK 0 STREAMS k1 k2 > >",
	"SORT k",
	"SORT k STORE dst",
	"SORT k BY w_* LIMIT 0 10 GET # GET o_* DESC ALPHA STORE dst",
	"SORT k BY store GET store",
	"SORT_RO k BY w_* GET #",
	"MIGRATE host 6379 '' 0 5000 KEYS k1 k2",
	"MIGRATE host 6379 key 0 5000",
	"MIGRATE host 6379 key 0 5000 COPY REPLACE AUTH pw",
	"MIGRATE host 6379 '' 0 5000 AUTH2 keys keys KEYS a b",
	"GEORADIUS g 0 0 10 km",
	"GEORADIUS g 0 0 10 km STORE dst",
	"GEORADIUS g 0 0 10 km WITHDIST STOREDIST dst",
	"GEORADIUSBYMEMBER g m 10 km STORE dst",
	"GEOSEARCHSTORE dst src FROMMEMBER m BYRADIUS 1 km",
	"BITOP AND dst a b",
	"BITOP NOT dst a",
	"OBJECT ENCODING k",
	"XINFO STREAM k",
	"XINFO STREAM k FULL COUNT 5",
	"XGROUP CREATE k g $",
	"MEMORY USAGE k SAMPLES 5",
	"RENAME a b",
	"SMOVE a b m",
	"LMOVE a b LEFT RIGHT",
	"BLMOVE a b LEFT RIGHT 0",
	"BLPOP k1 k2 0",
	"BZPOPMIN z1 z2 0",
	"PFCOUNT a b",
	"PFMERGE dst a b",
	"SINTERCARD 2 a b",
	"SINTERSTORE dst a b",
	"LCS a b",
	"COPY a b",
	"WATCH a b",
	"SUBSCRIBE a b",
	"PUBLISH ch msg",
	"SPUBLISH ch msg",
	"SSUBSCRIBE a b",
	"KEYS *",
	"SCAN 0",
	"PING hello",
	"HSET h f v",
	"get k",
	"xinfo stream k",
}

func TestKeyIndexesAgreesWithServer(t *testing.T) {
	c := startRedis(t)
	for _, line := range serverCases {
		args := make([]string, 0, 8)
		for _, w := range strings.Fields(line) {
			if w == "''" {
				w = ""
			}
			args = append(args, w)
		}
		want, ok := c.getKeys(t, args)
		if !ok {
			t.Errorf("COMMAND GETKEYS %s: the server refused it; fix the case", line)
			continue
		}
		if got := ourKeys(args); !slices.Equal(got, sorted(want)) {
			t.Errorf("%s: keys %q, server says %q", line, got, want)
		}
	}
}

// TestKeyIndexesSweepServer runs every command and subcommand of the table, at its
// arity and a few arguments more, against the server. Each argument is its own index
// in decimal ("1", "2", ...), so numkeys arguments take several values and the
// server's key names map back to positions.
func TestKeyIndexesSweepServer(t *testing.T) {
	c := startRedis(t)
	compared := 0
	for _, name := range allNames() {
		arity := commands[name[0]].Arity
		if len(name) > 1 {
			arity = commands[name[0]].Sub[name[1]].Arity
		}
		lengths := []int{arity}
		if arity < 0 {
			lengths = []int{-arity, -arity + 1, -arity + 2, -arity + 3, -arity + 5}
		}
		for _, n := range lengths {
			args := slices.Clone(name)
			for i := len(args); i < n; i++ {
				args = append(args, strconv.Itoa(i))
			}
			want, ok := c.getKeys(t, args)
			if !ok {
				continue
			}
			compared++
			if got := ourKeys(args); !slices.Equal(got, sorted(want)) {
				t.Errorf("%q: keys %q, server says %q", args, got, want)
			}
		}
	}
	t.Logf("compared %d argument lists with the server", compared)
	if compared < 300 {
		t.Errorf("only %d argument lists compared", compared)
	}
}

// TestKeyIndexesRandomServer compares random argument lists built from the keywords
// the movable-key commands look for, with a fixed seed. Two kinds of disagreement are
// expected and counted instead of failed:
//   - a malformed command whose key specs the server cannot evaluate, so it falls back
//     to the command's own getkeys code, which the evaluator does not imitate;
//   - SORT with a STORE destination spelled like an option, where the server's
//     sortGetKeys disagrees with its own execution (see sortKeys); the server's answer
//     must then be exactly what sortGetKeys computes;
//   - XREAD and XREADGROUP whose STREAMS keyword search stops at the wrong argument or
//     whose options are malformed (see xreadKeys); the server's answer must then be
//     exactly what the key spec gives.
func TestKeyIndexesRandomServer(t *testing.T) {
	c := startRedis(t)
	vocab := []string{"0", "1", "2", "3", "-1", "", "k", "STREAMS", "streams", "STORE", "STOREDIST",
		"KEYS", "keys", "BY", "GET", "LIMIT", "AUTH", "AUTH2", "COPY", "COUNT", "BLOCK", "GROUP", "NOACK", ">"}
	movable := []string{"xread", "xreadgroup", "georadius", "georadiusbymember", "migrate", "sort", "sort_ro",
		"eval", "fcall", "zunionstore", "zinter", "lmpop", "blmpop", "bzmpop", "sintercard", "zdiffstore",
		"bitop", "mset", "blpop", "set", "object encoding", "xinfo stream", "spublish"}
	rng := rand.New(rand.NewPCG(1, 2))
	var compared, fallbacks, sortQuirks, xreadSpecs int
	for range 20000 {
		args := strings.Fields(movable[rng.IntN(len(movable))])
		for range rng.IntN(10) {
			args = append(args, vocab[rng.IntN(len(vocab))])
		}
		want, ok := c.getKeys(t, args)
		if !ok {
			continue
		}
		compared++
		got := ourKeys(args)
		if slices.Equal(got, sorted(want)) {
			continue
		}
		anyArgs := make([]any, len(args))
		for i, a := range args {
			anyArgs[i] = a
		}
		switch {
		case strings.EqualFold(args[0], "sort") && slices.Equal(sorted(want), sortGetKeysModel(args)):
			sortQuirks++
		case (strings.EqualFold(args[0], "xread") || strings.EqualFold(args[0], "xreadgroup")) &&
			specsValid(anyArgs) && slices.Equal(sorted(want), specKeys(args)):
			xreadSpecs++
		case !specsValid(anyArgs):
			fallbacks++
		default:
			t.Errorf("%q: keys %q, server says %q", args, got, want)
		}
	}
	t.Logf("compared %d random argument lists with the server: %d fell back to getkeys code, "+
		"%d hit the SORT STORE quirk, %d XREAD lists where the spec and the command disagree",
		compared, fallbacks, sortQuirks, xreadSpecs)
	if compared < 5000 {
		t.Errorf("only %d random argument lists compared", compared)
	}
}

// specsValid reports whether the server can evaluate every key spec of args without
// falling back to the command's own key-finding code.
func specsValid(args []any) bool {
	info, ok := LookupArgs(args)
	if !ok {
		return true
	}
	for _, ks := range info.KeySpecs {
		if ks.Flags&KeySpecNotKey != 0 {
			continue
		}
		if _, ok := ks.appendKeys(args, nil); !ok {
			return false
		}
	}
	return true
}

// specKeys returns, sorted, the arguments the key specs of args select, as the server's
// getKeysUsingKeySpecs does.
func specKeys(args []string) []string {
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	info, _ := LookupArgs(anyArgs)
	var pos []int
	for _, ks := range info.KeySpecs {
		pos, _ = ks.appendKeys(anyArgs, pos)
	}
	var keys []string
	for _, p := range pos {
		keys = append(keys, args[p])
	}
	return sorted(keys)
}

// sortGetKeysModel is the server's sortGetKeys (db.c, Redis 7.0), sorted: the sort key,
// and the argument after the last STORE, where LIMIT, GET and BY skip their values but
// STORE does not.
func sortGetKeysModel(args []string) []string {
	keys := []string{args[1]}
	store := -1
	for i := 2; i < len(args); i++ {
		switch strings.ToLower(args[i]) {
		case "limit":
			i += 2
		case "get", "by":
			i++
		case "store":
			if i+1 < len(args) {
				store = i + 1
			}
		}
	}
	if store > 0 {
		keys = append(keys, args[store])
	}
	return sorted(keys)
}

// TestHandRulesFollowExecution runs the commands where KeyIndexes deliberately departs
// from the server's COMMAND GETKEYS and shows, from what the commands actually do, that
// KeyIndexes names the keys they touch.
func TestHandRulesFollowExecution(t *testing.T) {
	c := startRedis(t)
	must := func(args ...string) any {
		t.Helper()
		v, err := c.do(args...)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return v
	}
	keysOf := func(args []string) []string {
		anyArgs := make([]any, len(args))
		for i, a := range args {
			anyArgs[i] = a
		}
		var keys []string
		for _, p := range KeyIndexes(anyArgs, nil) {
			keys = append(keys, args[p])
		}
		return keys
	}

	// SORT stores into the last STORE's destination; GETKEYS names the first.
	must("RPUSH", "src", "3", "1", "2")
	sortArgs := []string{"SORT", "src", "STORE", "get", "STORE", "d2"}
	server, _ := c.getKeys(t, sortArgs)
	must(sortArgs...)
	if must("EXISTS", "d2") != int64(1) || must("EXISTS", "get") != int64(0) {
		t.Fatalf("SORT did not store into d2 alone")
	}
	if got := keysOf(sortArgs); !slices.Equal(got, []string{"src", "d2"}) {
		t.Errorf("%q: keys %q, want [src d2] (server's GETKEYS: %q)", sortArgs, got, server)
	}
	t.Logf("%q: GETKEYS says %q", sortArgs, server)

	// XREADGROUP reads stream s even with a group named "streams" after COUNT; the
	// spec's keyword search stops at the group name.
	must("XGROUP", "CREATE", "s", "streams", "$", "MKSTREAM")
	must("XADD", "s", "*", "f", "v")
	xArgs := []string{"XREADGROUP", "COUNT", "1", "GROUP", "streams", "c", "STREAMS", "s", ">"}
	server, _ = c.getKeys(t, xArgs)
	reply := must(xArgs...)
	streams, ok := reply.([]any)
	if !ok || len(streams) != 1 {
		t.Fatalf("%q: reply %#v, want one stream", xArgs, reply)
	}
	if entry, _ := streams[0].([]any); len(entry) == 0 || entry[0] != "s" {
		t.Fatalf("%q: reply %#v, want stream s", xArgs, reply)
	}
	if got := keysOf(xArgs); !slices.Equal(got, []string{"s"}) {
		t.Errorf("%q: keys %q, want [s] (server's GETKEYS: %q)", xArgs, got, server)
	}
	t.Logf("%q: GETKEYS says %q", xArgs, server)
}

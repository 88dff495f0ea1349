// Command gen writes table_gen.go, the command key table of package command, from the
// COMMAND reply of a real redis-server.
//
// By default it starts its own redis-server on a free loopback port in a temporary
// directory (persistence off) and stops it when done; -addr uses a running server
// instead. It speaks RESP2 over a plain net.Conn with the small reader in resp.go, so it
// does not depend on the library's resp package (which it would otherwise have to
// build before the table exists).
//
// Usage, from internal/command (go generate does this):
//
//	go run ./gen [-addr host:port] [-server redis-server] [-o table_gen.go]
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	addr := flag.String("addr", "", "address of a running redis-server (default: start one)")
	server := flag.String("server", "redis-server", "redis-server binary to start when -addr is empty")
	out := flag.String("o", "table_gen.go", "output file")
	flag.Parse()

	if err := run(*addr, *server, *out); err != nil {
		log.Fatal(err)
	}
}

func run(addr, server, out string) error {
	if addr == "" {
		srv, err := startServer(server)
		if err != nil {
			return err
		}
		defer srv.stop()
		addr = srv.addr
	}

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return err
	}
	r := newReader(bufio.NewReader(conn))

	info, err := call(conn, r, "INFO", "server")
	if err != nil {
		return err
	}
	version, err := serverVersion(info)
	if err != nil {
		return err
	}

	reply, err := call(conn, r, "COMMAND")
	if err != nil {
		return err
	}
	cmds, err := parseCommands(reply)
	if err != nil {
		return err
	}

	src, err := render(version, cmds)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return err
	}
	subs := 0
	for _, c := range cmds {
		subs += len(c.subs)
	}
	log.Printf("wrote %s: %d commands, %d subcommands, redis-server %s", out, len(cmds), subs, version)
	return nil
}

// call sends one command as a RESP2 array of bulk strings and reads its reply.
func call(conn net.Conn, r *reader, args ...string) (any, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write(b.Bytes()); err != nil {
		return nil, err
	}
	v, err := r.read(0)
	if err != nil {
		return nil, err
	}
	if e, ok := v.(replyError); ok {
		return nil, fmt.Errorf("%s: %s", strings.Join(args, " "), string(e))
	}
	return v, nil
}

func serverVersion(info any) (string, error) {
	text, ok := info.(string)
	if !ok {
		return "", fmt.Errorf("INFO server: unexpected reply %T", info)
	}
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "", errors.New("INFO server: no redis_version")
}

// server is a redis-server process the generator started for itself.
type server struct {
	cmd  *exec.Cmd
	dir  string
	addr string
}

func startServer(bin string) (*server, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%w (install it with: apt-get install redis-server, or pass -addr)", err)
	}
	dir, err := os.MkdirTemp("", "respire-command-gen-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &server{dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	logFile, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logFile.Close()
	s.cmd = exec.Command(path,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	s.cmd.Dir = dir
	s.cmd.Stdout = logFile
	s.cmd.Stderr = logFile
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Poll until the server accepts connections, with a deadline.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on %s did not start: %w", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// command is one entry of the COMMAND reply, in the generator's own terms.
type command struct {
	name     string // lower case; "container|sub" for subcommands
	arity    int
	flags    []string // Go constant names
	first    int      // legacy first/last/step, checked against the key specs
	last     int
	step     int
	keySpecs []keySpec
	subs     []*command
}

type keySpec struct {
	flags []string // Go constant names

	beginKind string // Go constant name
	pos       int
	keyword   string
	startFrom int

	findKind  string // Go constant name
	lastKey   int
	keyStep   int
	limit     int
	keyNumIdx int
	firstKey  int
}

// commandFlags maps COMMAND's flag names to the Go constants of package command. A flag
// missing here stops the generator: a newer server must be looked at by a person, not
// silently dropped.
var commandFlags = map[string]string{
	"write":             "FlagWrite",
	"readonly":          "FlagReadonly",
	"denyoom":           "FlagDenyOOM",
	"module":            "FlagModule",
	"admin":             "FlagAdmin",
	"pubsub":            "FlagPubsub",
	"noscript":          "FlagNoscript",
	"blocking":          "FlagBlocking",
	"loading":           "FlagLoading",
	"stale":             "FlagStale",
	"skip_monitor":      "FlagSkipMonitor",
	"skip_slowlog":      "FlagSkipSlowlog",
	"asking":            "FlagAsking",
	"fast":              "FlagFast",
	"no_auth":           "FlagNoAuth",
	"may_replicate":     "FlagMayReplicate",
	"sentinel":          "FlagSentinel",
	"only_sentinel":     "FlagOnlySentinel",
	"no_mandatory_keys": "FlagNoMandatoryKeys",
	"protected":         "FlagProtected",
	"no_async_loading":  "FlagNoAsyncLoading",
	"no_multi":          "FlagNoMulti",
	"movablekeys":       "FlagMovableKeys",
	"allow_busy":        "FlagAllowBusy",
	"module_no_cluster": "FlagModuleNoCluster",
}

// keySpecFlags maps key specification flag names to the Go constants.
var keySpecFlags = map[string]string{
	"RO":             "KeySpecRO",
	"RW":             "KeySpecRW",
	"OW":             "KeySpecOW",
	"RM":             "KeySpecRM",
	"access":         "KeySpecAccess",
	"update":         "KeySpecUpdate",
	"insert":         "KeySpecInsert",
	"delete":         "KeySpecDelete",
	"not_key":        "KeySpecNotKey",
	"incomplete":     "KeySpecIncomplete",
	"variable_flags": "KeySpecVariableFlags",
}

func parseCommands(reply any) ([]*command, error) {
	list, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("COMMAND: unexpected reply %T", reply)
	}
	cmds := make([]*command, 0, len(list))
	for _, e := range list {
		c, err := parseCommand(e)
		if err != nil {
			return nil, err
		}
		if strings.Contains(c.name, "|") {
			return nil, fmt.Errorf("COMMAND: top-level entry %q looks like a subcommand", c.name)
		}
		cmds = append(cmds, c)
	}
	slices.SortFunc(cmds, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(cmds); i++ {
		if cmds[i].name == cmds[i-1].name {
			return nil, fmt.Errorf("COMMAND: %q listed twice", cmds[i].name)
		}
	}
	return cmds, nil
}

func parseCommand(e any) (*command, error) {
	a, ok := e.([]any)
	if !ok || len(a) < 6 {
		return nil, fmt.Errorf("COMMAND: entry is %T of %d elements, want an array of at least 6", e, len(a))
	}
	name, err := asString(a[0])
	if err != nil {
		return nil, fmt.Errorf("COMMAND: name: %w", err)
	}
	c := &command{name: strings.ToLower(name)}
	wrap := func(what string, err error) error { return fmt.Errorf("COMMAND %s: %s: %w", c.name, what, err) }
	if c.arity, err = asInt(a[1]); err != nil {
		return nil, wrap("arity", err)
	}
	flags, err := asList(a[2])
	if err != nil {
		return nil, wrap("flags", err)
	}
	for _, f := range flags {
		s, err := asString(f)
		if err != nil {
			return nil, wrap("flags", err)
		}
		g, ok := commandFlags[s]
		if !ok {
			return nil, wrap("flags", fmt.Errorf("unknown command flag %q: add it to package command and to the generator", s))
		}
		c.flags = append(c.flags, g)
	}
	if c.first, err = asInt(a[3]); err != nil {
		return nil, wrap("first key", err)
	}
	if c.last, err = asInt(a[4]); err != nil {
		return nil, wrap("last key", err)
	}
	if c.step, err = asInt(a[5]); err != nil {
		return nil, wrap("key step", err)
	}
	if len(a) < 10 {
		return nil, wrap("reply", fmt.Errorf("%d elements, want 10 (key specs need redis-server 7.0 or newer)", len(a)))
	}
	specs, err := asList(a[8])
	if err != nil {
		return nil, wrap("key specs", err)
	}
	for i, s := range specs {
		ks, err := parseKeySpec(s)
		if err != nil {
			return nil, wrap(fmt.Sprintf("key spec %d", i), err)
		}
		c.keySpecs = append(c.keySpecs, ks)
	}
	subs, err := asList(a[9])
	if err != nil {
		return nil, wrap("subcommands", err)
	}
	for _, s := range subs {
		sc, err := parseCommand(s)
		if err != nil {
			return nil, err
		}
		parent, _, ok := strings.Cut(sc.name, "|")
		if !ok || parent != c.name {
			return nil, wrap("subcommands", fmt.Errorf("subcommand %q not named %s|...", sc.name, c.name))
		}
		if len(sc.subs) > 0 {
			return nil, wrap("subcommands", fmt.Errorf("%q has subcommands of its own", sc.name))
		}
		c.subs = append(c.subs, sc)
	}
	slices.SortFunc(c.subs, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	if err := checkLegacy(c); err != nil {
		return nil, wrap("key specs", err)
	}
	return c, nil
}

// checkLegacy cross-checks the legacy (first, last, step) triple against the key specs:
// Redis derives the triple from the specs, so its first key must be where the first
// index spec begins. A disagreement means the generator misread the reply.
func checkLegacy(c *command) error {
	if c.first == 0 {
		return nil
	}
	for _, ks := range c.keySpecs {
		if ks.beginKind == "BeginIndex" && ks.pos == c.first {
			return nil
		}
	}
	return fmt.Errorf("legacy first key %d matches no index key spec", c.first)
}

func parseKeySpec(e any) (keySpec, error) {
	m, err := asMap(e)
	if err != nil {
		return keySpec{}, err
	}
	var ks keySpec
	if v, ok := m["flags"]; ok {
		flags, err := asList(v)
		if err != nil {
			return ks, fmt.Errorf("flags: %w", err)
		}
		for _, f := range flags {
			s, err := asString(f)
			if err != nil {
				return ks, fmt.Errorf("flags: %w", err)
			}
			g, ok := keySpecFlags[s]
			if !ok {
				return ks, fmt.Errorf("unknown key spec flag %q: add it to package command and to the generator", s)
			}
			ks.flags = append(ks.flags, g)
		}
	}

	bsType, bsSpec, err := typedSpec(m, "begin_search")
	if err != nil {
		return ks, err
	}
	switch bsType {
	case "index":
		if ks.pos, err = intField(bsSpec, "index"); err != nil {
			return ks, err
		}
		if ks.pos < 1 {
			return ks, fmt.Errorf("begin_search index %d < 1", ks.pos)
		}
		ks.beginKind = "BeginIndex"
	case "keyword":
		kw, ok := bsSpec["keyword"]
		if !ok {
			return ks, errors.New("begin_search keyword: no keyword")
		}
		if ks.keyword, err = asString(kw); err != nil {
			return ks, fmt.Errorf("begin_search keyword: %w", err)
		}
		if ks.startFrom, err = intField(bsSpec, "startfrom"); err != nil {
			return ks, err
		}
		if ks.keyword == "" || ks.startFrom == 0 {
			return ks, fmt.Errorf("begin_search keyword %q startfrom %d", ks.keyword, ks.startFrom)
		}
		ks.beginKind = "BeginKeyword"
	case "unknown":
		ks.beginKind = "BeginUnknown"
	default:
		return ks, fmt.Errorf("unknown begin_search type %q", bsType)
	}

	fkType, fkSpec, err := typedSpec(m, "find_keys")
	if err != nil {
		return ks, err
	}
	switch fkType {
	case "range":
		if ks.lastKey, err = intField(fkSpec, "lastkey"); err != nil {
			return ks, err
		}
		if ks.keyStep, err = intField(fkSpec, "keystep"); err != nil {
			return ks, err
		}
		if ks.limit, err = intField(fkSpec, "limit"); err != nil {
			return ks, err
		}
		if ks.keyStep < 1 || ks.limit < 0 || (ks.limit > 1 && ks.lastKey != -1) {
			return ks, fmt.Errorf("find_keys range lastkey %d keystep %d limit %d", ks.lastKey, ks.keyStep, ks.limit)
		}
		ks.findKind = "FindRange"
	case "keynum":
		if ks.keyNumIdx, err = intField(fkSpec, "keynumidx"); err != nil {
			return ks, err
		}
		if ks.firstKey, err = intField(fkSpec, "firstkey"); err != nil {
			return ks, err
		}
		if ks.keyStep, err = intField(fkSpec, "keystep"); err != nil {
			return ks, err
		}
		if ks.keyNumIdx < 0 || ks.firstKey <= ks.keyNumIdx || ks.keyStep < 1 {
			return ks, fmt.Errorf("find_keys keynum keynumidx %d firstkey %d keystep %d", ks.keyNumIdx, ks.firstKey, ks.keyStep)
		}
		ks.findKind = "FindKeynum"
	case "unknown":
		ks.findKind = "FindUnknown"
	default:
		return ks, fmt.Errorf("unknown find_keys type %q", fkType)
	}
	return ks, nil
}

// typedSpec reads {type: T, spec: {...}} under key.
func typedSpec(m map[string]any, key string) (string, map[string]any, error) {
	v, ok := m[key]
	if !ok {
		return "", nil, fmt.Errorf("no %s", key)
	}
	tm, err := asMap(v)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", key, err)
	}
	tv, ok := tm["type"]
	if !ok {
		return "", nil, fmt.Errorf("%s: no type", key)
	}
	typ, err := asString(tv)
	if err != nil {
		return "", nil, fmt.Errorf("%s type: %w", key, err)
	}
	spec := map[string]any{}
	if sv, ok := tm["spec"]; ok {
		if spec, err = asMap(sv); err != nil {
			return "", nil, fmt.Errorf("%s spec: %w", key, err)
		}
	}
	return typ, spec, nil
}

func intField(m map[string]any, key string) (int, error) {
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("no %s", key)
	}
	n, err := asInt(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return n, nil
}

func asString(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("want a string, got %T", v)
}

func asInt(v any) (int, error) {
	if n, ok := v.(int64); ok {
		return int(n), nil
	}
	return 0, fmt.Errorf("want an integer, got %T", v)
}

func asList(v any) ([]any, error) {
	if l, ok := v.([]any); ok {
		return l, nil
	}
	return nil, fmt.Errorf("want an array, got %T", v)
}

// asMap reads a RESP2 flattened map (key, value, key, value...).
func asMap(v any) (map[string]any, error) {
	l, err := asList(v)
	if err != nil {
		return nil, err
	}
	if len(l)%2 != 0 {
		return nil, fmt.Errorf("map of %d elements", len(l))
	}
	m := make(map[string]any, len(l)/2)
	for i := 0; i < len(l); i += 2 {
		k, err := asString(l[i])
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		m[k] = l[i+1]
	}
	return m, nil
}

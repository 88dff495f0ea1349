// Command gen writes table_gen.go, the command key table of package command, from the
// COMMAND replies of real servers: recorded replies (raw RESP2 bytes in files) and live
// servers, merged into one table that knows every command any of them knows.
//
// Sources:
//
//   - -dir: every *.COMMAND.resp file of a directory, each the raw RESP2 reply of
//     COMMAND from the server its name gives (redis-7.0.15.COMMAND.resp). go generate
//     reads ../testdata/command, the replies of Redis 6.0.16, 7.0.15, 8.6.3 and
//     Valkey 8.1.1, 9.1.2.
//   - -addr: running servers (comma-separated host:port), asked INFO server and
//     COMMAND over a plain connection.
//   - -start: a redis-server of its own, started from the PATH on a free loopback port
//     in a temporary directory (persistence off) and stopped when done.
//
// Merging: each command (and each subcommand of a container) is taken from the newest
// source that has it, newest by version with Redis before Valkey at equal versions, so
// a command a newer server added (HGETEX, DELEX, DELIFEQ) is in the table with that
// server's key specifications, and a command only older servers have (STRALGO of Redis
// 6) is still known. Redis 6 entries have no key specifications; their legacy key
// positions are used instead (package spec).
//
// It speaks RESP2 over a plain net.Conn with the small reader in resp.go, so it does
// not depend on the library's resp package (which it would otherwise have to build
// before the table exists).
//
// Usage, from internal/command (go generate does the first):
//
//	go run ./gen -dir testdata/command
//	go run ./gen -dir testdata/command -addr 127.0.0.1:6379 [-start] [-server redis-server] [-o table_gen.go]
package main

import (
	"bufio"
	"bytes"
	"cmp"
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

	"github.com/respire/respire/internal/command/spec"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	dir := flag.String("dir", "", "directory of recorded COMMAND replies (NAME-VERSION.COMMAND.resp)")
	addrs := flag.String("addr", "", "comma-separated addresses of running servers")
	start := flag.Bool("start", false, "start a redis-server of its own and include it")
	server := flag.String("server", "redis-server", "redis-server binary for -start")
	out := flag.String("o", "table_gen.go", "output file")
	flag.Parse()

	if err := run(*dir, *addrs, *start, *server, *out); err != nil {
		log.Fatal(err)
	}
}

// source is one server's COMMAND reply.
type source struct {
	server  string // "redis" or "valkey"
	version []int  // 7.0.15 as [7 0 15]
	label   string // how the header names it: redis-7.0.15, or redis-7.0.15@host:port
	cmds    []*spec.Command
}

func run(dir, addrs string, start bool, server, out string) error {
	var sources []*source
	if dir != "" {
		s, err := readDir(dir)
		if err != nil {
			return err
		}
		sources = append(sources, s...)
	}
	var live []string
	if addrs != "" {
		live = strings.Split(addrs, ",")
	}
	if start {
		srv, err := startServer(server)
		if err != nil {
			return err
		}
		defer srv.stop()
		live = append(live, srv.addr)
	}
	for _, addr := range live {
		s, err := askServer(addr)
		if err != nil {
			return err
		}
		sources = append(sources, s)
	}
	if len(sources) == 0 {
		return errors.New("no source: give -dir, -addr or -start")
	}
	slices.SortStableFunc(sources, newerFirst)
	cmds := merge(sources)

	labels := make([]string, len(sources))
	for i, s := range sources {
		labels[i] = s.label
	}
	src, err := render(labels, cmds)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return err
	}
	subs := 0
	for _, c := range cmds {
		subs += len(c.Subs)
	}
	log.Printf("wrote %s: %d commands, %d subcommands, from %s", out, len(cmds), subs, strings.Join(labels, ", "))
	return nil
}

// newerFirst orders sources by version, newest first; Redis before Valkey at equal
// versions, then by label, so the order never depends on how the sources were given.
func newerFirst(a, b *source) int {
	if c := slices.Compare(b.version, a.version); c != 0 {
		return c
	}
	if a.server != b.server {
		if a.server == "redis" {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.label, b.label)
}

// merge takes each command, and each subcommand, from the first source that has it.
func merge(sources []*source) []*spec.Command {
	byName := map[string]*spec.Command{}
	for _, s := range sources {
		for _, c := range s.cmds {
			have, ok := byName[c.Name]
			if !ok {
				cc := *c
				cc.Subs = slices.Clone(c.Subs)
				byName[c.Name] = &cc
				continue
			}
			for _, sub := range c.Subs {
				if !slices.ContainsFunc(have.Subs, func(h *spec.Command) bool { return h.Name == sub.Name }) {
					have.Subs = append(have.Subs, sub)
				}
			}
		}
	}
	cmds := make([]*spec.Command, 0, len(byName))
	for _, c := range byName {
		slices.SortFunc(c.Subs, func(a, b *spec.Command) int { return strings.Compare(a.Name, b.Name) })
		cmds = append(cmds, c)
	}
	slices.SortFunc(cmds, func(a, b *spec.Command) int { return strings.Compare(a.Name, b.Name) })
	return cmds
}

// readDir reads every NAME-VERSION.COMMAND.resp file of dir.
func readDir(dir string) ([]*source, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.COMMAND.resp"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.COMMAND.resp file", dir)
	}
	var out []*source
	for _, f := range files {
		label := strings.TrimSuffix(filepath.Base(f), ".COMMAND.resp")
		server, version, ok := strings.Cut(label, "-")
		if !ok {
			return nil, fmt.Errorf("%s: not named SERVER-VERSION.COMMAND.resp", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		br := bufio.NewReader(bytes.NewReader(b))
		reply, err := newReader(br).read(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if br.Buffered() != 0 {
			return nil, fmt.Errorf("%s: %d bytes after the reply", f, br.Buffered())
		}
		s, err := newSource(server, version, label, reply)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func newSource(server, version, label string, reply any) (*source, error) {
	if e, ok := reply.(replyError); ok {
		return nil, fmt.Errorf("COMMAND: %s", string(e))
	}
	v, err := parseVersion(version)
	if err != nil {
		return nil, err
	}
	cmds, err := spec.ParseAll(reply)
	if err != nil {
		return nil, err
	}
	if err := checkFlags(cmds); err != nil {
		return nil, err
	}
	return &source{server: server, version: v, label: label, cmds: cmds}, nil
}

func parseVersion(s string) ([]int, error) {
	var v []int
	for f := range strings.SplitSeq(s, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("version %q: %w", s, err)
		}
		v = append(v, n)
	}
	return v, nil
}

// checkFlags stops the generator on a flag or policy tip it does not know: a newer server must be
// looked at by a person, not silently dropped.
func checkFlags(cmds []*spec.Command) error {
	for _, c := range cmds {
		for _, f := range c.Flags {
			if _, ok := commandFlags[f]; !ok {
				return fmt.Errorf("COMMAND %s: unknown command flag %q: add it to package command and to the generator", c.Name, f)
			}
		}
		for _, ks := range c.KeySpecs {
			for _, f := range ks.Flags {
				if _, ok := keySpecFlags[f]; !ok {
					return fmt.Errorf("COMMAND %s: unknown key spec flag %q: add it to package command and to the generator", c.Name, f)
				}
			}
		}
		if p := c.Tip("request_policy"); p != "" && requestPolicies[p] == "" {
			return fmt.Errorf("COMMAND %s: unknown request_policy %q: add it to package command and to the generator", c.Name, p)
		}
		if p := c.Tip("response_policy"); p != "" && responsePolicies[p] == "" {
			return fmt.Errorf("COMMAND %s: unknown response_policy %q: add it to package command and to the generator", c.Name, p)
		}
		if err := checkFlags(c.Subs); err != nil {
			return err
		}
	}
	return nil
}

// askServer reads a live server's INFO server and COMMAND.
func askServer(addr string) (*source, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return nil, err
	}
	r := newReader(bufio.NewReader(conn))
	info, err := call(conn, r, "INFO", "server")
	if err != nil {
		return nil, err
	}
	server, version, err := serverVersion(info)
	if err != nil {
		return nil, err
	}
	reply, err := call(conn, r, "COMMAND")
	if err != nil {
		return nil, err
	}
	return newSource(server, version, server+"-"+version+"@"+addr, reply)
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

// serverVersion reads which server INFO describes: Valkey reports valkey_version (and,
// for compatibility, a redis_version that is not its own).
func serverVersion(info any) (server, version string, err error) {
	text, ok := info.(string)
	if !ok {
		return "", "", fmt.Errorf("INFO server: unexpected reply %T", info)
	}
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "valkey_version:"); ok {
			return "valkey", v, nil
		}
	}
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return "redis", v, nil
		}
	}
	return "", "", errors.New("INFO server: no redis_version")
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

// commandFlags maps COMMAND's flag names to the Go constants of package command ("" for
// a flag the table leaves out). A flag missing here stops the generator: a newer server
// must be looked at by a person, not silently dropped.
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
	// Valkey 8's name for skip_slowlog (its slow log became the command log).
	"skip_commandlog": "FlagSkipSlowlog",
	// Redis 6.x flags that 7.0 replaced with command tips; nothing here depends on them.
	"random":          "",
	"sort_for_script": "",
}

// requestPolicies maps the values of the request_policy tip to the Go constants.
var requestPolicies = map[string]string{
	"all_nodes":   "RequestAllNodes",
	"all_shards":  "RequestAllShards",
	"multi_shard": "RequestMultiShard",
	"special":     "RequestSpecial",
}

// responsePolicies maps the values of the response_policy tip to the Go constants.
var responsePolicies = map[string]string{
	"one_succeeded":   "ResponseOneSucceeded",
	"all_succeeded":   "ResponseAllSucceeded",
	"agg_logical_and": "ResponseAggLogicalAnd",
	"agg_logical_or":  "ResponseAggLogicalOr",
	"agg_min":         "ResponseAggMin",
	"agg_max":         "ResponseAggMax",
	"agg_sum":         "ResponseAggSum",
	"special":         "ResponseSpecial",
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

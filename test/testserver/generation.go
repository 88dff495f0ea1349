package testserver

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Server generations [StartGeneration] starts. Redis7 is the redis-server installed
// from the machine's packages (7.0.15 on Debian bookworm); the others are built from
// Debian source packages by build-servers.sh, as servers.txt lists them.
const (
	Redis60  = "redis-6.0"  // Redis 6.0.16: no SET IFEQ, DELEX or DELIFEQ; 6.x error wording
	Redis7   = "redis-7"    // the installed redis-server
	Redis86  = "redis-8.6"  // Redis 8.6.3: SET IFEQ, DELEX
	Valkey81 = "valkey-8.1" // Valkey 8.1.1: SET IFEQ only
	Valkey91 = "valkey-9.1" // Valkey 9.1.2: SET IFEQ, DELIFEQ
)

// Generations lists every generation, oldest first, for tests that run once per
// server.
var Generations = []string{Redis60, Redis7, Redis86, Valkey81, Valkey91}

// serversEnv overrides the cache directory build-servers.sh builds into.
const serversEnv = "RESPIRE_SERVERS_DIR"

//go:embed servers.txt
var serversList string

// generation is one line of servers.txt.
type generation struct {
	name, pkg, suite, version, binary string
}

// lookupGeneration returns the servers.txt line of name.
func lookupGeneration(list, name string) (generation, bool, error) {
	sc := bufio.NewScanner(strings.NewReader(list))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 5 {
			return generation{}, false, fmt.Errorf("testserver: servers.txt: %q has %d fields, want 5", line, len(f))
		}
		if f[0] == name {
			return generation{name: f[0], pkg: f[1], suite: f[2], version: f[3], binary: f[4]}, true, nil
		}
	}
	return generation{}, false, sc.Err()
}

// serversDir is where build-servers.sh puts its binaries: $RESPIRE_SERVERS_DIR, or
// respire-servers in the user's cache directory ($XDG_CACHE_HOME or ~/.cache), as the
// script computes it.
func serversDir() (string, error) {
	if d := os.Getenv(serversEnv); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testserver: no cache directory for the built servers (set %s): %w", serversEnv, err)
	}
	return filepath.Join(d, "respire-servers"), nil
}

// GenerationBinary returns the absolute path of the server binary of generation name
// (one of [Generations]): redis-server from PATH for Redis7, otherwise the binary
// build-servers.sh built into its cache. When that binary is missing, the error
// matches [ErrNotBuilt] and says why (the reason the build recorded, if it ran) and
// which Debian source package `make servers` builds it from.
func GenerationBinary(name string) (string, error) {
	if name == Redis7 {
		return findBinary("")
	}
	g, ok, err := lookupGeneration(serversList, name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("testserver: unknown server generation %q (want one of %s)", name, strings.Join(Generations, ", "))
	}
	dir, err := serversDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, g.pkg+"-"+g.version, g.binary)
	if info, err := os.Stat(bin); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
		return bin, nil
	}
	why := "`make servers` has not built it yet"
	if b, err := os.ReadFile(filepath.Join(dir, g.pkg+"-"+g.version+".unavailable")); err == nil {
		why = "the last build recorded: " + strings.TrimSpace(string(b))
	}
	return "", fmt.Errorf("%w: %s (%s %s from Debian source package %s, %s) is not in %s; %s",
		ErrNotBuilt, name, g.binary, g.version, g.pkg, g.suite, dir, why)
}

// StartGeneration starts a server of generation name as [Start] does with cfg (whose
// Binary must be empty: the generation chooses it). It skips the test, saying why,
// when the generation's binary has not been built; the build happens in `make
// servers`, never in a test. The built generations have no TLS (they are built with
// BUILD_TLS=no), so cfg may ask for TLS only of Redis7. It must be called from a test,
// not from TestMain.
func StartGeneration(t testing.TB, name string, cfg Config) *Server {
	t.Helper()
	if cfg.Binary != "" {
		t.Fatalf("testserver: StartGeneration(%q) with Config.Binary %q: the generation chooses the binary", name, cfg.Binary)
		return nil
	}
	if cfg.wantsTLS() && name != Redis7 {
		t.Fatalf("testserver: StartGeneration(%q) with TLS: the built generations have no TLS", name)
		return nil
	}
	bin, err := GenerationBinary(name)
	switch {
	case errors.Is(err, ErrNotBuilt):
		t.Skipf("%v", err)
		return nil
	case err != nil:
		t.Fatalf("%v", err)
		return nil
	}
	cfg.Binary = bin
	cfg.noChannelRules = name == Redis60
	return Start(t, cfg)
}

package testserver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each generation that was built starts, with an ACL file (Redis 6.0 refuses the
// channel rules of later versions in it), and reports its own version: a cache that
// held the wrong binary under a generation's name would fail here.
func TestStartGeneration(t *testing.T) {
	for _, name := range Generations {
		t.Run(name, func(t *testing.T) {
			s := StartGeneration(t, name, Config{Users: []User{{Name: "app", Password: "pw", Rules: []string{"+@all", "~*"}}}})
			if got, err := s.DoAs(testContext(t), "app", "pw", "PING"); got != "PONG" || err != nil {
				t.Fatalf("PING as an ACL user: %q %v", got, err)
			}
			if name == Redis7 {
				return
			}
			g, _, err := lookupGeneration(serversList, name)
			if err != nil {
				t.Fatal(err)
			}
			// Valkey reports redis_version 7.2.4 for compatibility, its own in valkey_version.
			field := versionKey
			if g.pkg == "valkey" {
				field = "valkey_version"
			}
			if got := infoField(s.Do(t, "INFO", "server"), field); got != g.version {
				t.Fatalf("%s: INFO %s = %q, want %s", name, field, got, g.version)
			}
		})
	}
}

// A generation missing from the cache is ErrNotBuilt, named with its Debian source
// package and the reason the build recorded; an unknown name is another error.
func TestGenerationBinaryNotBuilt(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(serversEnv, dir)
	_, err := GenerationBinary(Valkey91)
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "source package valkey") || !strings.Contains(err.Error(), "make servers") {
		t.Fatalf("not built: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "redis-6.0.16.unavailable"), []byte("Debian source package redis from bullseye: 404\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := GenerationBinary(Redis60); !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "from bullseye: 404") {
		t.Fatalf("recorded failure: %v", err)
	}
	if _, err := GenerationBinary("redis-5.0"); err == nil || errors.Is(err, ErrNotBuilt) {
		t.Fatalf("unknown generation: %v", err)
	}
	if _, _, err := lookupGeneration("redis-6.0 redis bullseye\n", Redis60); err == nil {
		t.Fatal("a short line of servers.txt was accepted")
	}
	f := newFakeTB(t)
	if s := StartGeneration(f, Redis86, Config{TLS: true}); s != nil || !strings.Contains(f.fatal(t), "no TLS") {
		t.Fatalf("TLS on a built generation: %v", s)
	}
}

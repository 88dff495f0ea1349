package respire

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// The client's own tests that need its internals; those of its exported behaviour are
// in test/integration, whose helpers the ones below mirror. (An in-package test cannot
// import testkit/testclient, which imports this package.)

// TestMain starts one server for the runnable examples (tests start their own) and
// checks for leaked goroutines once everything has run.
func TestMain(m *testing.M) { testserver.ExamplesMain(m) }

var protocols = []int{2, 3}

func newClientT(t *testing.T, opts Options) *Client {
	t.Helper()
	c, err := NewClient(context.Background(), opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func forEachProtocol(t *testing.T, srv *testserver.Server, opts Options, fn func(t *testing.T, c *Client)) {
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			o := opts
			o.Addrs = []string{srv.Addr()}
			o.Protocol = proto
			fn(t, newClientT(t, o))
		})
	}
}

// text is v's text, or "" when it has none.
func text(v resp.Value) string {
	s, _ := v.Text()
	return s
}

// A Dedicated connection is a *Conn of the caller's own to the key's server: its
// commands go as given (no key prefix), a batch comes back in order, and release gives
// it back to the pool, or closes it.
func TestDedicatedConn(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, KeyPrefix: "p:", PoolSize: 1})
	ctx := context.Background()
	cn, release, err := c.Dedicated(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if cn.Addr() != srv.Addr() {
		t.Errorf("Addr %s, want %s", cn.Addr(), srv.Addr())
	}
	res, err := cn.DoMulti(ctx, []any{"SET", "dc", "v"}, []any{"GET", "dc"})
	if err != nil || len(res) != 2 || res[1].Err != nil || res[1].Value.String() != `"v"` {
		t.Fatalf("DoMulti: %v %v", res, err)
	}
	if v, err := cn.Do(ctx, "EXISTS", "p:dc"); err != nil || v.String() != "0" {
		t.Errorf("EXISTS p:dc on the dedicated connection: %v %v, want 0: no prefix applies", v, err)
	}
	release(true)
	// The pool's one connection is back: the next checkout gets it.
	again, release2, err := c.Dedicated(ctx, "k")
	if err != nil || again.cn != cn.cn {
		t.Fatalf("after release(true): %v, the same connection %v", err, again != nil && again.cn == cn.cn)
	}
	release2(false)
	if cn.cn.Err() == nil {
		t.Error("release(false) left the connection open")
	}
}

// TestSentinelErrorsInOneBlock: every exported error variable of the package is in
// errors.go's one var block, with a doc comment of its own, so that go doc and the
// package's Errors section show them together.
func TestSentinelErrorsInOneBlock(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			holds := false
			for _, spec := range g.Specs {
				for _, id := range spec.(*ast.ValueSpec).Names {
					if !id.IsExported() || !strings.HasPrefix(id.Name, "Err") {
						continue
					}
					holds = true
					if name != "errors.go" {
						t.Errorf("%s: %s is declared outside errors.go", fset.Position(id.Pos()), id.Name)
					}
					if spec.(*ast.ValueSpec).Doc == nil {
						t.Errorf("%s: %s has no doc comment of its own", fset.Position(id.Pos()), id.Name)
					}
				}
			}
			if holds {
				blocks++
			}
		}
	}
	if blocks != 1 {
		t.Errorf("the package's sentinel errors are in %d var blocks, want 1", blocks)
	}
}

// FuzzParseURL checks ParseURL on any text: it fails with an error that matches
// ErrInvalidURL or ErrInvalidOptions, or it returns Options that validate, a usable
// configuration. Its seeds are the corpus of internal/redisurl's FuzzParse, which
// fuzzes the parsing of the text alone.
func FuzzParseURL(f *testing.F) {
	const dir = "internal/redisurl/testdata/fuzz/FuzzParse"
	files, err := os.ReadDir(dir)
	if err != nil || len(files) == 0 {
		f.Fatalf("the corpus %s: %d files, %v", dir, len(files), err)
	}
	for _, file := range files {
		b, err := os.ReadFile(filepath.Join(dir, file.Name()))
		if err != nil {
			f.Fatal(err)
		}
		// A corpus file is "go test fuzz v1" and the one argument, string("...").
		_, arg, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		raw, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(arg, "string("), ")"))
		if err != nil {
			f.Fatalf("%s: %q is not a quoted string: %v", file.Name(), arg, err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := ParseURL(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidURL) && !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("%q: error %v matches neither ErrInvalidURL nor ErrInvalidOptions", raw, err)
			}
			return
		}
		if err := o.validate(); err != nil {
			t.Errorf("%q parsed into invalid options: %v", raw, err)
		}
	})
}

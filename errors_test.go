package respire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

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

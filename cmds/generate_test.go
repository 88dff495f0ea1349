package cmds

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// specs is where go generate reads the servers' command specifications from.
const specs = "../../shared/data/command-specs"

// TestGeneratedIsCurrent runs the generator into a temporary directory and compares
// its files with the committed ones, so that a change to the generator or the
// specifications cannot be committed without the code it writes.
func TestGeneratedIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator (go run): skipped with -short")
	}
	if _, err := os.Stat(specs); err != nil {
		t.Skipf("the command specifications are not at %s (the repository's sibling shared/): %v", specs, err)
	}
	abs, err := filepath.Abs(specs)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command("go", "run", "../internal/cmdgen", "-specs", abs, "-o", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generator: %v\n%s", err, msg)
	}
	written, err := filepath.Glob(filepath.Join(out, "*"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := filepath.Glob("*_gen*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(committed) {
		t.Errorf("the generator writes %d files, %d are committed: run go generate ./cmds/", len(written), len(committed))
	}
	for _, w := range written {
		want, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Base(w))
		if err != nil {
			t.Errorf("%s is not committed: run go generate ./cmds/", filepath.Base(w))
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./cmds/", filepath.Base(w))
		}
	}
}

//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestWindowRecordings runs two participants for two rounds with -cpuprofile and
// -trace and checks that every measured window left a CPU profile (gzip-compressed
// protobuf) and an execution trace (its "go 1.x trace" header), under the names the
// flags' documentation gives.
func TestWindowRecordings(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	cpuDir, traceDir := filepath.Join(dir, "cpu"), filepath.Join(dir, "trace")
	runReport(t, []string{"-quick", "-rounds", "2", "-scenarios", "get-par", "-clients", "respire,rueidis",
		"-cpuprofile", cpuDir, "-trace", traceDir, "-json", jsonPath}, jsonPath)
	for _, client := range []string{"respire", "rueidis"} {
		for _, round := range []string{"r1", "r2"} {
			base := "get-par-" + client + "-" + round
			if b := readFile(t, filepath.Join(cpuDir, base+".pprof")); !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
				t.Errorf("%s.pprof: not a gzip-compressed profile: % x", base, b[:min(len(b), 8)])
			}
			if b := readFile(t, filepath.Join(traceDir, base+".trace")); !bytes.HasPrefix(b, []byte("go 1.")) {
				t.Errorf("%s.trace: no trace header: %q", base, b[:min(len(b), 16)])
			}
		}
	}
	entries, err := os.ReadDir(cpuDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Errorf("%d CPU profiles, want 4 (2 participants x 2 rounds, no warm-up)", len(entries))
	}
}

// TestWindowRecordingsBadDirectory: a directory that cannot be made fails the run
// before anything is measured.
func TestWindowRecordingsBadDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-cpuprofile", "-trace"} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"-quick", "-addr", "127.0.0.1:1", flag, filepath.Join(file, "sub")}, &stdout, &stderr)
		if code != exitFailed || stderr.Len() == 0 {
			t.Errorf("%s under a file: exit code %d, stderr %q; want %d and the reason", flag, code, stderr.String(), exitFailed)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatalf("%s is empty", path)
	}
	return b
}

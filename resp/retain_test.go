package resp

import (
	"bufio"
	"strings"
	"testing"
)

// TestLongLineNotRetained reads lines longer than the bufio buffer, which the Reader
// gathers in a buffer of its own, then short ones: a line buffer over keptLine must not
// stay with the Reader, one under it may, and every line must read back whole.
func TestLongLineNotRetained(t *testing.T) {
	tests := []struct {
		name    string
		lineLen int
		wantMax int // the most the Reader may keep afterwards
	}{
		{"under the kept size", keptLine / 2, keptLine},
		{"over the kept size", 4 * keptLine, keptLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			long := strings.Repeat("x", tt.lineLen)
			wire := strings.Repeat("+"+long+"\r\n", 3) + strings.Repeat("+OK\r\n", 3)
			r := NewReader(bufio.NewReaderSize(strings.NewReader(wire), 4096), Limits{MaxLineLen: 8 * keptLine})
			for i := range 6 {
				v, err := r.Read()
				if err != nil {
					t.Fatalf("read %d: %v", i, err)
				}
				want := "OK"
				if i < 3 {
					want = long
				}
				if s, _ := v.Text(); s != want {
					t.Fatalf("read %d: got %d bytes, want %d", i, len(s), len(want))
				}
			}
			if got := cap(r.line); got > tt.wantMax {
				t.Errorf("the Reader keeps a %d-byte line buffer, want at most %d", got, tt.wantMax)
			}
		})
	}
}

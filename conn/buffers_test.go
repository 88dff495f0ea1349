package conn

import (
	"context"
	"strings"
	"testing"

	"github.com/respire/respire/test/testserver"
)

// retainedBuffers returns the bytes of buffer capacity the connection holds between
// commands: its write buffers and its read buffer.
func (c *Conn) retainedBuffers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cap(c.w.buf) + cap(c.w.spare) + c.r.buf.Size()
}

// TestBuffersShrinkAfterBurst writes and reads a few large values, then small ones,
// and checks that the connection gives the burst's memory back: what it keeps must be
// what a connection that only ever saw small values keeps, give or take a small batch.
func TestBuffersShrinkAfterBurst(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	tests := []struct {
		name  string
		value int
	}{
		{"1 MiB values", 1 << 20},
		{"256 KiB values", 256 << 10},
		{"100 KiB values", 100 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(ctx, srv.Addr(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Do(ctx, "PING"); err != nil {
				t.Fatal(err)
			}
			bound := c.retainedBuffers() + 2*keptBuffer
			big := strings.Repeat("v", tt.value)
			for i := range 4 {
				if _, err := c.Do(ctx, "SET", "burst", big); err != nil {
					t.Fatal(err)
				}
				v, err := c.Do(ctx, "GET", "burst")
				if err != nil {
					t.Fatal(err)
				}
				if s, _ := v.Text(); len(s) != tt.value {
					t.Fatalf("GET %d: %d bytes, want %d", i, len(s), tt.value)
				}
			}
			peak := c.retainedBuffers()
			for range 4 {
				if _, err := c.Do(ctx, "SET", "small", "v"); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.retainedBuffers(); got > bound {
				t.Errorf("after the burst the connection keeps %d bytes of buffers (%d at the burst's end), want at most %d", got, peak, bound)
			}
		})
	}
}

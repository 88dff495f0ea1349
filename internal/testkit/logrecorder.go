package testkit

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// LogRecorder is a slog.Handler that keeps every record, rendered as
// "LEVEL message key=value ...", for tests of what a Logger is told. Its zero value is
// ready to use; it is safe for concurrent use.
type LogRecorder struct {
	mu    sync.Mutex
	lines []string
}

// Enabled takes every level.
func (h *LogRecorder) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs returns h itself: the records of the tests that use it carry their own.
func (h *LogRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup returns h itself, as WithAttrs does.
func (h *LogRecorder) WithGroup(string) slog.Handler { return h }

// Handle keeps r.
func (h *LogRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, b.String())
	h.mu.Unlock()
	return nil
}

// Lines returns the records kept so far, oldest first.
func (h *LogRecorder) Lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.lines...)
}

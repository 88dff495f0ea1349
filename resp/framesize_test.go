package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFrameComplete(t *testing.T) {
	whole := []string{
		"+OK\r\n", "$5\r\nhello\r\n", "$-1\r\n", "*-1\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+k\r\n+v\r\n",
		"|1\r\n+a\r\n+b\r\n+value\r\n", ">2\r\n+x\r\n+y\r\n", "_\r\n", ",1.5\r\n", "*0\r\n",
		"$0\r\n\r\n", "=7\r\ntxt:abc\r\n",
	}
	for _, w := range whole {
		if !FrameComplete([]byte(w)) {
			t.Errorf("%q: not complete", w)
		}
		for cut := 0; cut < len(w); cut++ {
			if FrameComplete([]byte(w[:cut])) {
				t.Errorf("%q cut at %d: complete", w, cut)
			}
		}
	}
	// Malformed frames are "complete": reading them fails without waiting.
	for _, bad := range []string{"?x\r\n", "$abc\r\n", "*x\r\n", "$5\n"} {
		if !FrameComplete([]byte(bad)) {
			t.Errorf("%q: malformed but reported incomplete", bad)
		}
	}
}

// Whatever FrameComplete calls complete, the Reader decodes from those bytes alone,
// without asking for more.
func FuzzFrameComplete(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+k\r\n+v\r\n", "$3\r\nab"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !FrameComplete(b) {
			return
		}
		r := NewReader(bufio.NewReaderSize(bytes.NewReader(b), 16), Limits{})
		if _, err := r.Read(); errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("%q: called complete, but reading needed more bytes", b)
		}
	})
}

// A header that declares more than the limits allow is complete, and the Reader refuses
// it from those bytes alone; one within them still waits for its payload.
func TestFrameCompleteWithinLimits(t *testing.T) {
	lim := Limits{MaxBulkLen: 10, MaxAggregateLen: 4}
	cases := []struct {
		frame    string
		complete bool
	}{
		{"$11\r\nabc", true},
		{"$10\r\nabc", false},
		{"*5\r\n:1\r\n", true},
		{"*4\r\n:1\r\n", false},
		{"%3\r\n+k\r\n", true}, // three pairs are six elements
		{"%2\r\n+k\r\n", false},
		{"*2\r\n$11\r\nab", true}, // nested
		{"*99999999999\r\n", true},
	}
	for _, tc := range cases {
		r := NewReader(bufio.NewReaderSize(bytes.NewReader([]byte(tc.frame)), 16), lim)
		if got := r.FrameComplete([]byte(tc.frame)); got != tc.complete {
			t.Errorf("%q: complete %v, want %v", tc.frame, got, tc.complete)
		}
		if !tc.complete {
			continue
		}
		if _, err := r.Read(); !errors.Is(err, ErrLimit) {
			t.Errorf("%q: read %v, want ErrLimit", tc.frame, err)
		}
	}
	if FrameComplete([]byte("$70000\r\nabc")) {
		t.Error("a bulk within the default limits is complete before its payload")
	}
}

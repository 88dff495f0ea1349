package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
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

// FrameComplete calls a frame complete when the Reader decodes or refuses it from those
// bytes alone: called complete, reading needs no more bytes. Called incomplete, reading
// must not decode it nor refuse it for a limit (a caller would wait for bytes the
// Reader never asks for); it may find it malformed, since the scan does not check what
// lines hold. Under the default limits and under small ones.
func FuzzFrameComplete(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+k\r\n+v\r\n", "$3\r\nab",
		"*1\r\n|1\r\n+a\r\n+b\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n", "|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n",
		"*9\r\n+" + strings.Repeat("a", 60), "?", "*1\r\n?"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, lim := range []Limits{{}, fuzzLimits} {
			r := NewReader(bufio.NewReaderSize(bytes.NewReader(b), 16), lim)
			complete := r.FrameComplete(b)
			_, err := r.Read()
			switch needsMore := errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF; {
			case complete && needsMore:
				t.Fatalf("%q (%+v): called complete, but reading needed more bytes", b, lim)
			case !complete && (err == nil || errors.Is(err, ErrLimit)):
				t.Fatalf("%q (%+v): called incomplete, but reading ended at once: %v", b, lim, err)
			}
		}
	})
}

// With every limit small, the frame scan refuses a frame where the Reader does: at the
// header that goes too deep (attributes being at the depth of their value), the line
// that grows too long, the unknown type byte, or the header or string that passes the
// memory limit.
func TestFrameCompleteAgreesWithReader(t *testing.T) {
	small := Limits{MaxBulkLen: 10, MaxDepth: 2, MaxAggregateLen: 4, MaxLineLen: 8}
	mem := Limits{MaxReplyMemory: 3*80 + 4}
	cases := []struct {
		frame    string
		lim      Limits
		complete bool
	}{
		{"*1\r\n*1\r\n*1\r\n", small, true}, // a third level
		{"*1\r\n*1\r\n", small, false},
		{"*1\r\n|1\r\n+a\r\n+b\r\n*1\r\n", small, false}, // the attributed array is at depth 1
		{"*1\r\n|1\r\n+a\r\n+b\r\n*1\r\n*1\r\n", small, true},
		{"+1234567890", small, true}, // longer than MaxLineLen and its CRLF
		{"+123456789", small, false},
		{"*1\r\n:1234567890", small, true},
		{"?", small, true},
		{"!00000000000\r\n", small, true}, // a header line longer than MaxLineLen
		{"!0000000\r\n", small, false},
		{"*1\r\n?", small, true},
		{"|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n|1\r\n+e\r\n+f\r\n", small, true}, // six elements of attributes
		{"|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n|1\r\n+e\r\n", small, false},
		{"*4\r\n", mem, true}, // 320 bytes of Values
		{"*3\r\n", mem, false},
		{"*3\r\n$5\r\n", mem, true},
		{"*3\r\n$4\r\n", mem, false},
		{"*3\r\n+abcde\r\n", mem, true},
		{"*3\r\n+abcd\r\n", mem, false},
		{"*3\r\n:123456\r\n", mem, false}, // an integer holds no string
		{"|1\r\n+a\r\n+b\r\n|1\r\n", mem, true},
		{"|1\r\n+a\r\n+b\r\n", mem, false},
	}
	for _, tc := range cases {
		r := NewReader(bufio.NewReaderSize(bytes.NewReader([]byte(tc.frame)), 16), tc.lim)
		if got := r.FrameComplete([]byte(tc.frame)); got != tc.complete {
			t.Errorf("%q: complete %v, want %v", tc.frame, got, tc.complete)
		}
		_, err := r.Read()
		if needsMore := errors.Is(err, io.ErrUnexpectedEOF); needsMore == tc.complete {
			t.Errorf("%q: the Reader gives %v; complete should be %v", tc.frame, err, !needsMore)
		}
	}
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

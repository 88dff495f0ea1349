package resp

import "bytes"

// FrameComplete reports whether b begins with a whole frame, so that reading it from a
// buffer holding b cannot block. A frame already malformed within b also counts: reading
// it fails at once. It lets a reader that must stay interruptible wait for bytes
// without parsing anything, and parse only what is complete. It judges lengths by the
// default limits; a Reader's own FrameComplete judges them by its own.
func FrameComplete(b []byte) bool {
	l := DefaultLimits()
	return frameCompleteWithin(b, &l)
}

// FrameComplete is the package's FrameComplete for this Reader: a header that declares
// more than r's limits allow counts as complete too, because r refuses it at once with
// ErrLimit. Without this a caller would wait for bytes a hostile server promised and
// never sends, until its read timeout.
func (r *Reader) FrameComplete(b []byte) bool { return frameCompleteWithin(b, &r.lim) }

func frameCompleteWithin(b []byte, l *Limits) bool {
	_, st := frameEnd(b, 0, 0, l)
	return st != frameIncomplete
}

type frameStatus uint8

const (
	frameWhole frameStatus = iota
	frameIncomplete
	frameMalformed
)

// frameScanDepth bounds the scan; deeper frames are left to the reader's own limit.
const frameScanDepth = 128

// frameEnd returns the end of the frame that starts at off. A length over l is
// malformed: the Reader refuses it before waiting for its bytes.
func frameEnd(b []byte, off, depth int, l *Limits) (int, frameStatus) {
	if depth > frameScanDepth {
		return 0, frameMalformed
	}
	if off >= len(b) {
		return 0, frameIncomplete
	}
	nl := bytes.IndexByte(b[off:], '\n')
	if nl < 0 {
		return 0, frameIncomplete
	}
	lineEnd := off + nl + 1
	switch b[off] {
	case '+', '-', ':', '_', ',', '#', '(':
		return lineEnd, frameWhole
	case '$', '!', '=':
		n, ok := scanLength(b[off+1 : lineEnd])
		switch {
		case !ok:
			return 0, frameMalformed
		case n < 0:
			return lineEnd, frameWhole
		case n > l.MaxBulkLen:
			return 0, frameMalformed
		case int64(len(b)-lineEnd) < n+2:
			return 0, frameIncomplete
		}
		return lineEnd + int(n) + 2, frameWhole
	case '*', '~', '>', '%', '|':
		n, ok := scanLength(b[off+1 : lineEnd])
		if !ok || n > aggregateLimit(b[off], l) {
			return 0, frameMalformed
		}
		if b[off] == '%' || b[off] == '|' {
			n *= 2
		}
		if b[off] == '|' {
			n++ // the value the attributes belong to
		}
		end := lineEnd
		for i := int64(0); i < n; i++ {
			var st frameStatus
			if end, st = frameEnd(b, end, depth+1, l); st != frameWhole {
				return 0, st
			}
		}
		return end, frameWhole
	}
	return 0, frameMalformed
}

// aggregateLimit is the most elements the Reader accepts in a header of type t: pairs
// count double, as in readAggregate.
func aggregateLimit(t byte, l *Limits) int64 {
	if t == '%' || t == '|' {
		return l.MaxAggregateLen / 2
	}
	return l.MaxAggregateLen
}

// scanLength parses the length of a header line ending in CRLF; -1 is the RESP2 null.
func scanLength(line []byte) (int64, bool) {
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return 0, false
	}
	digits := line[:len(line)-2]
	if len(digits) == 2 && digits[0] == '-' && digits[1] == '1' {
		return -1, true
	}
	if len(digits) > 1 && digits[0] == '+' { // the reader accepts it, so must the scan
		digits = digits[1:]
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' || n > 1<<40 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, len(digits) > 0
}

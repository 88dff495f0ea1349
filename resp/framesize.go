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
	cost := replyCost{max: l.MaxReplyMemory}
	_, st := frameEnd(b, 0, 0, l, &cost)
	return st != frameIncomplete
}

type frameStatus uint8

const (
	frameWhole frameStatus = iota
	frameIncomplete
	frameMalformed
)

// frameEnd returns the end of the frame that starts at off, nested depth aggregates
// deep. It applies the Reader's checks at the points the Reader does (the type byte,
// a line's length, a header's length, the nesting depth, the reply's memory in cost):
// where the Reader would fail from the bytes in b alone, the frame is malformed.
func frameEnd(b []byte, off, depth int, l *Limits, cost *replyCost) (int, frameStatus) {
	attrs := int64(0) // elements of the attribute frames before the value, as the Reader merges them
	for {
		if off >= len(b) {
			return 0, frameIncomplete
		}
		t := b[off]
		if aggregateKinds[t] == KindInvalid && !lineKind(t) && !bulkKind(t) {
			return 0, frameMalformed
		}
		nl := bytes.IndexByte(b[off:], '\n')
		if nl < 0 {
			// The Reader fails as soon as a line outgrows the limit (lineTooLong).
			if len(b)-off-1 >= l.MaxLineLen+2 {
				return 0, frameMalformed
			}
			return 0, frameIncomplete
		}
		lineEnd := off + nl + 1
		if lineTooLong(b[off+1:lineEnd], l.MaxLineLen+2) {
			// The Reader reads every line, a header's too, under the line limit.
			return 0, frameMalformed
		}
		switch {
		case lineKind(t):
			if linePayload(t) && !cost.addBytes(int64(max(nl-2, 0))) {
				return 0, frameMalformed
			}
			return lineEnd, frameWhole
		case bulkKind(t):
			n, ok := scanLength(b[off+1 : lineEnd])
			switch {
			case !ok:
				return 0, frameMalformed
			case n < 0:
				return lineEnd, frameWhole
			case n > l.MaxBulkLen || !cost.addBytes(n):
				return 0, frameMalformed
			case int64(len(b)-lineEnd) < n+2:
				return 0, frameIncomplete
			}
			end := lineEnd + int(n) + 2
			if b[end-2] != '\r' || b[end-1] != '\n' {
				return 0, frameMalformed
			}
			return end, frameWhole
		}
		n, ok := scanLength(b[off+1 : lineEnd])
		switch {
		case !ok || n > aggregateLimit(t, l):
			return 0, frameMalformed
		case n < 0:
			return lineEnd, frameWhole
		case depth >= l.MaxDepth:
			return 0, frameMalformed
		}
		if t == '%' || t == '|' {
			n *= 2
		}
		if !cost.addElems(n) {
			return 0, frameMalformed
		}
		end := lineEnd
		for i := int64(0); i < n; i++ {
			var st frameStatus
			if end, st = frameEnd(b, end, depth+1, l, cost); st != frameWhole {
				return 0, st
			}
		}
		if t != '|' {
			return end, frameWhole
		}
		// Attributes precede the value they describe, which is at their depth.
		if attrs += n; attrs > l.MaxAggregateLen {
			return 0, frameMalformed
		}
		off = end
	}
}

// lineKind reports whether t is the type byte of a value that is one line.
func lineKind(t byte) bool {
	switch t {
	case '+', '-', ':', '_', ',', '#', '(':
		return true
	}
	return false
}

// bulkKind reports whether t is the type byte of a length-prefixed string.
func bulkKind(t byte) bool { return t == '$' || t == '!' || t == '=' }

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

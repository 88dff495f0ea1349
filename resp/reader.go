package resp

import (
	"bufio"
	"errors"
	"io"
	"math"
	"strconv"
	"unsafe"
)

// Limits bound what a Reader accepts; zero fields take the defaults.
//
// Every length a frame declares is checked against these limits before anything is
// allocated for it, so a corrupt or hostile header costs an error, not memory. The
// defaults accept every reply a server sends in normal use and bound a hostile one.
type Limits struct {
	// MaxBulkLen is the largest bulk string, bulk error, verbatim string or big number;
	// default 512 MiB, the largest string Redis stores (proto-max-bulk-len).
	MaxBulkLen int64
	// MaxDepth is the deepest nesting of aggregates (attributes count); default 8192.
	// A script's nested tables come back at most 7995 deep (Redis 7.0): Lua's stack
	// stops a deeper one, and the server sends its error at that depth instead.
	MaxDepth int
	// MaxAggregateLen is the most elements one aggregate may declare (a map's pairs
	// count double); default 1<<26.
	MaxAggregateLen int64
	// MaxLineLen is the longest line: simple strings and errors (a script's
	// status_reply or error_reply is as long as the string it is given), numbers and
	// headers; default MaxBulkLen.
	MaxLineLen int
	// MaxReplyMemory is the most memory one reply may hold once decoded: 80 bytes (a
	// Value, on 64-bit platforms) per element of every aggregate plus the bytes of
	// every string, counted from the headers before anything is allocated. Without it
	// a reply could cost about 27 times the bytes it arrives in (a Value for each
	// 3-byte null). Default 1 GiB, or twice MaxBulkLen if more: room for a largest
	// string and all around it, and for about 13 million elements.
	MaxReplyMemory int64
}

// valueSize is what one element of an aggregate costs in memory (MaxReplyMemory).
const valueSize = int64(unsafe.Sizeof(Value{}))

// Default limits, for the zero fields of Limits.
const (
	defaultBulkLen     = 512 << 20
	defaultDepth       = 8192
	defaultAggregate   = 1 << 26
	defaultReplyMemory = 1 << 30
)

// DefaultLimits returns the limits a Reader uses for zero fields: 512 MiB bulk strings
// (the largest value Redis stores) and lines, 8192 levels of nesting, 1<<26 elements
// per aggregate and 1 GiB of memory per reply.
func DefaultLimits() Limits { return Limits{}.withDefaults() }

// withDefaults replaces zero (and meaningless negative) fields by the defaults.
func (l Limits) withDefaults() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = defaultBulkLen
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = defaultDepth
	}
	if l.MaxAggregateLen <= 0 {
		l.MaxAggregateLen = defaultAggregate
	}
	if l.MaxLineLen <= 0 {
		l.MaxLineLen = int(min(l.MaxBulkLen, math.MaxInt))
	}
	l.MaxLineLen = min(l.MaxLineLen, math.MaxInt-2) // a line's CRLF is counted on top
	if l.MaxReplyMemory <= 0 {
		l.MaxReplyMemory = defaultReplyMemory
		if l.MaxBulkLen <= math.MaxInt64/2 {
			l.MaxReplyMemory = max(l.MaxReplyMemory, 2*l.MaxBulkLen)
		} else {
			l.MaxReplyMemory = math.MaxInt64
		}
	}
	return l
}

// replyCost counts what a reply being decoded will hold against MaxReplyMemory. The
// Reader and the frame scan (FrameComplete) charge the same amounts at the same points,
// so that the scan calls a frame complete as soon as the Reader would refuse it.
type replyCost struct {
	used, max int64
}

// addBytes charges n bytes of strings; false means over the limit.
func (c *replyCost) addBytes(n int64) bool {
	if n > c.max-c.used {
		return false
	}
	c.used += n
	return true
}

// addElems charges n elements of an aggregate.
func (c *replyCost) addElems(n int64) bool {
	if n > (c.max-c.used)/valueSize {
		return false
	}
	c.used += n * valueSize
	return true
}

// memoryError is the error for a reply over MaxReplyMemory.
func memoryError(max int64) error {
	return limitError("reply larger than " + strconv.FormatInt(max, 10) + " bytes in memory")
}

// bulkChunk is the most a Reader allocates for a bulk payload before its bytes arrive.
// Past it the buffer doubles only when full, so memory stays within twice what the peer
// actually sent, whatever length it declared.
const bulkChunk = 1 << 20

// keptLine is the largest line buffer a Reader keeps for the next long line: one
// exceptional line must not cost its memory for the life of the connection.
const keptLine = 64 << 10

// aggregatePrealloc caps the elements preallocated for an aggregate, for the same reason.
const aggregatePrealloc = 1024

// Small payloads are carved out of shared chunks: a reply of a few bytes then costs a
// fraction of an allocation instead of one. The chunks are append-only, so every string
// carved from one stays immutable; the price is that a retained small string keeps its
// whole chunk (at most arenaChunk bytes) alive.
const (
	arenaChunk = 4 << 10
	arenaMax   = 256
)

// Reader decodes RESP2 and RESP3 values from a buffered stream.
//
// Strings of the values it returns may share memory with each other (see arenaChunk):
// they are ordinary immutable Go strings, but holding one small string can keep a few
// KiB alive. Copy (strings.Clone) what you keep for a long time if that matters.
type Reader struct {
	br    *bufio.Reader
	lim   Limits
	cost  replyCost // of the reply being read
	line  []byte    // reused for lines longer than br's buffer
	arena []byte    // the current chunk for small payloads; only appended to
}

// NewReader returns a Reader decoding from br within lim (zero fields take the
// defaults of DefaultLimits).
func NewReader(br *bufio.Reader, lim Limits) *Reader {
	return &Reader{br: br, lim: lim.withDefaults()}
}

// Read reads one complete top-level value, with any attributes that precede it
// attached (see Value.Attributes).
//
// It returns io.EOF only when the stream ends cleanly between values; a stream that ends
// inside a value gives io.ErrUnexpectedEOF. A malformed or over-limit frame gives a
// *ProtocolError (matching ErrProtocol, and ErrLimit for limit violations), after
// which the stream position is undefined. Other errors are the underlying reader's.
func (r *Reader) Read() (Value, error) {
	t, err := r.br.ReadByte()
	if err != nil {
		return Value{}, err
	}
	r.cost = replyCost{max: r.lim.MaxReplyMemory}
	return r.readTyped(t, 0)
}

// readValue reads a value nested depth aggregates deep.
func (r *Reader) readValue(depth int) (Value, error) {
	t, err := r.br.ReadByte()
	if err != nil {
		return Value{}, unexpected(err)
	}
	return r.readTyped(t, depth)
}

// readTyped reads the value whose type byte t was just consumed.
func (r *Reader) readTyped(t byte, depth int) (Value, error) {
	if t == '|' {
		return r.readAttributed(depth)
	}
	return r.readBody(t, depth)
}

// readAttributed reads one or more attribute maps (the '|' already consumed) and the
// value they describe, which carries them.
func (r *Reader) readAttributed(depth int) (Value, error) {
	var attrs []Value
	for {
		kv, err := r.readAggregate('|', depth)
		if err != nil {
			return Value{}, err
		}
		// Several attribute frames in a row merge; the total is bounded like any map.
		if int64(len(attrs)+len(kv.elems)) > r.lim.MaxAggregateLen {
			return Value{}, limitError("attributes exceed the aggregate limit")
		}
		if attrs == nil {
			attrs = kv.elems
		} else {
			attrs = append(attrs, kv.elems...)
		}
		t, err := r.br.ReadByte()
		if err != nil {
			return Value{}, unexpected(err)
		}
		if t != '|' {
			v, err := r.readBody(t, depth)
			if err != nil {
				return Value{}, err
			}
			v.attrs = attrs
			return v, nil
		}
	}
}

// readBody reads a value other than an attribute, its type byte t consumed.
func (r *Reader) readBody(t byte, depth int) (Value, error) {
	switch t {
	case '+', '-', ':', '_', '#', ',', '(':
		return r.readSimple(t)
	case '$', '!', '=':
		return r.readBulkValue(t)
	case '*', '~', '>', '%':
		return r.readAggregate(t, depth)
	}
	return Value{}, protocolError("unknown type byte " + strconv.QuoteRune(rune(t)))
}

// readSimple reads a line-based value.
func (r *Reader) readSimple(t byte) (Value, error) {
	line, err := r.readLine()
	if err != nil {
		return Value{}, err
	}
	if linePayload(t) && !r.cost.addBytes(int64(len(line))) {
		return Value{}, memoryError(r.cost.max)
	}
	switch t {
	case '+':
		return Value{kind: KindSimpleString, str: internSimple(line)}, nil
	case '-':
		return Value{kind: KindError, str: string(line)}, nil
	case ':':
		n, ok := parseInt(line)
		if !ok {
			return Value{}, protocolError("invalid integer " + quoteLine(line))
		}
		return Value{kind: KindInteger, num: n}, nil
	case '_':
		if len(line) != 0 {
			return Value{}, protocolError("null with payload " + quoteLine(line))
		}
		return Value{kind: KindNull}, nil
	case '#':
		return parseBoolean(line)
	case ',':
		return parseDouble(line)
	default: // '('
		return parseBigNumber(line, r.lim.MaxBulkLen)
	}
}

// linePayload reports whether a line of type t becomes a string its value holds.
func linePayload(t byte) bool { return t == '+' || t == '-' || t == '(' }

// internSimple returns line as a string, without allocating for the replies that
// dominate pipelines.
func internSimple(line []byte) string {
	switch string(line) { // the compiler compares without converting
	case "OK":
		return "OK"
	case "PONG":
		return "PONG"
	case "QUEUED":
		return "QUEUED"
	}
	return string(line)
}

func parseBoolean(line []byte) (Value, error) {
	if len(line) == 1 {
		switch line[0] {
		case 't':
			return Boolean(true), nil
		case 'f':
			return Boolean(false), nil
		}
	}
	return Value{}, protocolError("invalid boolean " + quoteLine(line))
}

// parseDouble accepts what RESP3 allows: inf, -inf, nan and decimal numbers with an
// optional fraction and exponent. The grammar is checked first because
// strconv.ParseFloat also takes forms Redis never sends ("0x1p3", "Infinity", "1_0").
func parseDouble(line []byte) (Value, error) {
	switch string(line) {
	case "inf", "+inf":
		return Double(math.Inf(1)), nil
	case "-inf":
		return Double(math.Inf(-1)), nil
	case "nan", "-nan":
		return Double(math.NaN()), nil
	}
	if !isDecimal(line) {
		return Value{}, protocolError("invalid double " + quoteLine(line))
	}
	// Like hiredis, accept underflow to zero but not overflow to infinity.
	f, err := strconv.ParseFloat(string(line), 64)
	if err != nil {
		return Value{}, &ProtocolError{Reason: "invalid double " + quoteLine(line), Err: err}
	}
	return Double(f), nil
}

// isDecimal reports whether b is [+-]digits[.digits][(e|E)[+-]digits]. Digits may be
// omitted on one side of the point, as C's printf and strtod allow.
func isDecimal(b []byte) bool {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	intDigits := countDigits(b[i:])
	i += intDigits
	fracDigits := 0
	if i < len(b) && b[i] == '.' {
		i++
		fracDigits = countDigits(b[i:])
		i += fracDigits
	}
	if intDigits+fracDigits == 0 {
		return false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		expDigits := countDigits(b[i:])
		if expDigits == 0 {
			return false
		}
		i += expDigits
	}
	return i == len(b)
}

func countDigits(b []byte) int {
	for i, c := range b {
		if c < '0' || c > '9' {
			return i
		}
	}
	return len(b)
}

// parseBigNumber accepts an optional '-' and at least one digit.
func parseBigNumber(line []byte, maxLen int64) (Value, error) {
	if int64(len(line)) > maxLen {
		return Value{}, limitError("big number of " + strconv.Itoa(len(line)) + " bytes exceeds the bulk limit")
	}
	digits := line
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || countDigits(digits) != len(digits) {
		return Value{}, protocolError("invalid big number " + quoteLine(line))
	}
	return Value{kind: KindBigNumber, str: string(line)}, nil
}

// parseInt parses a decimal int64 with an optional sign, without allocating.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	const limit = uint64(1) << 63 // |math.MinInt64|
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > limit/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > limit {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // wraps to MinInt64 for u == limit, which is right
	}
	if u == limit {
		return 0, false
	}
	return int64(u), true
}

// readLength reads a header line for type t and checks its length against max.
// null reports RESP2's -1, allowed only where RESP2 has it ($ and *).
func (r *Reader) readLength(t byte, max int64) (n int64, null bool, err error) {
	line, err := r.readLine()
	if err != nil {
		return 0, false, err
	}
	n, ok := parseInt(line)
	switch {
	case !ok:
		return 0, false, protocolError("invalid length " + quoteLine(line) + " for " + strconv.QuoteRune(rune(t)))
	case n == -1 && (t == '$' || t == '*'):
		return 0, true, nil
	case n < 0 || line[0] == '-': // "-0" too, which FrameComplete calls malformed
		return 0, false, protocolError("negative length " + quoteLine(line) + " for " + strconv.QuoteRune(rune(t)))
	case n > max:
		return 0, false, limitError("length " + string(line) + " for " + strconv.QuoteRune(rune(t)) +
			" exceeds the limit of " + strconv.FormatInt(max, 10))
	}
	return n, false, nil
}

// readBulkValue reads a length-prefixed string: bulk string, bulk error or verbatim.
func (r *Reader) readBulkValue(t byte) (Value, error) {
	n, null, err := r.readLength(t, min(r.lim.MaxBulkLen, math.MaxInt))
	if err != nil {
		return Value{}, err
	}
	if null {
		return Value{kind: KindNull}, nil
	}
	if !r.cost.addBytes(n) {
		return Value{}, memoryError(r.cost.max)
	}
	s, err := r.readBulk(int(n))
	if err != nil {
		return Value{}, err
	}
	switch t {
	case '$':
		return Value{kind: KindBulkString, str: s}, nil
	case '!':
		return Value{kind: KindBulkError, str: s}, nil
	default: // '='
		if len(s) < 4 || s[3] != ':' {
			return Value{}, protocolError("verbatim string without a format prefix")
		}
		return Value{kind: KindVerbatim, str: s}, nil
	}
}

// readBulk reads an n-byte payload and its CRLF. The payload is read into a buffer that
// starts at no more than bulkChunk and doubles only once filled, so a length that lies
// costs at most bulkChunk or twice the bytes that really came, whichever is more. The
// returned string is the only allocation for payloads up to bulkChunk.
func (r *Reader) readBulk(n int) (string, error) {
	if n == 0 {
		return "", r.readCRLF()
	}
	if n <= arenaMax {
		return r.readSmallBulk(n)
	}
	buf := make([]byte, min(n, bulkChunk))
	filled := 0
	for {
		k, err := io.ReadFull(r.br, buf[filled:])
		filled += k
		if err != nil {
			return "", unexpected(err)
		}
		if filled == n {
			break
		}
		grown := make([]byte, len(buf)+min(len(buf), n-len(buf)))
		copy(grown, buf)
		buf = grown
	}
	if err := r.readCRLF(); err != nil {
		return "", err
	}
	// buf is never written again and not retained elsewhere, so the string may own it;
	// this saves copying every bulk payload a second time.
	return unsafe.String(unsafe.SliceData(buf), len(buf)), nil
}

// readSmallBulk reads a payload of at most arenaMax bytes into the arena. Bytes past
// the arena's length may be overwritten by a failed read; no string covers them.
func (r *Reader) readSmallBulk(n int) (string, error) {
	if cap(r.arena)-len(r.arena) < n {
		r.arena = make([]byte, 0, arenaChunk)
	}
	start := len(r.arena)
	buf := r.arena[start : start+n]
	if _, err := io.ReadFull(r.br, buf); err != nil {
		return "", unexpected(err)
	}
	if err := r.readCRLF(); err != nil {
		return "", err
	}
	r.arena = r.arena[:start+n]
	return unsafe.String(unsafe.SliceData(buf), n), nil
}

func (r *Reader) readCRLF() error {
	cr, err := r.br.ReadByte()
	if err != nil {
		return unexpected(err)
	}
	lf, err := r.br.ReadByte()
	if err != nil {
		return unexpected(err)
	}
	if cr != '\r' || lf != '\n' {
		return protocolError("bulk payload not terminated by CRLF")
	}
	return nil
}

// readAggregate reads an array, set, push, map or attribute map, its type byte t
// consumed. For maps and attributes the elements are the flattened key, value pairs.
func (r *Reader) readAggregate(t byte, depth int) (Value, error) {
	max := r.lim.MaxAggregateLen
	paired := t == '%' || t == '|'
	if paired {
		max /= 2 // each pair is two elements
	}
	n, null, err := r.readLength(t, max)
	if err != nil {
		return Value{}, err
	}
	if null {
		return Value{kind: KindNull}, nil
	}
	if depth >= r.lim.MaxDepth {
		return Value{}, limitError("nesting deeper than " + strconv.Itoa(r.lim.MaxDepth))
	}
	if paired {
		n *= 2
	}
	if !r.cost.addElems(n) {
		return Value{}, memoryError(r.cost.max)
	}
	v := Value{kind: aggregateKinds[t]}
	if n == 0 {
		return v, nil // nil elements, as the constructors make them
	}
	v.elems = make([]Value, 0, min(n, aggregatePrealloc))
	for range n {
		e, err := r.readValue(depth + 1)
		if err != nil {
			return Value{}, err
		}
		v.elems = append(v.elems, e)
	}
	return v, nil
}

// aggregateKinds maps an aggregate's type byte to its kind; attributes are held as maps.
var aggregateKinds = [256]Kind{'*': KindArray, '~': KindSet, '>': KindPush, '%': KindMap, '|': KindMap}

// readLine returns the next line without its CRLF. The slice is valid until the next
// read. A line longer than the limit fails as soon as that many bytes have arrived.
func (r *Reader) readLine() ([]byte, error) {
	// A line with its CRLF may be two bytes longer than the content limit.
	max := r.lim.MaxLineLen + 2
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// The line is longer than br's buffer: gather it in r.line.
		r.line = append(r.line[:0], line...)
		for err == bufio.ErrBufferFull && len(r.line) < max {
			line, err = r.br.ReadSlice('\n')
			r.line = append(r.line, line...)
		}
		line = r.line
		if cap(r.line) > keptLine {
			r.line = nil // line stays valid; the Reader just does not hold it
		}
	}
	if lineTooLong(line, max) {
		return nil, limitError("line longer than " + strconv.Itoa(r.lim.MaxLineLen) + " bytes")
	}
	if err != nil {
		return nil, unexpected(err)
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, protocolError("line not terminated by CRLF")
	}
	return line[:len(line)-2], nil
}

// lineTooLong reports whether line, complete or not, is longer than max bytes with its
// LF. Judging an unfinished line by what it must become keeps the verdict the same
// however the stream is chunked.
func lineTooLong(line []byte, max int) bool {
	if len(line) > 0 && line[len(line)-1] == '\n' {
		return len(line) > max
	}
	return len(line) >= max
}

// unexpected turns io.EOF inside a value into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func protocolError(reason string) error { return &ProtocolError{Reason: reason} }

func limitError(reason string) error { return &ProtocolError{Reason: reason, Err: ErrLimit} }

// quoteLine quotes at most 32 bytes of a bad line for an error message.
func quoteLine(line []byte) string {
	if len(line) > 32 {
		return strconv.Quote(string(line[:32])) + "..."
	}
	return strconv.Quote(string(line))
}

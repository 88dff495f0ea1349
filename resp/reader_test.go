package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// readCase is one frame and what decoding it must give: a value, or an error that
// wantErr matches with errors.Is.
type readCase struct {
	name    string
	wire    string
	lim     Limits
	want    Value
	wantErr error
}

var validCases = []readCase{
	// Simple types.
	{name: "simple", wire: "+OK\r\n", want: SimpleString("OK")},
	{name: "simple-empty", wire: "+\r\n", want: SimpleString("")},
	{name: "simple-text", wire: "+hello world\r\n", want: SimpleString("hello world")},
	{name: "simple-bare-cr", wire: "+a\rb\r\n", want: SimpleString("a\rb")},
	{name: "error", wire: "-ERR unknown command\r\n", want: ErrorValue("ERR unknown command")},
	{name: "integer", wire: ":1000\r\n", want: Integer(1000)},
	{name: "integer-zero", wire: ":0\r\n", want: Integer(0)},
	{name: "integer-negative", wire: ":-42\r\n", want: Integer(-42)},
	{name: "integer-plus", wire: ":+7\r\n", want: Integer(7)},
	{name: "integer-max", wire: ":9223372036854775807\r\n", want: Integer(math.MaxInt64)},
	{name: "integer-min", wire: ":-9223372036854775808\r\n", want: Integer(math.MinInt64)},
	{name: "integer-leading-zeros", wire: ":00000000000000000000042\r\n", want: Integer(42)},
	{name: "null", wire: "_\r\n", want: Null()},
	{name: "null-bulk-resp2", wire: "$-1\r\n", want: Null()},
	{name: "null-array-resp2", wire: "*-1\r\n", want: Null()},
	{name: "true", wire: "#t\r\n", want: Boolean(true)},
	{name: "false", wire: "#f\r\n", want: Boolean(false)},
	{name: "double", wire: ",1.5\r\n", want: Double(1.5)},
	{name: "double-exponent", wire: ",-0.5e3\r\n", want: Double(-500)},
	{name: "double-integral", wire: ",10\r\n", want: Double(10)},
	{name: "double-exponent-sign", wire: ",1.25E+2\r\n", want: Double(125)},
	{name: "double-no-int-digits", wire: ",.5\r\n", want: Double(0.5)},
	{name: "double-underflow", wire: ",1e-400\r\n", want: Double(0)},
	{name: "double-inf", wire: ",inf\r\n", want: Double(math.Inf(1))},
	{name: "double-plus-inf", wire: ",+inf\r\n", want: Double(math.Inf(1))},
	{name: "double-neg-inf", wire: ",-inf\r\n", want: Double(math.Inf(-1))},
	{name: "double-nan", wire: ",nan\r\n", want: Double(math.NaN())},
	{name: "big-number", wire: "(3492890328409238509324850943850943825024385\r\n",
		want: BigNumber("3492890328409238509324850943850943825024385")},
	{name: "big-number-negative", wire: "(-12345678901234567890\r\n", want: BigNumber("-12345678901234567890")},

	// Bulk types.
	{name: "bulk", wire: "$5\r\nhello\r\n", want: BulkString("hello")},
	{name: "bulk-empty", wire: "$0\r\n\r\n", want: BulkString("")},
	{name: "bulk-binary", wire: "$4\r\n\r\n\x00\xff\r\n", want: BulkString("\r\n\x00\xff")},
	{name: "bulk-longer-than-bufio", wire: "$40\r\n" + strings.Repeat("x", 40) + "\r\n",
		want: BulkString(strings.Repeat("x", 40))},
	{name: "bulk-error", wire: "!21\r\nSYNTAX invalid syntax\r\n", want: BulkErrorValue("SYNTAX invalid syntax")},
	{name: "verbatim", wire: "=15\r\ntxt:Some string\r\n", want: Verbatim("txt", "Some string")},
	{name: "verbatim-empty-text", wire: "=4\r\nmkd:\r\n", want: Verbatim("mkd", "")},

	// Aggregates.
	{name: "array", wire: "*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n", want: Array(BulkString("foo"), BulkString("bar"))},
	{name: "array-empty", wire: "*0\r\n", want: Array()},
	{name: "array-mixed", wire: "*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n$5\r\nhello\r\n",
		want: Array(Integer(1), Integer(2), Integer(3), Integer(4), BulkString("hello"))},
	{name: "array-nested", wire: "*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n*2\r\n+Hello\r\n-World\r\n",
		want: Array(Array(Integer(1), Integer(2), Integer(3)), Array(SimpleString("Hello"), ErrorValue("World")))},
	{name: "array-with-nulls", wire: "*3\r\n$-1\r\n*-1\r\n_\r\n", want: Array(Null(), Null(), Null())},
	{name: "array-of-empty", wire: "*2\r\n*0\r\n%0\r\n", want: Array(Array(), Map())},
	{name: "set", wire: "~3\r\n+a\r\n+b\r\n:1\r\n", want: Set(SimpleString("a"), SimpleString("b"), Integer(1))},
	{name: "set-empty", wire: "~0\r\n", want: Set()},
	{name: "map", wire: "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
		want: Map(SimpleString("first"), Integer(1), SimpleString("second"), Integer(2))},
	{name: "map-empty", wire: "%0\r\n", want: Map()},
	{name: "map-non-string-keys", wire: "%3\r\n:1\r\n+one\r\n#t\r\n,2.5\r\n*1\r\n:9\r\n_\r\n",
		want: Map(Integer(1), SimpleString("one"), Boolean(true), Double(2.5), Array(Integer(9)), Null())},
	{name: "push", wire: ">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$5\r\nhello\r\n",
		want: Push(BulkString("message"), BulkString("channel"), BulkString("hello"))},
	{name: "push-empty", wire: ">0\r\n", want: Push()},

	// Attributes.
	{name: "attribute", wire: "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
		want: Array(Integer(2039123), Integer(9543892)).WithAttributes(
			SimpleString("key-popularity"),
			Map(BulkString("a"), Double(0.1923), BulkString("b"), Double(0.0012)))},
	{name: "attribute-on-scalar", wire: "|1\r\n+ttl\r\n:3600\r\n$3\r\nval\r\n",
		want: BulkString("val").WithAttributes(SimpleString("ttl"), Integer(3600))},
	{name: "attribute-nested", wire: "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n",
		want: Array(Integer(1).WithAttributes(SimpleString("a"), SimpleString("b")), Integer(2))},
	{name: "attribute-repeated-merge", wire: "|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n_\r\n",
		want: Null().WithAttributes(SimpleString("a"), Integer(1), SimpleString("b"), Integer(2))},
	{name: "attribute-empty", wire: "|0\r\n+OK\r\n", want: SimpleString("OK")},

	// Lines longer than a 16-byte bufio buffer.
	{name: "long-simple", wire: "+" + strings.Repeat("y", 100) + "\r\n", want: SimpleString(strings.Repeat("y", 100))},
	{name: "long-error", wire: "-ERR " + strings.Repeat("z", 60) + "\r\n", want: ErrorValue("ERR " + strings.Repeat("z", 60))},

	// Limits exactly met.
	{name: "bulk-at-limit", wire: "$4\r\nhell\r\n", lim: Limits{MaxBulkLen: 4}, want: BulkString("hell")},
	{name: "line-at-limit", wire: "+12345678\r\n", lim: Limits{MaxLineLen: 8}, want: SimpleString("12345678")},
	{name: "depth-at-limit", wire: "*1\r\n*1\r\n:1\r\n", lim: Limits{MaxDepth: 2}, want: Array(Array(Integer(1)))},
	{name: "aggregate-at-limit", wire: "*2\r\n:1\r\n:2\r\n", lim: Limits{MaxAggregateLen: 2}, want: Array(Integer(1), Integer(2))},
	{name: "map-at-limit", wire: "%1\r\n:1\r\n:2\r\n", lim: Limits{MaxAggregateLen: 2}, want: Map(Integer(1), Integer(2))},
	// MaxReplyMemory: 80 bytes per element, plus the bytes of strings.
	{name: "memory-elements-at-limit", wire: "*3\r\n_\r\n_\r\n_\r\n", lim: Limits{MaxReplyMemory: 240}, want: Array(Null(), Null(), Null())},
	{name: "memory-strings-at-limit", wire: "*3\r\n$5\r\nhello\r\n+OK\r\n-ERR x\r\n", lim: Limits{MaxReplyMemory: 252},
		want: Array(BulkString("hello"), SimpleString("OK"), ErrorValue("ERR x"))},
	{name: "memory-nested-at-limit", wire: "*2\r\n%1\r\n+k\r\n:1\r\n~1\r\n!1\r\nE\r\n", lim: Limits{MaxReplyMemory: 5*80 + 2},
		want: Array(Map(SimpleString("k"), Integer(1)), Set(BulkErrorValue("E")))},
	{name: "memory-attributes-at-limit", wire: "|1\r\n+k\r\n(12\r\n:1\r\n", lim: Limits{MaxReplyMemory: 2*80 + 3},
		want: Integer(1).WithAttributes(SimpleString("k"), BigNumber("12"))},
	{name: "memory-verbatim-at-limit", wire: "=7\r\ntxt:abc\r\n", lim: Limits{MaxReplyMemory: 7}, want: Verbatim("txt", "abc")},
	{name: "memory-scalars-free", wire: "*2\r\n:123456\r\n,1.5\r\n", lim: Limits{MaxReplyMemory: 160}, want: Array(Integer(123456), Double(1.5))},
	{name: "line-at-bulk-limit", wire: "-1234\r\n", lim: Limits{MaxBulkLen: 4}, want: ErrorValue("1234")},
}

var errorCases = []readCase{
	// Framing.
	{name: "unknown-type", wire: "?x\r\n", wantErr: ErrProtocol},
	{name: "unknown-type-space", wire: " OK\r\n", wantErr: ErrProtocol},
	{name: "resp3-streamed-string", wire: "$?\r\n;4\r\nHell\r\n;0\r\n", wantErr: ErrProtocol},
	{name: "missing-cr", wire: "+OK\n", wantErr: ErrProtocol},
	{name: "lf-only-empty", wire: "+\n", wantErr: ErrProtocol},
	{name: "bulk-bad-terminator", wire: "$2\r\nOKxx", wantErr: ErrProtocol},
	{name: "bulk-too-short", wire: "$3\r\nOK\r\n+x\r\n", wantErr: ErrProtocol},
	{name: "bulk-missing-lf", wire: "$2\r\nOK\rX", wantErr: ErrProtocol},
	{name: "header-missing-cr", wire: "*1\n:1\r\n", wantErr: ErrProtocol},
	{name: "null-with-payload", wire: "_x\r\n", wantErr: ErrProtocol},

	// Integers and lengths.
	{name: "integer-empty", wire: ":\r\n", wantErr: ErrProtocol},
	{name: "integer-sign-only", wire: ":+\r\n", wantErr: ErrProtocol},
	{name: "integer-minus-only", wire: ":-\r\n", wantErr: ErrProtocol},
	{name: "integer-garbage", wire: ":12a\r\n", wantErr: ErrProtocol},
	{name: "integer-space", wire: ": 1\r\n", wantErr: ErrProtocol},
	{name: "integer-overflow", wire: ":9223372036854775808\r\n", wantErr: ErrProtocol},
	{name: "integer-underflow", wire: ":-9223372036854775809\r\n", wantErr: ErrProtocol},
	{name: "integer-huge", wire: ":99999999999999999999999\r\n", wantErr: ErrProtocol},
	{name: "length-garbage", wire: "$abc\r\n", wantErr: ErrProtocol},
	{name: "length-empty", wire: "*\r\n", wantErr: ErrProtocol},
	{name: "length-overflow", wire: "$99999999999999999999\r\n", wantErr: ErrProtocol},
	{name: "bulk-negative", wire: "$-2\r\n", wantErr: ErrProtocol},
	{name: "bulk-minus-zero", wire: "$-0\r\n\r\n", wantErr: ErrProtocol},
	{name: "blob-error-minus-zero", wire: "!-0\r\n\r\n", wantErr: ErrProtocol},
	{name: "array-minus-zero", wire: "*-0\r\n", wantErr: ErrProtocol},
	{name: "array-negative", wire: "*-5\r\n", wantErr: ErrProtocol},
	{name: "set-null", wire: "~-1\r\n", wantErr: ErrProtocol},
	{name: "map-null", wire: "%-1\r\n", wantErr: ErrProtocol},
	{name: "verbatim-null", wire: "=-1\r\n", wantErr: ErrProtocol},
	{name: "bulk-error-null", wire: "!-1\r\n", wantErr: ErrProtocol},
	{name: "attribute-null", wire: "|-1\r\n+OK\r\n", wantErr: ErrProtocol},

	// Other scalars.
	{name: "boolean-word", wire: "#true\r\n", wantErr: ErrProtocol},
	{name: "boolean-upper", wire: "#T\r\n", wantErr: ErrProtocol},
	{name: "boolean-empty", wire: "#\r\n", wantErr: ErrProtocol},
	{name: "double-empty", wire: ",\r\n", wantErr: ErrProtocol},
	{name: "double-garbage", wire: ",1.5x\r\n", wantErr: ErrProtocol},
	{name: "double-hex", wire: ",0x1p3\r\n", wantErr: ErrProtocol},
	{name: "double-infinity-word", wire: ",Infinity\r\n", wantErr: ErrProtocol},
	{name: "double-underscore", wire: ",1_0\r\n", wantErr: ErrProtocol},
	{name: "double-bare-exponent", wire: ",1e\r\n", wantErr: ErrProtocol},
	{name: "double-point-only", wire: ",.\r\n", wantErr: ErrProtocol},
	{name: "double-overflow", wire: ",1e400\r\n", wantErr: ErrProtocol},
	{name: "big-number-empty", wire: "(\r\n", wantErr: ErrProtocol},
	{name: "big-number-minus-only", wire: "(-\r\n", wantErr: ErrProtocol},
	{name: "big-number-garbage", wire: "(12x3\r\n", wantErr: ErrProtocol},
	{name: "big-number-decimal", wire: "(1.5\r\n", wantErr: ErrProtocol},
	{name: "verbatim-short", wire: "=3\r\ntxt\r\n", wantErr: ErrProtocol},
	{name: "verbatim-no-colon", wire: "=6\r\ntxtabc\r\n", wantErr: ErrProtocol},
	{name: "verbatim-colon-misplaced", wire: "=5\r\nmd:ab\r\n", wantErr: ErrProtocol},

	// Limits: huge declared lengths must fail before allocating.
	{name: "bulk-maxint64", wire: "$9223372036854775807\r\n", wantErr: ErrLimit},
	{name: "array-huge", wire: "*99999999999\r\n", wantErr: ErrLimit},
	{name: "map-huge", wire: "%99999999999\r\n", wantErr: ErrLimit},
	{name: "set-huge", wire: "~99999999999\r\n", wantErr: ErrLimit},
	{name: "push-huge", wire: ">9223372036854775807\r\n", wantErr: ErrLimit},
	{name: "attribute-huge", wire: "|99999999999\r\n", wantErr: ErrLimit},
	{name: "bulk-error-huge", wire: "!99999999999\r\n", wantErr: ErrLimit},
	{name: "verbatim-huge", wire: "=99999999999\r\n", wantErr: ErrLimit},
	{name: "bulk-over-default", wire: "$536870913\r\n", wantErr: ErrLimit},
	{name: "bulk-over-limit", wire: "$5\r\nhello\r\n", lim: Limits{MaxBulkLen: 4}, wantErr: ErrLimit},
	{name: "bulk-error-over-limit", wire: "!5\r\nERR x\r\n", lim: Limits{MaxBulkLen: 4}, wantErr: ErrLimit},
	{name: "verbatim-over-limit", wire: "=5\r\ntxt:x\r\n", lim: Limits{MaxBulkLen: 4}, wantErr: ErrLimit},
	{name: "big-number-over-limit", wire: "(12345\r\n", lim: Limits{MaxBulkLen: 4}, wantErr: ErrLimit},
	{name: "array-over-limit", wire: "*3\r\n:1\r\n:2\r\n:3\r\n", lim: Limits{MaxAggregateLen: 2}, wantErr: ErrLimit},
	{name: "map-pairs-count-double", wire: "%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n", lim: Limits{MaxAggregateLen: 3}, wantErr: ErrLimit},
	{name: "attributes-merged-over-limit", wire: "|1\r\n:1\r\n:1\r\n|1\r\n:2\r\n:2\r\n+OK\r\n", lim: Limits{MaxAggregateLen: 3}, wantErr: ErrLimit},
	{name: "line-over-limit", wire: "+123456789\r\n", lim: Limits{MaxLineLen: 8}, wantErr: ErrLimit},
	{name: "line-over-limit-no-lf", wire: "+1234567890", lim: Limits{MaxLineLen: 8}, wantErr: ErrLimit},
	{name: "header-over-limit", wire: "$000000000005\r\nhello\r\n", lim: Limits{MaxLineLen: 8}, wantErr: ErrLimit},
	{name: "line-over-bulk-limit", wire: "-12345\r\n", lim: Limits{MaxBulkLen: 4}, wantErr: ErrLimit},
	{name: "line-endless", wire: "-" + strings.Repeat("a", 100<<10), lim: Limits{MaxLineLen: 64 << 10}, wantErr: ErrLimit},
	{name: "depth-over-default", wire: strings.Repeat("*1\r\n", 8193) + ":1\r\n", wantErr: ErrLimit},
	{name: "depth-over-default-maps", wire: strings.Repeat("%1\r\n+k\r\n", 8193) + ":1\r\n", wantErr: ErrLimit},
	{name: "depth-over-limit", wire: "*1\r\n*1\r\n*1\r\n:1\r\n", lim: Limits{MaxDepth: 2}, wantErr: ErrLimit},
	{name: "depth-attributes-count", wire: "*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", lim: Limits{MaxDepth: 1}, wantErr: ErrLimit},
	{name: "depth-map-value", wire: "%1\r\n+k\r\n%1\r\n+k\r\n:1\r\n", lim: Limits{MaxDepth: 1}, wantErr: ErrLimit},
	// MaxReplyMemory, one byte short; a header over it fails before its elements come.
	{name: "memory-elements-over", wire: "*3\r\n_\r\n_\r\n_\r\n", lim: Limits{MaxReplyMemory: 239}, wantErr: ErrLimit},
	{name: "memory-header-over", wire: "*3\r\n", lim: Limits{MaxReplyMemory: 239}, wantErr: ErrLimit},
	{name: "memory-strings-over", wire: "*3\r\n$5\r\nhello\r\n+OK\r\n-ERR x\r\n", lim: Limits{MaxReplyMemory: 251}, wantErr: ErrLimit},
	{name: "memory-bulk-header-over", wire: "*1\r\n$5\r\n", lim: Limits{MaxReplyMemory: 84}, wantErr: ErrLimit},
	{name: "memory-nested-over", wire: "*2\r\n%1\r\n+k\r\n:1\r\n~1\r\n!1\r\nE\r\n", lim: Limits{MaxReplyMemory: 5*80 + 1}, wantErr: ErrLimit},
	{name: "memory-attributes-over", wire: "|1\r\n+k\r\n(12\r\n:1\r\n", lim: Limits{MaxReplyMemory: 2*80 + 2}, wantErr: ErrLimit},
	{name: "memory-big-number-over", wire: "(123\r\n", lim: Limits{MaxReplyMemory: 2}, wantErr: ErrLimit},
	{name: "memory-default-array", wire: "*67108864\r\n", wantErr: ErrLimit},        // within MaxAggregateLen, 5 GiB of Values
	{name: "memory-default-nested", wire: "*2\r\n*14000000\r\n", wantErr: ErrLimit}, // 1.12 GB of Values
	{name: "memory-bulk-after-elements", wire: "*3\r\n$536870912\r\n", lim: Limits{MaxReplyMemory: 536870912 + 2*80}, wantErr: ErrLimit},

	// Streams that end inside a value.
	{name: "eof-after-type", wire: "+", wantErr: io.ErrUnexpectedEOF},
	{name: "eof-in-bulk", wire: "$10\r\nhello", wantErr: io.ErrUnexpectedEOF},
	{name: "eof-before-bulk-crlf", wire: "$5\r\nhello", wantErr: io.ErrUnexpectedEOF},
	{name: "eof-in-array", wire: "*3\r\n:1\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "eof-after-attribute", wire: "|1\r\n+a\r\n+b\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "eof-in-long-line", wire: "+" + strings.Repeat("a", 100), wantErr: io.ErrUnexpectedEOF},
	{name: "empty", wire: "", wantErr: io.EOF},
}

// readMaker wraps a reader to deliver its bytes in some pattern of chunks.
type readMaker struct {
	name string
	fn   func(io.Reader) io.Reader
}

var readMakers = []readMaker{
	{"full", func(r io.Reader) io.Reader { return r }},
	{"byte", iotest.OneByteReader},
	{"half", iotest.HalfReader},
	{"chunks", func(r io.Reader) io.Reader { return newChunkReader(r, 1) }},
	{"data-err", iotest.DataErrReader},
}

// chunkReader returns random short reads, seeded so failures reproduce.
type chunkReader struct {
	r   io.Reader
	rng *rand.Rand
}

func newChunkReader(r io.Reader, seed uint64) *chunkReader {
	return &chunkReader{r: r, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return c.r.Read(p)
	}
	return c.r.Read(p[:1+c.rng.IntN(min(len(p), 7))])
}

// bufSizes are bufio sizes to decode with: the minimum, smaller than most frames, and
// the default.
var bufSizes = []int{16, 4096}

// decodeAll reads values until an error and returns them with that error.
func decodeAll(r io.Reader, bufSize int, lim Limits) ([]Value, error) {
	rd := NewReader(bufio.NewReaderSize(r, bufSize), lim)
	var vs []Value
	for {
		v, err := rd.Read()
		if err != nil {
			return vs, err
		}
		vs = append(vs, v)
	}
}

func TestReadValid(t *testing.T) {
	for _, tc := range validCases {
		for _, rm := range readMakers {
			for _, size := range bufSizes {
				vs, err := decodeAll(rm.fn(strings.NewReader(tc.wire)), size, tc.lim)
				if err != io.EOF {
					t.Errorf("%s/%s/%d: error %v, want io.EOF after one value", tc.name, rm.name, size, err)
				}
				if len(vs) != 1 || !equalValue(vs[0], tc.want) {
					t.Errorf("%s/%s/%d: got %v, want [%v]", tc.name, rm.name, size, vs, tc.want)
				}
			}
		}
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range errorCases {
		for _, rm := range readMakers {
			for _, size := range bufSizes {
				rd := NewReader(bufio.NewReaderSize(rm.fn(strings.NewReader(tc.wire)), size), tc.lim)
				v, err := rd.Read()
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("%s/%s/%d: got %v, %v; want error %v", tc.name, rm.name, size, v, err, tc.wantErr)
					continue
				}
				var pe *ProtocolError
				if errors.Is(tc.wantErr, ErrProtocol) || errors.Is(tc.wantErr, ErrLimit) {
					if !errors.As(err, &pe) {
						t.Errorf("%s/%s/%d: error %T, want *ProtocolError", tc.name, rm.name, size, err)
					}
				}
			}
		}
	}
}

// TestReadTruncated cuts every valid frame at every byte: each proper prefix must end
// in io.ErrUnexpectedEOF (io.EOF for the empty one), never a value or a panic.
func TestReadTruncated(t *testing.T) {
	for _, tc := range validCases {
		for cut := range len(tc.wire) {
			for _, size := range bufSizes {
				rd := NewReader(bufio.NewReaderSize(strings.NewReader(tc.wire[:cut]), size), tc.lim)
				v, err := rd.Read()
				want := io.ErrUnexpectedEOF
				if cut == 0 {
					want = io.EOF
				}
				if err != want {
					t.Errorf("%s cut at %d (bufio %d): got %v, %v; want %v", tc.name, cut, size, v, err, want)
				}
			}
		}
	}
}

// TestReadStream decodes every valid frame back to back from one stream, as a
// pipelined connection sees them.
func TestReadStream(t *testing.T) {
	var wire strings.Builder
	var want []Value
	for _, tc := range validCases {
		if tc.lim != (Limits{}) {
			continue
		}
		wire.WriteString(tc.wire)
		want = append(want, tc.want)
	}
	for _, rm := range readMakers {
		for _, size := range bufSizes {
			got, err := decodeAll(rm.fn(strings.NewReader(wire.String())), size, Limits{})
			if err != io.EOF {
				t.Errorf("%s/%d: error %v after %d values", rm.name, size, err, len(got))
			}
			if !equalValues(got, want) {
				t.Errorf("%s/%d: values differ:\n got %v\nwant %v", rm.name, size, got, want)
			}
		}
	}
}

// errReader fails with err after delivering data.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadPassesIOErrors(t *testing.T) {
	boom := errors.New("boom")
	for _, wire := range []string{"", "+OK", "$5\r\nhel", "*2\r\n:1\r\n"} {
		rd := NewReader(bufio.NewReaderSize(&errReader{data: []byte(wire), err: boom}, 16), Limits{})
		if _, err := rd.Read(); !errors.Is(err, boom) {
			t.Errorf("%q: error %v, want %v", wire, err, boom)
		}
	}
}

func TestDefaultLimits(t *testing.T) {
	want := Limits{MaxBulkLen: 512 << 20, MaxDepth: 8192, MaxAggregateLen: 1 << 26, MaxLineLen: 512 << 20, MaxReplyMemory: 1 << 30}
	if got := DefaultLimits(); got != want {
		t.Errorf("DefaultLimits() = %+v, want %+v", got, want)
	}
	if got := (Limits{MaxDepth: 3, MaxLineLen: -1}).withDefaults(); got.MaxDepth != 3 || got.MaxLineLen != want.MaxLineLen {
		t.Errorf("withDefaults kept %+v", got)
	}
	// The line and memory defaults follow a MaxBulkLen that is set: a line may be as
	// long as a bulk string, and a reply holds at least two of the largest.
	tests := []struct {
		in         Limits
		line       int
		replyBytes int64
	}{
		{Limits{MaxBulkLen: 1000}, 1000, 1 << 30},
		{Limits{MaxBulkLen: 2 << 30}, 2 << 30, 4 << 30},
		{Limits{MaxBulkLen: math.MaxInt64}, math.MaxInt - 2, math.MaxInt64},
		{Limits{MaxBulkLen: 2 << 30, MaxLineLen: 7, MaxReplyMemory: 9}, 7, 9},
		{Limits{MaxLineLen: math.MaxInt}, math.MaxInt - 2, 1 << 30},
	}
	for _, tt := range tests {
		if got := tt.in.withDefaults(); got.MaxLineLen != tt.line || got.MaxReplyMemory != tt.replyBytes {
			t.Errorf("%+v.withDefaults() = %+v; want MaxLineLen %d, MaxReplyMemory %d", tt.in, got, tt.line, tt.replyBytes)
		}
	}
}

// TestReadAcceptsWhatServersSend decodes, under the default limits, replies that a real
// server sends (issue 23, point 3): a script's status_reply and error_reply of 70 KB,
// the same inside an array, and tables nested as deep as Lua lets a script build them
// (7995 arrays, the last holding the server's "reached lua stack limit" error, as
// Redis 7 sends for any deeper table). Each also goes through FrameComplete, which
// must not call it complete before its last byte.
func TestReadAcceptsWhatServersSend(t *testing.T) {
	long := strings.Repeat("x", 70000)
	cases := []struct {
		name string
		wire string
		want Value
	}{
		{"status 70 KB", "+" + long + "\r\n", SimpleString(long)},
		{"error 70 KB", "-" + long + "\r\n", ErrorValue(long)},
		{"both in an array", "*3\r\n:1\r\n-" + long + "\r\n+" + long + "\r\n",
			Array(Integer(1), ErrorValue(long), SimpleString(long))},
		{"error 600 KB", "-ERR " + strings.Repeat("y", 600000) + "\r\n", ErrorValue("ERR " + strings.Repeat("y", 600000))},
		{"nested 65", nestedWire("*1\r\n", 65, ":1\r\n"), nestedValue(65, Integer(1))},
		{"nested 100", nestedWire("*1\r\n", 100, ":1\r\n"), nestedValue(100, Integer(1))},
		{"nested as deep as a script can", nestedWire("*1\r\n", 7995, "-ERR reached lua stack limit\r\n"),
			nestedValue(7995, ErrorValue("ERR reached lua stack limit"))},
		{"nested at the limit", nestedWire("*1\r\n", 8192, "_\r\n"), nestedValue(8192, Null())},
	}
	for _, tc := range cases {
		for _, rm := range readMakers {
			vs, err := decodeAll(rm.fn(strings.NewReader(tc.wire)), 4096, Limits{})
			if err != io.EOF || len(vs) != 1 || !equalValue(vs[0], tc.want) {
				t.Errorf("%s/%s: %d values, error %v; want the value, then io.EOF", tc.name, rm.name, len(vs), err)
			}
		}
		if !FrameComplete([]byte(tc.wire)) {
			t.Errorf("%s: the whole frame is not complete", tc.name)
		}
		for _, cut := range []int{1, len(tc.wire) / 2, len(tc.wire) - 1} {
			if FrameComplete([]byte(tc.wire[:cut])) {
				t.Errorf("%s: complete when cut at %d of %d bytes", tc.name, cut, len(tc.wire))
			}
		}
	}
}

// nestedWire is depth aggregate headers, then leaf.
func nestedWire(open string, depth int, leaf string) string {
	return strings.Repeat(open, depth) + leaf
}

// nestedValue is leaf in depth arrays of one element.
func nestedValue(depth int, leaf Value) Value {
	for range depth {
		leaf = Array(leaf)
	}
	return leaf
}

// TestReplyMemoryIsPerReply: the memory limit counts one reply at a time, so a stream of
// replies each within it decodes, however much they hold together.
func TestReplyMemoryIsPerReply(t *testing.T) {
	wire := strings.Repeat("*2\r\n$5\r\nhello\r\n_\r\n", 100)
	vs, err := decodeAll(strings.NewReader(wire), 16, Limits{MaxReplyMemory: 2*80 + 5})
	if err != io.EOF || len(vs) != 100 {
		t.Fatalf("%d replies, error %v; want 100, then io.EOF", len(vs), err)
	}
}

// TestReplyMemoryBoundsHeap: a reply of many small elements, the cheapest to send for
// the memory it takes, is refused once its Values would pass the limit, before they
// are allocated.
func TestReplyMemoryBoundsHeap(t *testing.T) {
	const limit = 4 << 20
	// 64 arrays of 100,000 nulls: 3 bytes each on the wire, 80 in memory.
	var wire strings.Builder
	wire.WriteString("*64\r\n")
	for range 64 {
		wire.WriteString("*100000\r\n" + strings.Repeat("_\r\n", 100000))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rd := NewReader(bufio.NewReader(strings.NewReader(wire.String())), Limits{MaxReplyMemory: limit})
	_, err := rd.Read()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("error %v; want ErrLimit", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 2*limit {
		t.Errorf("allocated %d bytes; want at most twice the %d-byte limit", grew, limit)
	}
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"+12", 12, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false},
		{"", 0, false},
		{"-", 0, false},
		{"+", 0, false},
		{"1-", 0, false},
		{"--1", 0, false},
		{"1 ", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseInt([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestReadLargeBulk(t *testing.T) {
	const n = 64 << 20
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i*7 + i>>13)
	}
	wire := append(AppendBulk(nil, payload), "+after\r\n"...)
	rd := NewReader(bufio.NewReader(bytes.NewReader(wire)), Limits{})
	v, err := rd.Read()
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind() != KindBulkString || v.str != string(payload) {
		t.Fatalf("64 MiB bulk decoded wrong: kind %v, %d bytes", v.Kind(), len(v.str))
	}
	if v, err := rd.Read(); err != nil || !equalValue(v, SimpleString("after")) {
		t.Fatalf("value after the bulk: %v, %v", v, err)
	}
}

// TestReadLyingLengthDoesNotAllocate declares 1 GiB (within a raised limit) but sends a
// few bytes: the reader must fail on EOF having allocated about one chunk.
func TestReadLyingLengthDoesNotAllocate(t *testing.T) {
	const declared = 1 << 30
	lim := Limits{MaxBulkLen: 2 << 30, MaxAggregateLen: 2 << 30, MaxReplyMemory: 1 << 40}
	for _, wire := range []string{
		"$1073741824\r\nabc",
		"*1073741824\r\n:1\r\n:2\r\n",
		"*1\r\n!1073741824\r\nERR",
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rd := NewReader(bufio.NewReader(strings.NewReader(wire)), lim)
		_, err := rd.Read()
		runtime.ReadMemStats(&after)
		if err != io.ErrUnexpectedEOF {
			t.Errorf("%q: error %v, want io.ErrUnexpectedEOF", wire, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > declared/16 {
			t.Errorf("%q: allocated %d bytes for a lying length", wire, grew)
		}
	}
}

func TestReadSteadyStateAllocs(t *testing.T) {
	tests := []struct {
		wire string
		max  float64
	}{
		{"+OK\r\n", 0},
		{"+QUEUED\r\n", 0},
		{":12345\r\n", 0},
		{"_\r\n", 0},
		{",1.5\r\n", 0},
		{"$16\r\n0123456789abcdef\r\n", 1},
		{"+custom\r\n", 1},
	}
	for _, tt := range tests {
		src := &repeatReader{data: []byte(tt.wire)}
		rd := NewReader(bufio.NewReader(src), Limits{})
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := rd.Read(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > tt.max {
			t.Errorf("%q: %v allocs per read, want at most %v", tt.wire, allocs, tt.max)
		}
	}
}

// repeatReader repeats data forever.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		r.off = (r.off + c) % len(r.data)
		n += c
	}
	return n, nil
}

// equalValue compares values as the wire sees them: NaN equals NaN, and nil equals an
// empty slice of elements or attributes.
func equalValue(a, b Value) bool {
	if a.kind != b.kind || a.str != b.str || !equalValues(a.attrs, b.attrs) || !equalValues(a.elems, b.elems) {
		return false
	}
	if a.kind == KindDouble {
		fa, fb := math.Float64frombits(uint64(a.num)), math.Float64frombits(uint64(b.num))
		return a.num == b.num || (math.IsNaN(fa) && math.IsNaN(fb))
	}
	return a.num == b.num
}

func equalValues(a, b []Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

package resp

import (
	"bufio"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// readOne decodes exactly one value from wire, which must hold nothing else.
func readOne(wire string) (Value, error) {
	rd := NewReader(bufio.NewReader(strings.NewReader(wire)), Limits{})
	v, err := rd.Read()
	if err != nil {
		return v, err
	}
	if _, err := rd.Read(); err != io.EOF {
		return v, io.ErrShortBuffer // trailing bytes: the encoding was wrong
	}
	return v, nil
}

// valueGen makes random values of bounded depth, seeded so failures reproduce.
type valueGen struct{ rng *rand.Rand }

func newValueGen(seed uint64) *valueGen {
	return &valueGen{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

func (g *valueGen) value(depth int) Value {
	v := g.bare(depth)
	if depth > 0 && g.rng.IntN(8) == 0 {
		v = v.WithAttributes(g.elems(depth-1, 2*(1+g.rng.IntN(2)))...)
	}
	return v
}

func (g *valueGen) bare(depth int) Value {
	kinds := 11
	if depth > 0 {
		kinds = 15
	}
	switch g.rng.IntN(kinds) {
	case 0:
		return SimpleString(g.line())
	case 1:
		return ErrorValue(g.line())
	case 2:
		return Integer(g.int())
	case 3:
		return BulkString(g.bytes())
	case 4:
		return Null()
	case 5:
		return Boolean(g.rng.IntN(2) == 0)
	case 6:
		return Double(g.float())
	case 7:
		return BigNumber(g.digits())
	case 8:
		return BulkErrorValue(g.bytes())
	case 9:
		return Verbatim([]string{"txt", "mkd", "abc"}[g.rng.IntN(3)], g.bytes())
	case 10:
		return BulkString("")
	case 11:
		return Array(g.elems(depth-1, g.rng.IntN(5))...)
	case 12:
		return Set(g.elems(depth-1, g.rng.IntN(5))...)
	case 13:
		return Push(g.elems(depth-1, g.rng.IntN(5))...)
	default:
		return Map(g.elems(depth-1, 2*g.rng.IntN(4))...)
	}
}

// elems returns n values, or nil for none as the variadic constructors would.
func (g *valueGen) elems(depth, n int) []Value {
	if n == 0 {
		return nil
	}
	vs := make([]Value, n)
	for i := range vs {
		vs[i] = g.value(depth)
	}
	return vs
}

// line returns text a simple string may hold: no CR or LF.
func (g *valueGen) line() string {
	b := []byte(g.bytes())
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

func (g *valueGen) bytes() string {
	b := make([]byte, g.rng.IntN(40))
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return string(b)
}

func (g *valueGen) int() int64 {
	switch g.rng.IntN(4) {
	case 0:
		return []int64{0, -1, math.MaxInt64, math.MinInt64}[g.rng.IntN(4)]
	case 1:
		return int64(g.rng.IntN(1000)) - 500
	}
	return int64(g.rng.Uint64())
}

func (g *valueGen) float() float64 {
	switch g.rng.IntN(4) {
	case 0:
		return []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
			math.MaxFloat64, math.SmallestNonzeroFloat64}[g.rng.IntN(7)]
	case 1:
		return float64(g.rng.IntN(2000)-1000) / 8
	}
	return math.Float64frombits(g.rng.Uint64())
}

func (g *valueGen) digits() string {
	var b strings.Builder
	if g.rng.IntN(2) == 0 {
		b.WriteByte('-')
	}
	for range 1 + g.rng.IntN(60) {
		b.WriteByte(byte('0' + g.rng.IntN(10)))
	}
	return b.String()
}

func TestRoundTripValues(t *testing.T) {
	g := newValueGen(1)
	for i := range 3000 {
		want := g.value(4)
		wire := AppendValue(nil, want)
		for _, rm := range readMakers {
			rd := NewReader(bufio.NewReaderSize(rm.fn(strings.NewReader(string(wire))), 16), Limits{})
			got, err := rd.Read()
			if err != nil || !equalValue(got, want) {
				t.Fatalf("value %d via %s: %v encoded as %q decodes as %v, %v", i, rm.name, want, wire, got, err)
			}
		}
	}
}

// TestRoundTripStream writes many values into one buffer and reads them all back.
func TestRoundTripStream(t *testing.T) {
	g := newValueGen(2)
	var wire []byte
	var want []Value
	for range 500 {
		v := g.value(3)
		want = append(want, v)
		wire = AppendValue(wire, v)
	}
	got, err := decodeAll(newChunkReader(strings.NewReader(string(wire)), 7), 16, Limits{})
	if err != io.EOF || !equalValues(got, want) {
		t.Fatalf("stream of %d values: got %d values and %v", len(want), len(got), err)
	}
}

// argText is how the server must see each command argument.
func argText(arg any) string {
	switch v := arg.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case int8:
		return strconv.Itoa(int(v))
	case uint16:
		return strconv.Itoa(int(v))
	case float64:
		if math.IsInf(v, 0) {
			return map[bool]string{true: "+inf", false: "-inf"}[v > 0]
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return map[bool]string{true: "1", false: "0"}[v]
	}
	panic("argText: unexpected type")
}

func (g *valueGen) arg() any {
	switch g.rng.IntN(9) {
	case 0:
		return g.bytes()
	case 1:
		return []byte(g.bytes())
	case 2:
		return int(g.int())
	case 3:
		return g.int()
	case 4:
		return g.rng.Uint64()
	case 5:
		return int8(g.rng.Uint32())
	case 6:
		return uint16(g.rng.Uint32())
	case 7:
		f := g.float()
		if math.IsNaN(f) {
			f = 0
		}
		return f
	}
	return g.rng.IntN(2) == 0
}

func TestRoundTripCommands(t *testing.T) {
	g := newValueGen(3)
	for i := range 2000 {
		args := make([]any, 1+g.rng.IntN(6))
		for j := range args {
			args[j] = g.arg()
		}
		wire, err := AppendCommand(nil, args...)
		if err != nil {
			t.Fatalf("command %d %v: %v", i, args, err)
		}
		v, err := readOne(string(wire))
		if err != nil {
			t.Fatalf("command %d %v encoded as %q: %v", i, args, wire, err)
		}
		elems, err := v.Array()
		if err != nil || v.Kind() != KindArray || len(elems) != len(args) {
			t.Fatalf("command %d %v decodes as %v", i, args, v)
		}
		for j, e := range elems {
			if e.Kind() != KindBulkString || e.str != argText(args[j]) {
				t.Fatalf("command %d arg %d %#v decodes as %v, want %q", i, j, args[j], e, argText(args[j]))
			}
		}
	}
}

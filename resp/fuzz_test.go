package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
	"testing/iotest"
	"time"
)

// fuzzLimits are small so the fuzzer reaches every limit with short inputs.
var fuzzLimits = Limits{MaxBulkLen: 1 << 12, MaxDepth: 8, MaxAggregateLen: 64, MaxLineLen: 64, MaxReplyMemory: 2 << 10}

// errorClass reduces a decoding error to what must not depend on chunking.
func errorClass(err error) string {
	switch {
	case err == io.EOF:
		return "eof"
	case err == io.ErrUnexpectedEOF:
		return "unexpected-eof"
	case errors.Is(err, ErrLimit):
		return "limit"
	case errors.Is(err, ErrProtocol):
		return "protocol"
	}
	return "other: " + err.Error()
}

func FuzzReader(f *testing.F) {
	for _, tc := range validCases {
		f.Add([]byte(tc.wire))
	}
	for _, tc := range errorCases {
		if len(tc.wire) < 256 {
			f.Add([]byte(tc.wire))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<10 {
			// fuzzLimits reach every path in fewer bytes; longer inputs only grow loop
			// counts, and the fuzzer then spends its time minimizing them.
			return
		}
		for _, lim := range []Limits{{}, fuzzLimits} {
			// A 64-byte bufio buffer makes short inputs reach the long-line path, so the
			// fuzzer need not grow (and then slowly minimize) inputs past 4 KiB.
			got, err := decodeAll(bytes.NewReader(data), 64, lim)
			cls := errorClass(err)
			if cls != "eof" && cls != "unexpected-eof" && cls != "limit" && cls != "protocol" {
				t.Fatalf("unexpected error %v", err)
			}

			// Chunking must not change the values or the kind of failure.
			slow, slowErr := decodeAll(iotest.OneByteReader(bytes.NewReader(data)), 16, lim)
			if !equalValues(got, slow) || errorClass(slowErr) != cls {
				t.Fatalf("one byte at a time gives %v, %v; whole gives %v, %v", slow, slowErr, got, err)
			}

			// Whatever decoded must encode to something that decodes the same.
			for _, v := range got {
				wire := AppendValue(nil, v)
				back, err := readOne(string(wire))
				if err != nil || !equalValue(back, v) {
					t.Fatalf("%v re-encoded as %q decodes as %v, %v", v, wire, back, err)
				}
			}
		}
	})
}

func FuzzAppendCommand(f *testing.F) {
	f.Add("SET", []byte("key"), "value", int64(42), 1.5)
	f.Add("", []byte(nil), "\r\n", int64(-1), math.Copysign(0, -1))
	f.Add("GET", []byte("$3\r\n"), "*1\r\n", int64(1)<<62, 1e300)
	f.Add("INCRBYFLOAT", []byte("k"), "", int64(0), math.NaN())
	f.Fuzz(func(t *testing.T, name string, key []byte, val string, n int64, x float64) {
		args := []any{name, key, val, n, x}
		wire, err := AppendCommand(nil, args...)
		// Named types of the same kinds encode exactly as their built-in types.
		named := []any{namedString(name), namedBytes(key), namedString(val), time.Duration(n), namedFloat(x)}
		if nwire, nerr := AppendCommand(nil, named...); string(nwire) != string(wire) || (nerr == nil) != (err == nil) {
			t.Fatalf("named types encode as %q, %v; built-in ones as %q, %v", nwire, nerr, wire, err)
		}
		if math.IsNaN(x) { // NaN has no wire form
			if !errors.Is(err, ErrInvalidArg) || len(wire) != 0 {
				t.Fatalf("NaN: got %q, %v; want nothing and an ArgError", wire, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		v, err := readOne(string(wire))
		if err != nil {
			t.Fatalf("%q: %v", wire, err)
		}
		elems, _ := v.Array()
		if v.Kind() != KindArray || len(elems) != len(args) {
			t.Fatalf("%q decodes as %v", wire, v)
		}
		for i, e := range elems {
			if e.Kind() != KindBulkString || e.str != argText(args[i]) {
				t.Fatalf("arg %d %#v decodes as %v", i, args[i], e)
			}
		}
	})
}

// TestReaderNoPanicOnGarbage is a quick deterministic stand-in for the fuzzer: random
// mutations of valid frames must decode or fail cleanly, whatever the chunking.
func TestReaderNoPanicOnGarbage(t *testing.T) {
	g := newValueGen(4)
	for range 3000 {
		wire := AppendValue(nil, g.value(3))
		for range 1 + g.rng.IntN(3) {
			if len(wire) == 0 {
				break
			}
			wire[g.rng.IntN(len(wire))] = "\r\n$*%:-+_#,(!=~>|0123456789"[g.rng.IntN(27)]
		}
		got, err := decodeAll(bufio.NewReader(bytes.NewReader(wire)), 16, fuzzLimits)
		slow, slowErr := decodeAll(newChunkReader(bytes.NewReader(wire), 9), 16, fuzzLimits)
		if !equalValues(got, slow) || errorClass(err) != errorClass(slowErr) {
			t.Fatalf("%q: chunked %v, %v; whole %v, %v", wire, slow, slowErr, got, err)
		}
	}
}

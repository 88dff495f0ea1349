package resp

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/internal/argkind"
)

func TestAppendArg(t *testing.T) {
	tests := []struct {
		name string
		arg  any
		want string
	}{
		{"string", "hello", "$5\r\nhello\r\n"},
		{"string-empty", "", "$0\r\n\r\n"},
		{"string-binary", "a\r\nb", "$4\r\na\r\nb\r\n"},
		{"bytes", []byte("xyz"), "$3\r\nxyz\r\n"},
		{"bytes-nil", []byte(nil), "$0\r\n\r\n"},
		{"int", 42, "$2\r\n42\r\n"},
		{"int-negative", -7, "$2\r\n-7\r\n"},
		{"int8", int8(-128), "$4\r\n-128\r\n"},
		{"int16", int16(32767), "$5\r\n32767\r\n"},
		{"int32", int32(-2147483648), "$11\r\n-2147483648\r\n"},
		{"int64-min", int64(math.MinInt64), "$20\r\n-9223372036854775808\r\n"},
		{"uint", uint(7), "$1\r\n7\r\n"},
		{"uint8", uint8(255), "$3\r\n255\r\n"},
		{"uint16", uint16(65535), "$5\r\n65535\r\n"},
		{"uint32", uint32(4294967295), "$10\r\n4294967295\r\n"},
		{"uint64-max", uint64(math.MaxUint64), "$20\r\n18446744073709551615\r\n"},
		{"float64", 1.5, "$3\r\n1.5\r\n"},
		{"float64-integral", 100.0, "$3\r\n100\r\n"},
		{"float64-no-exponent", 1e21, "$22\r\n1000000000000000000000\r\n"},
		{"float64-small", 0.000001, "$8\r\n0.000001\r\n"},
		{"float64-negative-zero", math.Copysign(0, -1), "$2\r\n-0\r\n"},
		{"float64-inf", math.Inf(1), "$4\r\n+inf\r\n"},
		{"float64-neg-inf", math.Inf(-1), "$4\r\n-inf\r\n"},
		{"float32", float32(0.1), "$3\r\n0.1\r\n"},
		{"float32-inf", float32(math.Inf(-1)), "$4\r\n-inf\r\n"},
		{"true", true, "$1\r\n1\r\n"},
		{"false", false, "$1\r\n0\r\n"},
	}
	for _, tt := range tests {
		got, err := AppendArg([]byte("prefix"), 3, tt.arg)
		if err != nil {
			t.Errorf("%s: AppendArg(%#v): %v", tt.name, tt.arg, err)
			continue
		}
		if string(got) != "prefix"+tt.want {
			t.Errorf("%s: AppendArg(%#v) = %q, want %q", tt.name, tt.arg, got, "prefix"+tt.want)
		}
	}
}

// Named types whose kinds AppendArg accepts: go by the kind, as go-redis does (issue 23,
// point 2; they used to be "unsupported type").
type (
	namedInt    int32
	namedUint   uint16
	namedUptr   uintptr
	namedString string
	namedFloat  float64
	namedFloat3 float32
	namedBool   bool
	namedBytes  []byte
	namedByte   uint8
	namedBytes2 []namedByte
)

var namedArgs = []struct {
	name string
	arg  any
	want string
}{
	{"duration", 1500 * time.Millisecond, "1500000000"},
	{"named int32", namedInt(-7), "-7"},
	{"named uint16", namedUint(65535), "65535"},
	{"named uintptr", namedUptr(9), "9"},
	{"named string", namedString("key:1"), "key:1"},
	{"named string long", namedString(strings.Repeat("k", 500)), strings.Repeat("k", 500)},
	{"named float64", namedFloat(2.5), "2.5"},
	{"named float64 long", namedFloat(1e300), "1" + strings.Repeat("0", 300)},
	{"named float32", namedFloat3(0.1), "0.1"},
	{"named float inf", namedFloat(math.Inf(-1)), "-inf"},
	{"named bool", namedBool(true), "1"},
	{"raw JSON", json.RawMessage(`{"a":1}`), `{"a":1}`},
	{"named bytes", namedBytes("xyz"), "xyz"},
	{"named bytes of named bytes", namedBytes2{'h', 'i'}, "hi"},
	{"time.Month", time.March, "3"},
}

func TestAppendArgNamedTypes(t *testing.T) {
	for _, tt := range namedArgs {
		got, err := AppendArg([]byte("prefix"), 3, tt.arg)
		if want := "prefix" + string(AppendBulkString(nil, tt.want)); err != nil || string(got) != want {
			t.Errorf("%s: AppendArg(%#v) = %q, %v; want %q", tt.name, tt.arg, got, err, want)
		}
		text, err := AppendArgText([]byte("x"), 3, tt.arg)
		if err != nil || string(text) != "x"+tt.want {
			t.Errorf("%s: AppendArgText(%#v) = %q, %v; want %q", tt.name, tt.arg, text, err, "x"+tt.want)
		}
		got, err = AppendCommandPrefixed(nil, "p:", []int{1}, "GET", tt.arg)
		if want := "*2\r\n$3\r\nGET\r\n" + string(AppendBulkString(nil, "p:"+tt.want)); err != nil || string(got) != want {
			t.Errorf("%s: AppendCommandPrefixed(%#v) = %q, %v; want %q", tt.name, tt.arg, got, err, want)
		}
	}
	if _, err := AppendArg(nil, 1, namedFloat(math.NaN())); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("named NaN: %v; want ErrInvalidArg", err)
	}
}

// A named argument costs no allocation either: it is read by reflection in place.
func TestAppendCommandNamedAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	key, ttl, prio, raw := namedString("user:1"), 90*time.Second, namedInt(3), json.RawMessage("{}")
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		buf, err = AppendCommand(buf[:0], "SET", key, raw, "PX", ttl, prio, namedFloat(1.5), namedBool(true))
		if err != nil {
			t.Fatal(err)
		}
		buf, err = AppendCommandPrefixed(buf, "p:", []int{1}, "GET", key)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendCommand with named types allocates %v times per call, want 0", allocs)
	}
}

func TestAppendArgExtremeFloats(t *testing.T) {
	for _, f := range []float64{math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64,
		-2.2250738585072014e-308, 1.2345678901234567e-300} {
		got, err := AppendArg(nil, 0, f)
		if err != nil {
			t.Fatal(err)
		}
		v, err := readOne(string(got))
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		if back, err := v.Float(); err != nil || back != f {
			t.Errorf("%v encoded as %q reads back as %v, %v", f, got, back, err)
		}
	}
}

func TestAppendArgErrors(t *testing.T) {
	type custom struct{}
	tests := []struct {
		name   string
		arg    any
		reason string
	}{
		{"nil", nil, "nil argument"},
		{"nan64", math.NaN(), "NaN is not a valid number"},
		{"nan32", float32(math.NaN()), "NaN is not a valid number"},
		{"map", map[string]int{}, "unsupported type map[string]int"},
		{"struct", custom{}, "unsupported type resp.custom"},
		{"pointer", new(int), "unsupported type *int"},
		{"strings", []string{"a"}, "unsupported type []string"},
		{"value", BulkString("x"), "unsupported type resp.Value"},
		{"named struct", time.Time{}, "unsupported type time.Time"},
		{"named slice", []namedInt{1}, "unsupported type []resp.namedInt"},
		{"named map", http.Header{}, "unsupported type http.Header"},
	}
	for _, tt := range tests {
		dst := []byte("keep")
		got, err := AppendArg(dst, 5, tt.arg)
		var ae *ArgError
		if !errors.As(err, &ae) || ae.Index != 5 || ae.Reason != tt.reason {
			t.Errorf("%s: error %#v, want ArgError{5, %q}", tt.name, err, tt.reason)
		}
		if !errors.Is(err, ErrInvalidArg) {
			t.Errorf("%s: %v does not match ErrInvalidArg", tt.name, err)
		}
		if string(got) != "keep" {
			t.Errorf("%s: dst changed to %q", tt.name, got)
		}
	}
}

func TestAppendCommand(t *testing.T) {
	got, err := AppendCommand([]byte("old"), "SET", "key", []byte("v"), 10, 2.5, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "old*6\r\n$3\r\nSET\r\n$3\r\nkey\r\n$1\r\nv\r\n$2\r\n10\r\n$3\r\n2.5\r\n$1\r\n1\r\n"
	if string(got) != want {
		t.Errorf("AppendCommand = %q, want %q", got, want)
	}
}

func TestAppendCommandErrors(t *testing.T) {
	dst := make([]byte, 3, 64)
	copy(dst, "old")
	got, err := AppendCommand(dst)
	if err != ErrEmptyCommand || string(got) != "old" {
		t.Errorf("no args: %q, %v; want \"old\", ErrEmptyCommand", got, err)
	}
	got, err = AppendCommand(dst, "SET", "key", struct{}{})
	var ae *ArgError
	if !errors.As(err, &ae) || ae.Index != 2 {
		t.Errorf("bad third arg: error %v, want ArgError at index 2", err)
	}
	if string(got) != "old" {
		t.Errorf("bad third arg: dst %q, want it truncated to \"old\"", got)
	}
}

func TestAppendCommandAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	key, ttl, score := "user:1", 3600, 1.25
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		buf, err = AppendCommand(buf[:0], "ZADD", key, score, "EX", ttl, []byte("member"), uint16(3), true)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendCommand allocates %v times per call, want 0", allocs)
	}
}

func TestAppendHelpers(t *testing.T) {
	if got := string(AppendArrayHeader(nil, 3)); got != "*3\r\n" {
		t.Errorf("AppendArrayHeader = %q", got)
	}
	if got := string(AppendBulkString(nil, "hi")); got != "$2\r\nhi\r\n" {
		t.Errorf("AppendBulkString = %q", got)
	}
	if got := string(AppendBulk(nil, []byte("hey"))); got != "$3\r\nhey\r\n" {
		t.Errorf("AppendBulk = %q", got)
	}
}

func TestAppendValue(t *testing.T) {
	tests := []struct {
		name string
		v    Value
		want string
	}{
		{"simple", SimpleString("OK"), "+OK\r\n"},
		{"error", ErrorValue("ERR x"), "-ERR x\r\n"},
		{"integer", Integer(-3), ":-3\r\n"},
		{"bulk", BulkString("hi"), "$2\r\nhi\r\n"},
		{"bulk-empty", BulkString(""), "$0\r\n\r\n"},
		{"null", Null(), "_\r\n"},
		{"zero-value", Value{}, "_\r\n"},
		{"true", Boolean(true), "#t\r\n"},
		{"false", Boolean(false), "#f\r\n"},
		{"double", Double(1.5), ",1.5\r\n"},
		{"double-large", Double(1e300), ",1e+300\r\n"},
		{"double-inf", Double(math.Inf(1)), ",inf\r\n"},
		{"double-neg-inf", Double(math.Inf(-1)), ",-inf\r\n"},
		{"double-nan", Double(math.NaN()), ",nan\r\n"},
		{"big", BigNumber("-123"), "(-123\r\n"},
		{"bulk-error", BulkErrorValue("ERR y"), "!5\r\nERR y\r\n"},
		{"verbatim", Verbatim("txt", "hi"), "=6\r\ntxt:hi\r\n"},
		{"array", Array(Integer(1), BulkString("a")), "*2\r\n:1\r\n$1\r\na\r\n"},
		{"array-empty", Array(), "*0\r\n"},
		{"set", Set(Integer(1)), "~1\r\n:1\r\n"},
		{"push", Push(BulkString("m")), ">1\r\n$1\r\nm\r\n"},
		{"map", Map(SimpleString("k"), Integer(1)), "%1\r\n+k\r\n:1\r\n"},
		{"attributes", Integer(1).WithAttributes(SimpleString("a"), Boolean(true)), "|1\r\n+a\r\n#t\r\n:1\r\n"},
		{"nested-attributes", Array(Null().WithAttributes(Integer(1), Integer(2))), "*1\r\n|1\r\n:1\r\n:2\r\n_\r\n"},
	}
	for _, tt := range tests {
		if got := string(AppendValue([]byte("p"), tt.v)); got != "p"+tt.want {
			t.Errorf("%s: AppendValue(%v) = %q, want %q", tt.name, tt.v, got, "p"+tt.want)
		}
	}
}

// AppendArgText is the text AppendArg frames: for every accepted type the two agree,
// and both refuse the same arguments.
func TestAppendArgTextMatchesAppendArg(t *testing.T) {
	args := []any{"s", []byte("b"), 0, -7, int8(-8), int16(16), int32(-32), int64(math.MinInt64),
		uint(1), uint8(8), uint16(16), uint32(32), uint64(math.MaxUint64), float32(1.5), 0.1,
		-2.5e-7, 1e300, math.Inf(1), math.Inf(-1), true, false, math.NaN(), nil, struct{}{},
		&argkind.Name{Text: "GET"}}
	for _, a := range args {
		text, terr := AppendArgText([]byte("x"), 3, a)
		bulk, berr := AppendArg(nil, 3, a)
		if (terr == nil) != (berr == nil) {
			t.Errorf("%#v: AppendArgText error %v, AppendArg error %v", a, terr, berr)
			continue
		}
		if terr != nil {
			if string(text) != "x" {
				t.Errorf("%#v: dst changed on error: %q", a, text)
			}
			continue
		}
		if want := string(AppendBulk(nil, text[1:])); string(bulk) != want {
			t.Errorf("%#v: AppendArg %q, framed text %q", a, bulk, want)
		}
	}
}

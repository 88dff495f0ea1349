package resp

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"
)

// errKind classifies an accessor's error for table comparison.
type errKind int

const (
	noErr errKind = iota
	nullErr
	serverErr
	typeErr
)

func classify(err error) errKind {
	var se *ServerError
	var te *TypeError
	switch {
	case err == nil:
		return noErr
	case errors.Is(err, ErrNull):
		return nullErr
	case errors.As(err, &se):
		return serverErr
	case errors.As(err, &te):
		return typeErr
	}
	return -1
}

func TestValueText(t *testing.T) {
	tests := []struct {
		v    Value
		want string
		err  errKind
	}{
		{SimpleString("OK"), "OK", noErr},
		{BulkString("data"), "data", noErr},
		{BulkBytes([]byte("raw")), "raw", noErr},
		{BigNumber("-99"), "-99", noErr},
		{Verbatim("txt", "hi there"), "hi there", noErr},
		{Value{kind: KindVerbatim, str: "ab"}, "ab", noErr},
		{Null(), "", nullErr},
		{ErrorValue("ERR x"), "", serverErr},
		{BulkErrorValue("ERR y"), "", serverErr},
		{Integer(1), "", typeErr},
		{Array(), "", typeErr},
	}
	for _, tt := range tests {
		got, err := tt.v.Text()
		if got != tt.want || classify(err) != tt.err {
			t.Errorf("%v.Text() = %q, %v; want %q, class %d", tt.v, got, err, tt.want, tt.err)
		}
		b, err := tt.v.Bytes()
		if string(b) != tt.want || classify(err) != tt.err {
			t.Errorf("%v.Bytes() = %q, %v; want %q, class %d", tt.v, b, err, tt.want, tt.err)
		}
	}
}

func TestValueBytesIsACopy(t *testing.T) {
	v := BulkString("abc")
	b, _ := v.Bytes()
	b[0] = 'X'
	if s, _ := v.Text(); s != "abc" {
		t.Errorf("modifying Bytes changed the value to %q", s)
	}
}

func TestValueInt(t *testing.T) {
	tests := []struct {
		v    Value
		want int64
		err  errKind
	}{
		{Integer(-5), -5, noErr},
		{BulkString("42"), 42, noErr},
		{SimpleString("7"), 7, noErr},
		{BigNumber("123"), 123, noErr},
		{BigNumber("99999999999999999999"), 0, typeErr},
		{BulkString("4x"), 0, typeErr},
		{Double(1), 0, typeErr},
		{Null(), 0, nullErr},
		{ErrorValue("WRONGTYPE no"), 0, serverErr},
	}
	for _, tt := range tests {
		got, err := tt.v.Int()
		if got != tt.want || classify(err) != tt.err {
			t.Errorf("%v.Int() = %d, %v; want %d, class %d", tt.v, got, err, tt.want, tt.err)
		}
	}
	_, err := BulkString("4x").Int()
	if !errors.Is(err, strconv.ErrSyntax) {
		t.Errorf("Int of bad text: %v does not wrap strconv.ErrSyntax", err)
	}
}

func TestValueFloat(t *testing.T) {
	tests := []struct {
		v    Value
		want float64
		err  errKind
	}{
		{Double(1.5), 1.5, noErr},
		{Double(math.Inf(-1)), math.Inf(-1), noErr},
		{Integer(3), 3, noErr},
		{BulkString("3.25"), 3.25, noErr},
		{BulkString("inf"), math.Inf(1), noErr},
		{BulkString("+inf"), math.Inf(1), noErr},
		{SimpleString("-inf"), math.Inf(-1), noErr},
		{BulkString("1e3"), 1000, noErr},
		{BulkString("x"), 0, typeErr},
		{Boolean(true), 0, typeErr},
		{Null(), 0, nullErr},
		{BulkErrorValue("ERR z"), 0, serverErr},
	}
	for _, tt := range tests {
		got, err := tt.v.Float()
		if got != tt.want || classify(err) != tt.err {
			t.Errorf("%v.Float() = %v, %v; want %v, class %d", tt.v, got, err, tt.want, tt.err)
		}
	}
	if f, err := Double(math.NaN()).Float(); err != nil || !math.IsNaN(f) {
		t.Errorf("NaN double: %v, %v", f, err)
	}
}

func TestParseFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1.5", 1.5, true},
		{"INF", math.Inf(1), true},
		{"-Inf", math.Inf(-1), true},
		{"-5e-1", -0.5, true},
		{"", 0, false},
		{"abc", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseFloat(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	for _, s := range []string{"nan", "-nan", "NaN"} {
		if f, err := ParseFloat(s); err != nil || !math.IsNaN(f) {
			t.Errorf("ParseFloat(%q) = %v, %v; want NaN", s, f, err)
		}
	}
}

func TestValueBool(t *testing.T) {
	tests := []struct {
		v    Value
		want bool
		err  errKind
	}{
		{Boolean(true), true, noErr},
		{Boolean(false), false, noErr},
		{Integer(1), true, noErr},
		{Integer(0), false, noErr},
		{Integer(2), false, typeErr},
		{SimpleString("OK"), true, noErr},
		{SimpleString("NO"), false, typeErr},
		{BulkString("1"), false, typeErr},
		{Null(), false, nullErr},
		{ErrorValue("ERR"), false, serverErr},
	}
	for _, tt := range tests {
		got, err := tt.v.Bool()
		if got != tt.want || classify(err) != tt.err {
			t.Errorf("%v.Bool() = %v, %v; want %v, class %d", tt.v, got, err, tt.want, tt.err)
		}
	}
}

func TestValueArray(t *testing.T) {
	elems := []Value{Integer(1), BulkString("a")}
	tests := []struct {
		v    Value
		want []Value
		err  errKind
	}{
		{Array(elems...), elems, noErr},
		{Set(elems...), elems, noErr},
		{Push(elems...), elems, noErr},
		{Map(elems...), elems, noErr},
		{Array(), nil, noErr},
		{BulkString("x"), nil, typeErr},
		{Null(), nil, nullErr},
		{ErrorValue("ERR"), nil, serverErr},
	}
	for _, tt := range tests {
		got, err := tt.v.Array()
		if !reflect.DeepEqual(got, tt.want) || classify(err) != tt.err {
			t.Errorf("%v.Array() = %v, %v; want %v, class %d", tt.v, got, err, tt.want, tt.err)
		}
	}
}

func TestValueMap(t *testing.T) {
	tests := []struct {
		name string
		v    Value
		want map[string]Value
		err  errKind
	}{
		{"resp3", Map(BulkString("a"), Integer(1), SimpleString("b"), Integer(2)),
			map[string]Value{"a": Integer(1), "b": Integer(2)}, noErr},
		{"resp2-even-array", Array(BulkString("f"), BulkString("v")),
			map[string]Value{"f": BulkString("v")}, noErr},
		{"non-text-keys", Map(Integer(7), Null(), Boolean(true), Double(2)),
			map[string]Value{"7": Null(), "true": Double(2)}, noErr},
		{"empty", Map(), map[string]Value{}, noErr},
		{"empty-array", Array(), map[string]Value{}, noErr},
		{"resp3-pairs", Array(Array(BulkString("a"), Double(1.5)), Array(BulkString("b"), Double(2))),
			map[string]Value{"a": Double(1.5), "b": Double(2)}, noErr},
		{"resp3-one-pair", Array(Array(BulkString("a"), Double(1.5))),
			map[string]Value{"a": Double(1.5)}, noErr},
		{"resp2-value-is-array", Array(BulkString("k"), Array(BulkString("x"), BulkString("y"))),
			map[string]Value{"k": Array(BulkString("x"), BulkString("y"))}, noErr},
		{"pairs-and-scalars", Array(Array(BulkString("a"), Integer(1)), BulkString("b")), nil, typeErr},
		{"array-key", Array(Array(BulkString("a")), Integer(1)), nil, typeErr},
		{"null-key", Array(Null(), Integer(1)), nil, typeErr},
		{"pair-with-array-key", Array(Array(Array(), Integer(1))), nil, typeErr},
		{"map-with-array-key", Map(Array(), Integer(1)), nil, typeErr},
		// ZRANGE ... WITHSCORES under RESP3: an array of [member, score] pairs, read
		// as pairs, not as one entry keyed by the text of the first pair.
		{"array-of-pairs", Array(Array(BulkString("a"), Double(1.5)), Array(BulkString("b"), Double(2))),
			map[string]Value{"a": Double(1.5), "b": Double(2)}, noErr},
		{"array-of-pairs-with-a-triple", Array(Array(BulkString("a"), Double(1.5)), Array(BulkString("b"), Double(2), Null())), nil, typeErr},
		{"flat-array-with-a-non-text-key", Array(Array(BulkString("a")), BulkString("v")), nil, typeErr},
		{"odd-array", Array(BulkString("f")), nil, typeErr},
		{"set", Set(), nil, typeErr},
		{"null", Null(), nil, nullErr},
		{"error", ErrorValue("ERR"), nil, serverErr},
	}
	for _, tt := range tests {
		got, err := tt.v.Map()
		if !reflect.DeepEqual(got, tt.want) || classify(err) != tt.err {
			t.Errorf("%s: Map() = %v, %v; want %v, class %d", tt.name, got, err, tt.want, tt.err)
		}
	}
	if _, err := Array(Null()).Map(); !errors.Is(err, errOddArray) {
		t.Errorf("odd array: %v does not wrap errOddArray", err)
	}
}

func TestValueErr(t *testing.T) {
	tests := []struct {
		v        Value
		wantCode string
	}{
		{ErrorValue("ERR syntax error"), "ERR"},
		{BulkErrorValue("SYNTAX invalid"), "SYNTAX"},
		{BulkString("ERR not an error"), ""},
		{Null(), ""},
	}
	for _, tt := range tests {
		err := tt.v.Err()
		if tt.wantCode == "" {
			if err != nil {
				t.Errorf("%v.Err() = %v, want nil", tt.v, err)
			}
			continue
		}
		var se *ServerError
		if !errors.As(err, &se) || se.Code != tt.wantCode {
			t.Errorf("%v.Err() = %#v, want code %q", tt.v, err, tt.wantCode)
		}
	}
}

func TestValueKindNullLen(t *testing.T) {
	tests := []struct {
		v      Value
		kind   Kind
		null   bool
		length int
		format string
	}{
		{Value{}, KindInvalid, false, 0, ""},
		{Null(), KindNull, true, 0, ""},
		{Array(Integer(1), Integer(2), Integer(3)), KindArray, false, 3, ""},
		{Set(Integer(1)), KindSet, false, 1, ""},
		{Push(), KindPush, false, 0, ""},
		{Map(Integer(1), Integer(2), Integer(3), Integer(4)), KindMap, false, 2, ""},
		{BulkString("abc"), KindBulkString, false, 3, ""},
		{SimpleString("ab"), KindSimpleString, false, 2, ""},
		{BigNumber("12345"), KindBigNumber, false, 5, ""},
		{ErrorValue("ERR"), KindError, false, 3, ""},
		{BulkErrorValue("ERR x"), KindBulkError, false, 5, ""},
		{Verbatim("mkd", "hello"), KindVerbatim, false, 5, "mkd"},
		{Value{kind: KindVerbatim, str: "xy"}, KindVerbatim, false, 2, ""},
		{Integer(12345), KindInteger, false, 0, ""},
		{Double(1), KindDouble, false, 0, ""},
		{Boolean(true), KindBoolean, false, 0, ""},
	}
	for _, tt := range tests {
		if tt.v.Kind() != tt.kind || tt.v.IsNull() != tt.null || tt.v.Len() != tt.length || tt.v.VerbatimFormat() != tt.format {
			t.Errorf("%v: kind %v null %v len %d format %q; want %v %v %d %q", tt.v,
				tt.v.Kind(), tt.v.IsNull(), tt.v.Len(), tt.v.VerbatimFormat(), tt.kind, tt.null, tt.length, tt.format)
		}
	}
}

func TestValueString(t *testing.T) {
	tests := []struct {
		v    Value
		want string
	}{
		{SimpleString("OK"), `"OK"`},
		{BulkString("a\nb"), `"a\nb"`},
		{Verbatim("txt", "hi"), `"txt:hi"`},
		{ErrorValue("ERR x"), "(error) ERR x"},
		{BulkErrorValue("ERR y"), "(error) ERR y"},
		{Integer(-3), "-3"},
		{Null(), "(nil)"},
		{Boolean(false), "false"},
		{Double(1.5), "1.5"},
		{Double(math.Inf(1)), "+Inf"},
		{BigNumber("12"), "(big) 12"},
		{Array(Integer(1), BulkString("a")), `[1, "a"]`},
		{Set(Integer(1), Integer(2)), "~{1, 2}"},
		{Push(BulkString("m")), `>["m"]`},
		{Map(BulkString("a"), Integer(1), BulkString("b"), Array()), `{"a": 1, "b": []}`},
		{Value{}, "(invalid)"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestKindString(t *testing.T) {
	if got := KindBulkString.String(); got != "bulk-string" {
		t.Errorf("KindBulkString = %q", got)
	}
	if got := Kind(99).String(); got != "kind(99)" {
		t.Errorf("Kind(99) = %q", got)
	}
}

func TestValueAttributes(t *testing.T) {
	kv := []Value{SimpleString("ttl"), Integer(5)}
	v := BulkString("x").WithAttributes(kv...)
	if !reflect.DeepEqual(v.Attributes(), kv) {
		t.Errorf("Attributes() = %v, want %v", v.Attributes(), kv)
	}
	if BulkString("x").Attributes() != nil {
		t.Error("a value without attributes has some")
	}
}

func TestOddPairsPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"Map":            func() { Map(Integer(1)) },
		"WithAttributes": func() { Null().WithAttributes(Integer(1)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with an odd count did not panic", name)
				}
			}()
			f()
		}()
	}
}

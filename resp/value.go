package resp

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kind is the wire type of a Value.
type Kind uint8

// The kinds of RESP2 and RESP3. RESP2's null bulk string ($-1) and null array (*-1)
// both decode as KindNull, like RESP3's _.
const (
	KindInvalid      Kind = iota // the zero Value
	KindSimpleString             // +
	KindError                    // - (simple error)
	KindInteger                  // :
	KindBulkString               // $
	KindArray                    // *
	KindNull                     // _, $-1, *-1
	KindBoolean                  // #
	KindDouble                   // ,
	KindBigNumber                // (
	KindBulkError                // !
	KindVerbatim                 // =
	KindMap                      // %
	KindSet                      // ~
	KindPush                     // >
)

var kindNames = [...]string{
	KindInvalid:      "invalid",
	KindSimpleString: "simple-string",
	KindError:        "error",
	KindInteger:      "integer",
	KindBulkString:   "bulk-string",
	KindArray:        "array",
	KindNull:         "null",
	KindBoolean:      "boolean",
	KindDouble:       "double",
	KindBigNumber:    "big-number",
	KindBulkError:    "bulk-error",
	KindVerbatim:     "verbatim-string",
	KindMap:          "map",
	KindSet:          "set",
	KindPush:         "push",
}

// String returns the kind's name, such as "bulk-string".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one decoded reply of any RESP2 or RESP3 type. It is a small value type:
// copying it is cheap and shares the (immutable) element slices.
//
// Strings are held as Go strings, so Text costs nothing and Bytes returns a copy.
type Value struct {
	kind  Kind
	num   int64   // integer; boolean 0/1; double as math.Float64bits
	str   string  // simple, bulk, verbatim ("fmt:text"), error text, big number digits
	elems []Value // array, set, push; map as flattened key, value, key, value...
	attrs []Value // RESP3 attributes that preceded the value, flattened key, value...
}

// SimpleString returns a simple string (+) value.
func SimpleString(s string) Value { return Value{kind: KindSimpleString, str: s} }

// BulkString returns a bulk string ($) value.
func BulkString(s string) Value { return Value{kind: KindBulkString, str: s} }

// BulkBytes returns a bulk string ($) value holding a copy of b.
func BulkBytes(b []byte) Value { return Value{kind: KindBulkString, str: string(b)} }

// Integer returns an integer (:) value.
func Integer(n int64) Value { return Value{kind: KindInteger, num: n} }

// Null returns the null value.
func Null() Value { return Value{kind: KindNull} }

// Boolean returns a RESP3 boolean (#) value.
func Boolean(b bool) Value {
	v := Value{kind: KindBoolean}
	if b {
		v.num = 1
	}
	return v
}

// Double returns a RESP3 double (,) value.
func Double(f float64) Value { return Value{kind: KindDouble, num: int64(math.Float64bits(f))} }

// BigNumber returns a RESP3 big number (() value from its decimal digits.
func BigNumber(digits string) Value { return Value{kind: KindBigNumber, str: digits} }

// ErrorValue returns a simple error (-) value with the server's full message,
// such as "ERR syntax error".
func ErrorValue(msg string) Value { return Value{kind: KindError, str: msg} }

// BulkErrorValue returns a RESP3 bulk error (!) value.
func BulkErrorValue(msg string) Value { return Value{kind: KindBulkError, str: msg} }

// Verbatim returns a RESP3 verbatim string (=) with a three-letter format such as "txt".
func Verbatim(format, text string) Value {
	return Value{kind: KindVerbatim, str: format + ":" + text}
}

// Array returns an array (*) value.
func Array(elems ...Value) Value { return Value{kind: KindArray, elems: elems} }

// Set returns a RESP3 set (~) value.
func Set(elems ...Value) Value { return Value{kind: KindSet, elems: elems} }

// Push returns a RESP3 push (>) value.
func Push(elems ...Value) Value { return Value{kind: KindPush, elems: elems} }

// Map returns a RESP3 map (%) value from flattened key, value pairs. An odd count panics:
// it is a programming error, not wire input.
func Map(kv ...Value) Value {
	if len(kv)%2 != 0 {
		panic("resp: Map needs key, value pairs")
	}
	return Value{kind: KindMap, elems: kv}
}

// WithAttributes returns v carrying the RESP3 attributes kv (flattened key, value pairs).
func (v Value) WithAttributes(kv ...Value) Value {
	if len(kv)%2 != 0 {
		panic("resp: attributes need key, value pairs")
	}
	v.attrs = kv
	return v
}

// Kind reports the wire type of v.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is a null reply (RESP3 _, RESP2 $-1 or *-1).
func (v Value) IsNull() bool { return v.kind == KindNull }

// Attributes returns the RESP3 attributes that preceded v, flattened key, value pairs,
// or nil.
func (v Value) Attributes() []Value { return v.attrs }

// Err returns v as a *ServerError when it is an error reply (simple or bulk), else nil.
// Errors nested in arrays (EXEC, pipelines) stay values until asked.
func (v Value) Err() error {
	if v.kind == KindError || v.kind == KindBulkError {
		return NewServerError(v.str)
	}
	return nil
}

func (v Value) typeError(want string) error {
	if err := v.Err(); err != nil {
		return err
	}
	if v.kind == KindNull {
		return ErrNull
	}
	return &TypeError{Kind: v.kind, Want: want}
}

// Text returns the string of a simple string, bulk string, verbatim string (without its
// format prefix) or big number. A null gives ErrNull, an error reply its *ServerError.
func (v Value) Text() (string, error) {
	switch v.kind {
	case KindSimpleString, KindBulkString, KindBigNumber:
		return v.str, nil
	case KindVerbatim:
		if len(v.str) >= 4 && v.str[3] == ':' {
			return v.str[4:], nil
		}
		return v.str, nil
	}
	return "", v.typeError("text")
}

// VerbatimFormat returns the three-letter format of a verbatim string ("txt", "mkd"),
// or "" for other kinds.
func (v Value) VerbatimFormat() string {
	if v.kind == KindVerbatim && len(v.str) >= 4 && v.str[3] == ':' {
		return v.str[:3]
	}
	return ""
}

// Bytes returns a fresh copy of what Text returns; the caller may modify it.
func (v Value) Bytes() ([]byte, error) {
	s, err := v.Text()
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// Int returns an integer reply, or a string reply holding a decimal integer (as GET of a
// counter returns).
func (v Value) Int() (int64, error) {
	switch v.kind {
	case KindInteger:
		return v.num, nil
	case KindSimpleString, KindBulkString, KindBigNumber:
		n, err := strconv.ParseInt(v.str, 10, 64)
		if err != nil {
			return 0, &TypeError{Kind: v.kind, Want: "integer", Err: err}
		}
		return n, nil
	}
	return 0, v.typeError("integer")
}

// Float returns a double, an integer, or a string reply holding a number (RESP2 sends
// scores as bulk strings). "inf", "+inf" and "-inf" parse as infinities.
func (v Value) Float() (float64, error) {
	switch v.kind {
	case KindDouble:
		return math.Float64frombits(uint64(v.num)), nil
	case KindInteger:
		return float64(v.num), nil
	case KindSimpleString, KindBulkString, KindBigNumber:
		f, err := ParseFloat(v.str)
		if err != nil {
			return 0, &TypeError{Kind: v.kind, Want: "float", Err: err}
		}
		return f, nil
	}
	return 0, v.typeError("float")
}

// ParseFloat parses a RESP double as Redis writes it ("inf", "-inf", "nan", decimals).
func ParseFloat(s string) (float64, error) {
	switch strings.ToLower(s) {
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan", "-nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// Bool returns a RESP3 boolean, or an integer 0/1 (RESP2 replies such as EXISTS and
// SETNX), or "OK" as true.
func (v Value) Bool() (bool, error) {
	switch v.kind {
	case KindBoolean:
		return v.num != 0, nil
	case KindInteger:
		if v.num == 0 || v.num == 1 {
			return v.num == 1, nil
		}
	case KindSimpleString:
		if v.str == "OK" {
			return true, nil
		}
	}
	return false, v.typeError("boolean")
}

// Array returns the elements of an array, set or push. For a map it returns the
// flattened key, value pairs, so code reading HGETALL works under RESP2 and RESP3 alike.
// The slice is shared: do not modify it.
func (v Value) Array() ([]Value, error) {
	switch v.kind {
	case KindArray, KindSet, KindPush, KindMap:
		return v.elems, nil
	}
	return nil, v.typeError("array")
}

// Len returns the number of elements of an aggregate (pairs for a map), the length of a
// string, and 0 otherwise.
func (v Value) Len() int {
	switch v.kind {
	case KindArray, KindSet, KindPush:
		return len(v.elems)
	case KindMap:
		return len(v.elems) / 2
	case KindSimpleString, KindBulkString, KindBigNumber, KindError, KindBulkError:
		return len(v.str)
	case KindVerbatim:
		s, _ := v.Text()
		return len(s)
	}
	return 0
}

// Map returns a map reply, or an array in one of the forms servers send maps as: a
// flat array of key, value pairs (the RESP2 form of HGETALL, CONFIG GET, ...), whose
// keys must be text, or an array of [key, value] pairs (RESP3's ZRANGE ... WITHSCORES,
// HRANDFIELD ... WITHVALUES). Any other array is an error rather than a map with
// invented keys. Keys of a map reply that are not text use their String form.
func (v Value) Map() (map[string]Value, error) {
	switch v.kind {
	case KindMap:
		m := make(map[string]Value, len(v.elems)/2)
		for i := 0; i+1 < len(v.elems); i += 2 {
			k, err := v.elems[i].Text()
			if err != nil {
				k = v.elems[i].String()
			}
			m[k] = v.elems[i+1]
		}
		return m, nil
	case KindArray:
		if pairs, ok := v.pairs(); ok {
			return pairs, nil
		}
		if len(v.elems)%2 != 0 {
			return nil, &TypeError{Kind: v.kind, Want: "map", Err: errOddArray}
		}
		m := make(map[string]Value, len(v.elems)/2)
		for i := 0; i < len(v.elems); i += 2 {
			k, err := v.elems[i].Text()
			if err != nil {
				return nil, &TypeError{Kind: v.kind, Want: "map", Err: errMapKey}
			}
			m[k] = v.elems[i+1]
		}
		return m, nil
	}
	return nil, v.typeError("map")
}

// pairs reads an array of [key, value] arrays with text keys; ok is false for any
// other array, or an empty one (read as the flat form).
func (v Value) pairs() (map[string]Value, bool) {
	if len(v.elems) == 0 || v.elems[0].kind != KindArray {
		return nil, false
	}
	m := make(map[string]Value, len(v.elems))
	for _, e := range v.elems {
		if e.kind != KindArray || len(e.elems) != 2 {
			return nil, false
		}
		k, err := e.elems[0].Text()
		if err != nil {
			return nil, false
		}
		m[k] = e.elems[1]
	}
	return m, true
}

// String returns a compact human-readable form for logs and test failures, not a wire
// encoding (AppendValue writes that).
func (v Value) String() string {
	var b strings.Builder
	v.format(&b)
	return b.String()
}

func (v Value) format(b *strings.Builder) {
	switch v.kind {
	case KindSimpleString, KindBulkString, KindVerbatim:
		b.WriteString(strconv.Quote(v.str))
	case KindError, KindBulkError:
		b.WriteString("(error) ")
		b.WriteString(v.str)
	case KindInteger:
		b.WriteString(strconv.FormatInt(v.num, 10))
	case KindNull:
		b.WriteString("(nil)")
	case KindBoolean:
		b.WriteString(strconv.FormatBool(v.num != 0))
	case KindDouble:
		b.WriteString(strconv.FormatFloat(math.Float64frombits(uint64(v.num)), 'g', -1, 64))
	case KindBigNumber:
		b.WriteString("(big) ")
		b.WriteString(v.str)
	case KindArray, KindSet, KindPush, KindMap:
		open, close := "[", "]"
		switch v.kind {
		case KindSet:
			open, close = "~{", "}"
		case KindPush:
			open, close = ">[", "]"
		case KindMap:
			open, close = "{", "}"
		}
		b.WriteString(open)
		for i, e := range v.elems {
			if i > 0 {
				if v.kind == KindMap && i%2 == 1 {
					b.WriteString(": ")
				} else {
					b.WriteString(", ")
				}
			}
			e.format(b)
		}
		b.WriteString(close)
	default:
		fmt.Fprintf(b, "(%s)", v.kind)
	}
}

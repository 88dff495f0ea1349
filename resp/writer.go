package resp

import (
	"math"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/respire/respire/internal/argkind"
)

// AppendCommand appends a command, an array of bulk strings, to dst. See AppendArg for
// the argument types. With no arguments it returns ErrEmptyCommand; on any error it
// returns dst as it was passed (bytes past its length may have been overwritten).
//
// It does not allocate when dst has room, nor make its arguments escape, so callers
// can build commands from stack values.
func AppendCommand(dst []byte, args ...any) ([]byte, error) {
	if len(args) == 0 {
		return dst, ErrEmptyCommand
	}
	out := AppendArrayHeader(dst, len(args))
	for i, arg := range args {
		var err error
		if out, err = AppendArg(out, i, arg); err != nil {
			return dst, err
		}
	}
	return out, nil
}

// AppendCommandPrefixed is AppendCommand with prefix prepended to the arguments at the
// positions in keys (ascending, 0 being the command name): how a client applies a key
// prefix without copying the caller's arguments.
func AppendCommandPrefixed(dst []byte, prefix string, keys []int, args ...any) ([]byte, error) {
	if prefix == "" || len(keys) == 0 {
		return AppendCommand(dst, args...)
	}
	if len(args) == 0 {
		return dst, ErrEmptyCommand
	}
	out := AppendArrayHeader(dst, len(args))
	for i, arg := range args {
		var err error
		if len(keys) > 0 && keys[0] == i {
			keys = keys[1:]
			out, err = appendPrefixedArg(out, i, prefix, arg)
		} else {
			out, err = AppendArg(out, i, arg)
		}
		if err != nil {
			return dst, err
		}
	}
	return out, nil
}

// appendPrefixedArg appends prefix followed by arg's text as one bulk string.
func appendPrefixedArg(dst []byte, index int, prefix string, arg any) ([]byte, error) {
	var text []byte
	switch v := arg.(type) {
	case string:
		dst = appendHeader(dst, '$', int64(len(prefix)+len(v)))
		dst = append(append(dst, prefix...), v...)
		return append(dst, '\r', '\n'), nil
	case []byte:
		text = v
	default:
		if s, ok := argkind.Text(arg); ok {
			text = unsafe.Slice(unsafe.StringData(s), len(s))
			break
		}
		// Numbers: encode as usual in scratch space and take the payload back out.
		var scratch [400]byte
		bulk, err := AppendArg(scratch[:0], index, arg)
		if err != nil {
			return dst, err
		}
		for i, b := range bulk {
			if b == '\n' {
				text = bulk[i+1 : len(bulk)-2]
				break
			}
		}
	}
	dst = appendHeader(dst, '$', int64(len(prefix)+len(text)))
	dst = append(append(dst, prefix...), text...)
	return append(dst, '\r', '\n'), nil
}

// AppendArg appends arg to dst as one bulk string. index is the argument's position,
// used only in the error.
//
// Accepted types: string and []byte as they are; all int and uint types in decimal;
// float32 and float64 in the shortest decimal that reads back exactly (no exponent),
// with infinities as "+inf" and "-inf"; bool as "1" or "0". A named type is taken by
// its kind, as its underlying type would be (type Priority int32, json.RawMessage):
// time.Duration, an int64, is sent as its number of nanoseconds, as go-redis sends it.
// NaN, nil and any other type give an *ArgError and leave dst unchanged.
func AppendArg(dst []byte, index int, arg any) ([]byte, error) {
	switch v := arg.(type) {
	case string:
		return AppendBulkString(dst, v), nil
	case []byte:
		return AppendBulk(dst, v), nil
	case *argkind.Name:
		// Every typed command's first argument: named here rather than left to
		// appendNamedArg, which finds it only after two more type switches.
		return AppendBulkString(dst, v.Text), nil
	case float32, float64:
		// Without an exponent a float64 takes at most 327 bytes ("-0." and 307 zeros
		// before 17 digits), so this never spills to the heap.
		var scratch [336]byte
		return appendBulkText(dst, scratch[:0], index, arg)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, bool, nil:
		var scratch [20]byte // len("-9223372036854775808"), len("18446744073709551615")
		return appendBulkText(dst, scratch[:0], index, arg)
	}
	return appendNamedArg(dst, index, arg)
}

// appendNamedArg is AppendArg for the types its switch does not name, read by their
// kind. The built-in types stay in AppendArg's switch, so that they never pay for
// reflection.
func appendNamedArg(dst []byte, index int, arg any) ([]byte, error) {
	if s, ok := argkind.Text(arg); ok {
		return AppendBulkString(dst, s), nil
	}
	switch reflect.TypeOf(arg).Kind() {
	case reflect.Float32, reflect.Float64:
		var scratch [336]byte
		return appendBulkText(dst, scratch[:0], index, arg)
	}
	var scratch [20]byte
	return appendBulkText(dst, scratch[:0], index, arg)
}

// appendBulkText formats arg in scratch first, because its length precedes it.
func appendBulkText(dst, scratch []byte, index int, arg any) ([]byte, error) {
	text, err := AppendArgText(scratch, index, arg)
	if err != nil {
		return dst, err
	}
	return AppendBulk(dst, text), nil
}

// AppendArgText appends the text that AppendArg sends for arg, without the bulk
// string's framing: what the server receives as the argument. Types and errors are
// those of AppendArg.
func AppendArgText(dst []byte, index int, arg any) ([]byte, error) {
	switch v := arg.(type) {
	case string:
		return append(dst, v...), nil
	case []byte:
		return append(dst, v...), nil
	case *argkind.Name:
		return append(dst, v.Text...), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case float32:
		return appendFloatText(dst, index, float64(v), 32)
	case float64:
		return appendFloatText(dst, index, v, 64)
	case bool:
		return appendBool(dst, v), nil
	case nil:
		return dst, &ArgError{Index: index, Reason: "nil argument"}
	}
	return appendKindText(dst, index, arg)
}

// appendKindText is AppendArgText for a type its switch does not name: a named type
// is encoded as its underlying built-in type would be.
func appendKindText(dst []byte, index int, arg any) ([]byte, error) {
	// reflect.ValueOf, unlike fmt, does not make arg escape: with fmt, every caller's
	// argument would be moved to the heap to serve this rare path.
	v := reflect.ValueOf(arg)
	switch v.Kind() {
	case reflect.String:
		return append(dst, v.String()...), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(dst, v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(dst, v.Uint(), 10), nil
	case reflect.Float32:
		return appendFloatText(dst, index, v.Float(), 32)
	case reflect.Float64:
		return appendFloatText(dst, index, v.Float(), 64)
	case reflect.Bool:
		return appendBool(dst, v.Bool()), nil
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return append(dst, v.Bytes()...), nil
		}
	}
	return dst, &ArgError{Index: index, Reason: "unsupported type " + v.Type().String()}
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, '1')
	}
	return append(dst, '0')
}

// AppendArrayHeader appends the header of an array of n elements ("*n\r\n").
func AppendArrayHeader(dst []byte, n int) []byte {
	return appendHeader(dst, '*', int64(n))
}

// AppendBulkString appends s as a bulk string.
func AppendBulkString(dst []byte, s string) []byte {
	dst = appendHeader(dst, '$', int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendBulk appends b as a bulk string.
func AppendBulk(dst []byte, b []byte) []byte {
	dst = appendHeader(dst, '$', int64(len(b)))
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// appendHeader appends a type byte, a number and CRLF: lengths and integer replies.
func appendHeader(dst []byte, t byte, n int64) []byte {
	dst = append(dst, t)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

func appendFloatText(dst []byte, index int, f float64, bitSize int) ([]byte, error) {
	switch {
	case math.IsNaN(f):
		return dst, &ArgError{Index: index, Reason: "NaN is not a valid number"}
	case math.IsInf(f, 1):
		return append(dst, "+inf"...), nil
	case math.IsInf(f, -1):
		return append(dst, "-inf"...), nil
	}
	return strconv.AppendFloat(dst, f, 'f', -1, bitSize), nil
}

// AppendValue appends v in its own wire form, RESP3 types as RESP3, with its attributes
// written first as an attribute map. It is meant for servers and tests.
//
// Null is written as RESP3's "_"; a server speaking RESP2 writes "$-1\r\n" or
// "*-1\r\n" itself. The zero Value has no wire form and is also written as null.
// Simple strings and errors are written as they are: text containing CR or LF yields a
// frame that does not decode. A verbatim string's format must be three bytes.
func AppendValue(dst []byte, v Value) []byte {
	if len(v.attrs) > 0 {
		dst = appendHeader(dst, '|', int64(len(v.attrs)/2))
		for _, a := range v.attrs {
			dst = AppendValue(dst, a)
		}
	}
	switch v.kind {
	case KindSimpleString:
		return appendLine(dst, '+', v.str)
	case KindError:
		return appendLine(dst, '-', v.str)
	case KindBigNumber:
		return appendLine(dst, '(', v.str)
	case KindInteger:
		return appendHeader(dst, ':', v.num)
	case KindBoolean:
		if v.num != 0 {
			return append(dst, "#t\r\n"...)
		}
		return append(dst, "#f\r\n"...)
	case KindDouble:
		return appendDouble(dst, math.Float64frombits(uint64(v.num)))
	case KindBulkString:
		return appendBulkValue(dst, '$', v.str)
	case KindBulkError:
		return appendBulkValue(dst, '!', v.str)
	case KindVerbatim:
		return appendBulkValue(dst, '=', v.str)
	case KindArray:
		return appendElems(dst, '*', v.elems, len(v.elems))
	case KindSet:
		return appendElems(dst, '~', v.elems, len(v.elems))
	case KindPush:
		return appendElems(dst, '>', v.elems, len(v.elems))
	case KindMap:
		return appendElems(dst, '%', v.elems, len(v.elems)/2)
	}
	return append(dst, "_\r\n"...)
}

func appendLine(dst []byte, t byte, s string) []byte {
	dst = append(dst, t)
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

func appendBulkValue(dst []byte, t byte, s string) []byte {
	dst = appendHeader(dst, t, int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

func appendElems(dst []byte, t byte, elems []Value, n int) []byte {
	dst = appendHeader(dst, t, int64(n))
	for _, e := range elems {
		dst = AppendValue(dst, e)
	}
	return dst
}

// appendDouble writes the shortest form that reads back exactly, as Redis's %.17g does
// but without the noise digits.
func appendDouble(dst []byte, f float64) []byte {
	dst = append(dst, ',')
	switch {
	case math.IsNaN(f):
		dst = append(dst, "nan"...)
	case math.IsInf(f, 1):
		dst = append(dst, "inf"...)
	case math.IsInf(f, -1):
		dst = append(dst, "-inf"...)
	default:
		dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	return append(dst, '\r', '\n')
}

package command

import (
	"math"
	"reflect"

	"github.com/respire/respire/internal/argkind"
)

// Arguments reach this package as the client's Do takes them: string, []byte, any
// integer kind, a float or a bool, or a named type of one of those kinds. The helpers
// here read them the way the server will read their encoded text, without allocating.

// argIsKeyword reports whether arg is text equal to kw without regard to ASCII case.
// Like the server's strcasecmp, the comparison stops at a NUL byte in arg. Numbers are
// never keywords: no Redis keyword is numeric.
func argIsKeyword(arg any, kw string) bool {
	s, ok := argkind.Text(arg)
	return ok && textIsKeyword(s, kw)
}

func textIsKeyword(s, kw string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			s = s[:i]
			break
		}
	}
	if len(s) != len(kw) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lowerASCII(s[i]) != lowerASCII(kw[i]) {
			return false
		}
	}
	return true
}

// argInt reads arg as an integer the way the server parses a count such as numkeys:
// text must be a plain decimal (optional '-', no '+', no spaces, no leading zeros)
// within int64 (Redis's string2ll); integer kinds are taken as they are; a float counts
// when it is integral and a bool as 1 or 0, since resp's argument writer sends 2.0 as
// "2" and true as "1".
func argInt(arg any) (int64, bool) {
	switch a := arg.(type) {
	case string:
		return parseInt(a)
	case []byte:
		return parseInt(a)
	case int:
		return int64(a), true
	case int8:
		return int64(a), true
	case int16:
		return int64(a), true
	case int32:
		return int64(a), true
	case int64:
		return a, true
	case uint:
		return uintToInt(uint64(a))
	case uint8:
		return int64(a), true
	case uint16:
		return int64(a), true
	case uint32:
		return int64(a), true
	case uint64:
		return uintToInt(a)
	case uintptr:
		return uintToInt(uint64(a))
	case float32:
		return floatToInt(float64(a))
	case float64:
		return floatToInt(a)
	case bool:
		if a {
			return 1, true
		}
		return 0, true
	}
	return namedInt(arg)
}

// namedInt is argInt for a named type, read by its kind.
func namedInt(arg any) (int64, bool) {
	if s, ok := argkind.Text(arg); ok {
		return parseInt(s)
	}
	v := reflect.ValueOf(arg)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintToInt(v.Uint())
	case reflect.Float32, reflect.Float64:
		return floatToInt(v.Float())
	case reflect.Bool:
		if v.Bool() {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func uintToInt(u uint64) (int64, bool) {
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

func floatToInt(f float64) (int64, bool) {
	// ±2^53 keeps the conversion exact and far beyond any argument count.
	if f != math.Trunc(f) || f < -(1<<53) || f > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// parseInt is Redis's string2ll: a strict decimal int64.
func parseInt[T string | []byte](s T) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
		if len(s) == 0 {
			return 0, false
		}
	}
	if s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	var u uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true // -(1<<63) wraps to MinInt64, as intended
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}

package cmds

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"sync"
)

// ScanMap copies the fields of a hash (HGetAll's map) into the struct dst points to,
// as go-redis's Scan does: a struct field tagged `redis:"name"` takes the hash field
// name; fields without the tag, unexported ones and hash fields no struct field names
// are left alone. A struct field may be a string, []byte, bool ("1", "true"...), an
// integer or float kind, or implement encoding.TextUnmarshaler.
//
//	var u struct {
//		Name   string `redis:"name"`
//		Visits int    `redis:"visits"`
//	}
//	m, err := cmds.HGetAll("user:1").Do(ctx, c)
//	err = cmds.ScanMap(m, &u)
func ScanMap(src map[string]string, dst any) error {
	fields, v, err := scanTarget(dst)
	if err != nil {
		return err
	}
	for name, i := range fields {
		text, ok := src[name]
		if !ok {
			continue
		}
		if err := setField(v.Field(i), text); err != nil {
			return fmt.Errorf("%w: field %q: %w", ErrInvalidArg, name, err)
		}
	}
	return nil
}

// ScanFields copies HMGet's values, one for each of names in turn, into the struct dst
// points to as ScanMap does; a missing field leaves its struct field alone.
func ScanFields(names []string, values []Null[string], dst any) error {
	if len(names) != len(values) {
		return fmt.Errorf("%w: %d names for %d values", ErrInvalidArg, len(names), len(values))
	}
	m := make(map[string]string, len(names))
	for i, name := range names {
		if values[i].Valid {
			m[name] = values[i].V
		}
	}
	return ScanMap(m, dst)
}

// structFields caches, per struct type, the index of each field by its redis tag.
var structFields sync.Map // reflect.Type → map[string]int

func scanTarget(dst any) (map[string]int, reflect.Value, error) {
	p := reflect.ValueOf(dst)
	if p.Kind() != reflect.Pointer || p.IsNil() || p.Elem().Kind() != reflect.Struct {
		return nil, reflect.Value{}, fmt.Errorf("%w: scan into %T, want a non-nil pointer to a struct", ErrInvalidArg, dst)
	}
	v := p.Elem()
	if f, ok := structFields.Load(v.Type()); ok {
		return f.(map[string]int), v, nil
	}
	fields := map[string]int{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if name, ok := f.Tag.Lookup("redis"); ok && name != "" && name != "-" && f.IsExported() {
			fields[name] = i
		}
	}
	structFields.Store(v.Type(), fields)
	return fields, v, nil
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func setField(f reflect.Value, text string) error {
	if f.CanAddr() && f.Addr().Type().Implements(textUnmarshaler) {
		return f.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text))
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(text)
	case reflect.Slice:
		if f.Type().Elem().Kind() != reflect.Uint8 {
			return fmt.Errorf("unsupported type %s", f.Type())
		}
		f.SetBytes([]byte(text))
	case reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(text, 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetUint(n)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(text, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetFloat(x)
	default:
		return fmt.Errorf("unsupported type %s", f.Type())
	}
	return nil
}

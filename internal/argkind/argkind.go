// Package argkind reads command arguments by their kind, so that a named type (type
// Key string, json.RawMessage, time.Duration) is taken wherever its underlying
// built-in type is: encoded the same (package resp), and routed, prefixed, cached and
// recognised as a command name the same.
//
// # Concurrency
//
// The functions are pure and safe to call from any goroutine. The package starts no
// goroutines.
package argkind

import (
	"reflect"
	"unsafe"
)

// Text returns the text the server receives for an argument whose kind is string or a
// slice of bytes, and false for any other argument. A []byte kind's text shares the
// slice's memory: it is for use while the caller's argument cannot change, and must be
// copied to be kept.
//
// Text is small enough to be inlined for a string, the usual argument; the other
// built-in types are told apart by a type switch next, so that none of them pays for
// reflection: a named type is the rare case.
func Text(a any) (s string, ok bool) {
	if s, ok = a.(string); !ok {
		s, ok = otherText(a)
	}
	return s, ok
}

// LowerName lowercases a short command name into buf without allocating (the client
// reads every command's name); ok is false for names too long to matter or of a kind
// Text does not take.
func LowerName(a any, buf *[12]byte) ([]byte, bool) {
	s, ok := Text(a)
	if !ok || len(s) > len(buf) {
		return nil, false
	}
	n := copy(buf[:], s)
	for i := range n {
		if c := buf[i]; 'A' <= c && c <= 'Z' {
			buf[i] = c + 'a' - 'A'
		}
	}
	return buf[:n], true
}

// otherText is Text for any type but string. A named type's kind comes from
// reflect.TypeOf, which does not look at the value, and its text is read through the
// interface's data word: reading it with reflect.ValueOf would make the compiler take
// every caller's argument for part of the result, and so move to the heap the
// arguments of every command, named or not.
func otherText(a any) (string, bool) {
	// A typed command's name, read several times per command on its way to a
	// connection, is tested before the switch has to tell a dozen types apart.
	if n, ok := a.(*Name); ok {
		return n.Text, true
	}
	switch a := a.(type) {
	case []byte:
		return unsafe.String(unsafe.SliceData(a), len(a)), true
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr,
		float32, float64, bool, nil:
		return "", false
	}
	t := reflect.TypeOf(a)
	switch t.Kind() {
	case reflect.String:
		return *(*string)(dataOf(&a)), true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			b := *(*[]byte)(dataOf(&a))
			return unsafe.String(unsafe.SliceData(b), len(b)), true
		}
	}
	return "", false
}

// Name is the name of a command that knows its own table entry. A typed command
// (package cmds) sends a pointer to a Name of its own, made once, as its first
// argument, so that the client takes the entry from it instead of looking the name
// up; everywhere else the argument is its Text, sent and read as the name is.
type Name struct {
	// Text is the name as sent: for a subcommand, the container's name (the
	// subcommand's name is the next argument, a string).
	Text string
	// Entry is the command's *command.Info, the subcommand's for a subcommand. It is
	// an any because package command reads its arguments through this package.
	Entry any
}

// dataOf returns the data word of the interface *a: for a value that is not a pointer
// (every kind read here), a pointer to a copy of the value the interface holds.
func dataOf(a *any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(a))[1]
}

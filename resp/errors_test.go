package resp

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
)

func TestNewServerError(t *testing.T) {
	tests := []struct {
		msg, code string
	}{
		{"ERR syntax error", "ERR"},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", "WRONGTYPE"},
		{"NOAUTH", "NOAUTH"},
		{"MOVED 3999 127.0.0.1:6381", "MOVED"},
		{"", ""},
		{" leading space", ""},
	}
	for _, tt := range tests {
		e := NewServerError(tt.msg)
		if e.Code != tt.code || e.Msg != tt.msg || e.Error() != tt.msg {
			t.Errorf("NewServerError(%q) = %+v (Error %q), want code %q", tt.msg, e, e.Error(), tt.code)
		}
	}
}

func TestServerErrorRedirect(t *testing.T) {
	tests := []struct {
		msg  string
		want Redirect
		ok   bool
	}{
		{"MOVED 3999 127.0.0.1:6381", Redirect{Slot: 3999, Addr: "127.0.0.1:6381"}, true},
		{"ASK 0 [::1]:7000", Redirect{Ask: true, Slot: 0, Addr: "[::1]:7000"}, true},
		{"MOVED 16383 host:1", Redirect{Slot: 16383, Addr: "host:1"}, true},
		{"MOVED 16384 host:1", Redirect{}, false},
		{"MOVED -1 host:1", Redirect{}, false},
		{"MOVED x host:1", Redirect{}, false},
		{"MOVED 1", Redirect{}, false},
		{"MOVED 1 host:1 extra", Redirect{}, false},
		{"ERR 1 host:1", Redirect{}, false},
		{"moved 1 host:1", Redirect{}, false},
		{"ASKING", Redirect{}, false},
	}
	for _, tt := range tests {
		got, ok := NewServerError(tt.msg).Redirect()
		if got != tt.want || ok != tt.ok {
			t.Errorf("Redirect of %q = %+v, %v; want %+v, %v", tt.msg, got, ok, tt.want, tt.ok)
		}
	}
}

func TestHasCode(t *testing.T) {
	se := NewServerError("NOSCRIPT No matching script")
	tests := []struct {
		name string
		err  error
		code string
		want bool
	}{
		{"direct", se, "NOSCRIPT", true},
		{"wrapped", fmt.Errorf("evalsha: %w", se), "NOSCRIPT", true},
		{"wrapped-twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", se)), "NOSCRIPT", true},
		{"joined", errors.Join(io.EOF, se), "NOSCRIPT", true},
		{"other-code", se, "ERR", false},
		{"prefix-only", se, "NOSCRIPT No", false},
		{"not-server", errors.New("NOSCRIPT"), "NOSCRIPT", false},
		{"nil", nil, "ERR", false},
	}
	for _, tt := range tests {
		if got := HasCode(tt.err, tt.code); got != tt.want {
			t.Errorf("%s: HasCode(%v, %q) = %v, want %v", tt.name, tt.err, tt.code, got, tt.want)
		}
	}
}

func TestProtocolError(t *testing.T) {
	plain := &ProtocolError{Reason: "bad frame"}
	limit := &ProtocolError{Reason: "too long", Err: ErrLimit}
	cause := &ProtocolError{Reason: "invalid double", Err: strconv.ErrRange}
	tests := []struct {
		err       *ProtocolError
		text      string
		isLimit   bool
		wrapsSelf error
	}{
		{plain, "resp: protocol error: bad frame", false, nil},
		{limit, "resp: protocol error: too long", true, ErrLimit},
		{cause, "resp: protocol error: invalid double: value out of range", false, strconv.ErrRange},
	}
	for _, tt := range tests {
		if tt.err.Error() != tt.text {
			t.Errorf("Error() = %q, want %q", tt.err.Error(), tt.text)
		}
		wrapped := fmt.Errorf("read: %w", tt.err)
		if !errors.Is(wrapped, ErrProtocol) {
			t.Errorf("%v does not match ErrProtocol", tt.err)
		}
		if errors.Is(wrapped, ErrLimit) != tt.isLimit {
			t.Errorf("%v: errors.Is(ErrLimit) = %v", tt.err, !tt.isLimit)
		}
		if tt.err.Unwrap() != tt.wrapsSelf {
			t.Errorf("%v: Unwrap() = %v, want %v", tt.err, tt.err.Unwrap(), tt.wrapsSelf)
		}
	}
	if errors.Is(errors.New("other"), ErrProtocol) {
		t.Error("a plain error matches ErrProtocol")
	}
}

func TestTypeAndArgErrors(t *testing.T) {
	te := &TypeError{Kind: KindArray, Want: "integer"}
	if te.Error() != "resp: cannot read array as integer" || te.Unwrap() != nil {
		t.Errorf("TypeError = %q, unwrap %v", te.Error(), te.Unwrap())
	}
	te = &TypeError{Kind: KindBulkString, Want: "integer", Err: strconv.ErrSyntax}
	if te.Error() != "resp: cannot read bulk-string as integer: invalid syntax" || !errors.Is(te, strconv.ErrSyntax) {
		t.Errorf("TypeError with cause = %q", te.Error())
	}
	ae := &ArgError{Index: 2, Reason: "nil argument"}
	if ae.Error() != "resp: argument 2: nil argument" || !errors.Is(fmt.Errorf("x: %w", ae), ErrInvalidArg) {
		t.Errorf("ArgError = %q", ae.Error())
	}
}

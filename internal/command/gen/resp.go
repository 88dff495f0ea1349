package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The generator's own RESP2 reader: just enough for INFO and COMMAND replies. It is kept
// apart from the library's resp package so the table can be generated before, and
// independently of, the rest of the module.
//
// Replies decode as string (simple and bulk strings), int64, nil (null), replyError and
// []any. Declared lengths are checked against limits before anything is allocated.

const (
	maxBulk     = 16 << 20 // longest bulk string accepted
	maxElements = 1 << 16  // most elements in one array
	maxDepth    = 16       // deepest nesting (COMMAND needs about 6)
	maxLine     = 64 << 10 // longest header or simple-string line
)

// replyError is a server error reply (-ERR ...).
type replyError string

type reader struct {
	br *bufio.Reader
}

func newReader(br *bufio.Reader) *reader { return &reader{br: br} }

func (r *reader) line() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, errors.New("resp: line too long")
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
	if len(buf) < 2 || buf[len(buf)-2] != '\r' {
		return nil, errors.New("resp: line not terminated by CRLF")
	}
	return buf[:len(buf)-2], nil
}

func (r *reader) read(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("resp: nesting too deep")
	}
	l, err := r.line()
	if err != nil {
		return nil, err
	}
	if len(l) == 0 {
		return nil, errors.New("resp: empty line")
	}
	body := string(l[1:])
	switch l[0] {
	case '+':
		return body, nil
	case '-':
		return replyError(body), nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("resp: integer %q", body)
		}
		return n, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxBulk {
			return nil, fmt.Errorf("resp: bulk length %q", body)
		}
		if n == -1 {
			return nil, nil
		}
		// Copy as bytes arrive rather than allocating n up front.
		var buf bytes.Buffer
		if _, err := io.CopyN(&buf, r.br, int64(n)+2); err != nil {
			return nil, err
		}
		b := buf.Bytes()
		if b[n] != '\r' || b[n+1] != '\n' {
			return nil, errors.New("resp: bulk string not terminated by CRLF")
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 || n > maxElements {
			return nil, fmt.Errorf("resp: array length %q", body)
		}
		if n == -1 {
			return nil, nil
		}
		// Grow as elements arrive rather than trusting n for the allocation.
		var elems []any
		for range n {
			v, err := r.read(depth + 1)
			if err != nil {
				return nil, err
			}
			elems = append(elems, v)
		}
		if elems == nil {
			elems = []any{}
		}
		return elems, nil
	default:
		return nil, fmt.Errorf("resp: unexpected type byte %q", l[0])
	}
}

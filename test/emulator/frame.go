package emulator

import (
	"bufio"
	"io"
	"net"

	"github.com/respire/respire/resp"
)

// frameReader reads whole RESP frames from a backend connection, each both decoded
// and as its exact bytes, so that replies are forwarded byte for byte (a decoded
// RESP2 "*-1" and "$-1" are the same null; a re-encoded double may differ) while the
// emulator still sees what they are.
type frameReader struct {
	tap *tap
	br  *bufio.Reader
	rd  *resp.Reader
}

// tap keeps every byte read from the connection that the decoder has not consumed yet.
type tap struct {
	r   io.Reader
	buf []byte
}

func (t *tap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf = append(t.buf, p[:n]...)
	return n, err
}

func newFrameReader(nc net.Conn) *frameReader {
	t := &tap{r: nc}
	br := bufio.NewReader(t)
	return &frameReader{tap: t, br: br, rd: resp.NewReader(br, resp.Limits{})}
}

// next returns the next frame decoded and its bytes (a copy the caller owns).
func (f *frameReader) next() (resp.Value, []byte, error) {
	v, err := f.rd.Read()
	if err != nil {
		return resp.Value{}, nil, err
	}
	// What the bufio.Reader holds but has not handed out belongs to the next frames.
	n := len(f.tap.buf) - f.br.Buffered()
	raw := append([]byte(nil), f.tap.buf[:n]...)
	f.tap.buf = append(f.tap.buf[:0], f.tap.buf[n:]...)
	return v, raw, nil
}

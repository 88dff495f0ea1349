package resp

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

func BenchmarkAppendCommand(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 128)
	for b.Loop() {
		buf, _ = AppendCommand(buf[:0], "SET", "key", "value")
	}
}

func BenchmarkAppendCommandInt(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 128)
	key, ttl := "key", 3600 // variables, not constants, so boxing is measured too
	for b.Loop() {
		buf, _ = AppendCommand(buf[:0], "EXPIRE", key, ttl)
	}
}

// BenchmarkAppendCommandNamed is BenchmarkAppendCommandInt with named types, which
// are read by reflection.
func BenchmarkAppendCommandNamed(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 128)
	key, ttl := namedString("key"), time.Hour
	for b.Loop() {
		buf, _ = AppendCommand(buf[:0], "EXPIRE", key, ttl)
	}
}

// benchRead decodes wire over and over from one Reader.
func benchRead(b *testing.B, wire string) {
	b.ReportAllocs()
	b.SetBytes(int64(len(wire)))
	rd := NewReader(bufio.NewReader(&repeatReader{data: []byte(wire)}), Limits{})
	for b.Loop() {
		if _, err := rd.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadBulk(b *testing.B) {
	benchRead(b, "$16\r\n0123456789abcdef\r\n")
}

func BenchmarkReadSimple(b *testing.B) {
	benchRead(b, "+OK\r\n")
}

func BenchmarkReadArray(b *testing.B) {
	benchRead(b, "*10\r\n"+strings.Repeat("$5\r\nhello\r\n", 10))
}

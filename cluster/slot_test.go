package cluster

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/respire/respire/test/testserver"
)

func TestCRC16(t *testing.T) {
	// The check value of CRC-16/XMODEM, and the one Redis's cluster spec gives.
	if got := CRC16("123456789"); got != 0x31C3 {
		t.Fatalf("CRC16(123456789) = %#04x, want 0x31c3", got)
	}
	if got := CRC16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("CRC16([]byte) = %#04x, want 0x31c3", got)
	}
}

func TestSlot(t *testing.T) {
	// Values from CLUSTER KEYSLOT on redis-server 7.0.
	cases := []struct {
		key  string
		want int
	}{
		{"", 0},
		{"foo", 12182},
		{"bar", 5061},
		{"hello", 866},
		{"user1000", 3443},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"foo{}{bar}", Slot("foo{}{bar}")}, // empty tag: the whole key (checked below)
		{"foo{{bar}}zap", Slot("{bar")},    // the tag is "{bar"
		{"foo{bar}{zap}", Slot("bar")},     // the first tag only
		{"{", Slot("{")},
		{"}{", Slot("}{")},
		{"a{b", Slot("a{b")},
	}
	for _, c := range cases {
		if got := Slot(c.key); got != c.want {
			t.Errorf("Slot(%q) = %d, want %d", c.key, got, c.want)
		}
		if got := Slot([]byte(c.key)); got != c.want {
			t.Errorf("Slot([]byte %q) = %d, want %d", c.key, got, c.want)
		}
	}
	if Slot("foo{}{bar}") == Slot("bar") {
		t.Error(`"foo{}{bar}" hashed by "bar": an empty first tag must hash the whole key`)
	}
	if Slot("foo{}{bar}") != int(CRC16("foo{}{bar}")&slotMask) {
		t.Error(`"foo{}{bar}" must hash as a whole`)
	}
}

// PrefixedSlot is Slot of the concatenation, wherever the braces fall.
func TestPrefixedSlot(t *testing.T) {
	pieces := []string{"", "a", "{", "}", "{}", "{x}", "tenant:", "{t}:", "k{", "}k", "{{", "}}", "user:1"}
	for _, p := range pieces {
		for _, k := range pieces {
			for _, k2 := range pieces {
				key := k + k2
				if got, want := PrefixedSlot(p, key), Slot(p+key); got != want {
					t.Errorf("PrefixedSlot(%q, %q) = %d, want %d", p, key, got, want)
				}
				if got, want := PrefixedSlot(p, []byte(key)), Slot(p+key); got != want {
					t.Errorf("PrefixedSlot(%q, []byte %q) = %d, want %d", p, key, got, want)
				}
			}
		}
	}
}

func FuzzPrefixedSlot(f *testing.F) {
	f.Add("", "foo")
	f.Add("{t}", "x")
	f.Add("a{", "b}c")
	f.Add("}{", "{}")
	f.Fuzz(func(t *testing.T, prefix, key string) {
		s := PrefixedSlot(prefix, key)
		if s < 0 || s >= SlotCount {
			t.Fatalf("slot %d out of range", s)
		}
		if want := Slot(prefix + key); s != want {
			t.Fatalf("PrefixedSlot(%q, %q) = %d, Slot of the concatenation = %d", prefix, key, s, want)
		}
		if b := PrefixedSlot(prefix, []byte(key)); b != s {
			t.Fatalf("[]byte key: %d, string key: %d", b, s)
		}
	})
}

func TestSlotAllocates(t *testing.T) {
	key := []byte("{user:1}:cart")
	if n := testing.AllocsPerRun(100, func() { PrefixedSlot("tenant:", key) }); n != 0 {
		t.Fatalf("PrefixedSlot allocates %.0f times", n)
	}
}

// The server agrees: CLUSTER KEYSLOT of random keys, hash tags included.
func TestSlotMatchesServer(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Args: []string{"--cluster-enabled", "yes"}})
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab{}:x")
	for i := range 100 {
		b := make([]byte, rng.IntN(12))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		key := string(b)
		if i%10 == 0 {
			key = fmt.Sprintf("user:%d", rng.IntN(1e6))
		}
		var want int
		fmt.Sscan(srv.Do(t, "CLUSTER", "KEYSLOT", key), &want)
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, server says %d", key, got, want)
		}
	}
}

// crc16Reference is CRC-16/XMODEM bit by bit, as the cluster spec defines it: what the
// table-driven CRC16 must agree with.
func crc16Reference(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Every length, so that each way the table-driven loop ends is checked, with and
// without a prefix and a hash tag.
func TestSlotMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 80 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		if got, want := CRC16(b), crc16Reference(b); got != want {
			t.Fatalf("CRC16 of %d bytes %x = %#04x, want %#04x", n, b, got, want)
		}
		key := string(b)
		if got, want := Slot(key), int(crc16Reference(b)&slotMask); !bytes.ContainsAny(b, "{}") && got != want {
			t.Fatalf("Slot of %d bytes %x = %d, want %d", n, b, got, want)
		}
		for cut := range len(key) + 1 {
			if got, want := PrefixedSlot(key[:cut], key[cut:]), Slot(key); got != want {
				t.Fatalf("PrefixedSlot(%q, %q) = %d, Slot of the concatenation %d", key[:cut], key[cut:], got, want)
			}
		}
	}
}

// BenchmarkSlot is the slot of a key the length of an application's, as a Cluster
// client computes it for every command.
func BenchmarkSlot(b *testing.B) {
	for _, key := range []string{"respbench:spread:1234", "{user:1000}:followers"} {
		b.Run(key, func(b *testing.B) {
			for b.Loop() {
				Slot(key)
			}
		})
	}
	b.Run("prefixed", func(b *testing.B) {
		key := []byte("spread:1234")
		for b.Loop() {
			PrefixedSlot("respbench:", key)
		}
	})
}

package cluster

import (
	"strings"
	"unsafe"
)

// SlotCount is the number of hash slots of a Redis Cluster.
const SlotCount = 16384

// slotMask reduces a CRC16 to a slot: SlotCount is a power of two.
const slotMask = SlotCount - 1

// Slot returns the hash slot of key: CRC16 (XMODEM) of the key, or of its hash tag, the
// text between the first '{' and the first '}' after it when that text is not empty,
// modulo 16384. Keys that share a hash tag share a slot: "{user:1}:cart" and
// "{user:1}:orders" go to the same node.
func Slot[K string | []byte](key K) int {
	return PrefixedSlot("", key)
}

// PrefixedSlot returns the hash slot of prefix followed by key, without building the
// concatenation: the slot a client's key prefix sends key to. The hash tag is looked
// for across both, as the server sees one key.
func PrefixedSlot[K string | []byte](prefix string, key K) int {
	k := text(key)
	if prefix == "" {
		// A Cluster client hashes every command's key: without a prefix, the common
		// case, the tag is looked for with the vectorised IndexByte.
		if open := strings.IndexByte(k, '{'); open >= 0 {
			if end := strings.IndexByte(k[open+1:], '}'); end > 0 {
				k = k[open+1 : open+1+end]
			}
		}
		return int(crc16(0, k) & slotMask)
	}
	lp := len(prefix)
	n := lp + len(k)
	if open := indexByte2(prefix, k, 0, '{'); open >= 0 {
		if end := indexByte2(prefix, k, open+1, '}'); end > open+1 {
			return int(crc2(prefix, k, open+1, end) & slotMask)
		}
	}
	return int(crc2(prefix, k, 0, n) & slotMask)
}

// text is key's bytes as a string, without copying; nothing keeps it past the slot's
// computation. A string and a slice header both begin with the data pointer and the
// length, which is all a string header holds.
func text[K string | []byte](key K) string {
	return *(*string)(unsafe.Pointer(&key))
}

// indexByte2 returns the first index at or after from where a's and b's concatenation
// holds c, or -1.
func indexByte2(a, b string, from int, c byte) int {
	if from < len(a) {
		if i := strings.IndexByte(a[from:], c); i >= 0 {
			return from + i
		}
	}
	if i := strings.IndexByte(b[max(from-len(a), 0):], c); i >= 0 {
		return max(from, len(a)) + i
	}
	return -1
}

// crc2 is the CRC16 of bytes [from, to) of a's and b's concatenation.
func crc2(a, b string, from, to int) uint16 {
	la := len(a)
	crc := crc16(0, a[min(from, la):min(to, la)])
	return crc16(crc, b[max(from-la, 0):max(to-la, 0)])
}

// CRC16 returns the CRC16 (XMODEM: polynomial 0x1021, initial value 0) that Redis
// Cluster hashes keys with.
func CRC16[K string | []byte](b K) uint16 {
	return crc16(0, text(b))
}

// crc16 continues the CRC16 crc over s, four bytes a step where it can (slicing by
// four: the four table look-ups of a step do not wait for one another, where the
// byte-at-a-time loop chains every look-up on the one before).
func crc16(crc uint16, s string) uint16 {
	for len(s) >= 4 {
		v := crc ^ (uint16(s[0])<<8 | uint16(s[1]))
		crc = crcTables[3][v>>8] ^ crcTables[2][v&0xff] ^ crcTables[1][s[2]] ^ crcTables[0][s[3]]
		s = s[4:]
	}
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crcTables[0][byte(crc>>8)^s[i]]
	}
	return crc
}

// crcTables are the tables of polynomial 0x1021: crcTables[0] is the byte-at-a-time
// table, and crcTables[k][x] the CRC of byte x followed by k zero bytes, so that a step
// of slicing by four looks up each of its bytes in the table of the bytes after it.
var crcTables = func() (t [4][256]uint16) {
	for i := range t[0] {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[0][i] = crc
	}
	for k := 1; k < len(t); k++ {
		for i := range t[k] {
			prev := t[k-1][i]
			t[k][i] = prev<<8 ^ t[0][prev>>8]
		}
	}
	return t
}()

package cluster

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
	lp := len(prefix)
	n := lp + len(key)
	if open := indexByte2(prefix, key, 0, '{'); open >= 0 {
		if end := indexByte2(prefix, key, open+1, '}'); end > open+1 {
			return int(crc2(prefix, key, open+1, end) & slotMask)
		}
	}
	return int(crc2(prefix, key, 0, n) & slotMask)
}

// indexByte2 returns the first index at or after from where a's and b's concatenation
// holds c, or -1.
func indexByte2[K string | []byte](a string, b K, from int, c byte) int {
	for i := from; i < len(a); i++ {
		if a[i] == c {
			return i
		}
	}
	for i := max(from-len(a), 0); i < len(b); i++ {
		if b[i] == c {
			return len(a) + i
		}
	}
	return -1
}

// crc2 is the CRC16 of bytes [from, to) of a's and b's concatenation.
func crc2[K string | []byte](a string, b K, from, to int) uint16 {
	var crc uint16
	for i := from; i < min(to, len(a)); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^a[i]]
	}
	for i := max(from-len(a), 0); i < to-len(a); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^b[i]]
	}
	return crc
}

// CRC16 returns the CRC16 (XMODEM: polynomial 0x1021, initial value 0) that Redis
// Cluster hashes keys with.
func CRC16[K string | []byte](b K) uint16 {
	return crc2("", b, 0, len(b))
}

// crcTable is the byte-at-a-time table of polynomial 0x1021.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

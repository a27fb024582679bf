// Package seeded derives every random-looking choice of a run from its seed:
// a pure function of (seed, label, a, b), never a shared random stream, so
// the same seed makes the same choices whatever the goroutine timing.
package seeded

import (
	"encoding/binary"
	"hash/fnv"
)

// Hash mixes seed, a label naming the choice (a fault's name, "amount") and
// two numbers (an intent and an attempt) into 64 well-spread bits.
func Hash(seed int64, label string, a, b int) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(seed))
	h.Write(buf[:])
	h.Write([]byte(label))
	binary.LittleEndian.PutUint64(buf[:], uint64(a))
	h.Write(buf[:])
	binary.LittleEndian.PutUint64(buf[:], uint64(b))
	h.Write(buf[:])
	// fnv's low bits mix poorly for short inputs; finish with splitmix64.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Unit is Hash as a number in [0, 1).
func Unit(seed int64, label string, a, b int) float64 {
	return float64(Hash(seed, label, a, b)>>11) / float64(1<<53)
}

// Amount is an intent's business amount, 1..100.
func Amount(seed int64, intent int) int64 {
	return int64(Hash(seed, "amount", intent, 0)%100) + 1
}

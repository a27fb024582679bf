// Package faults lists the faults dqbench can inject and decides, from the
// run's seed alone, which intents each fault hits.
//
// A decision is a pure function of (seed, fault, intent, attempt), never of a
// shared random stream, so every compared variant meets the same faults
// whatever the goroutine timing.
package faults

import (
	"encoding/binary"
	"hash/fnv"
)

// Point is a place in the consumer's handling of one delivery where a
// consumer-crash fault can kill it.
type Point string

// The crash points. BeforeProcess and AfterEffectBeforeAck belong to the
// consumer loop and exist for every strategy; BetweenDedupAndEffect exists
// only in strategies that commit a dedup marker apart from the effect.
const (
	BeforeProcess         Point = "before-process"
	AfterEffectBeforeAck  Point = "after-effect-before-ack"
	BetweenDedupAndEffect Point = "between-dedup-and-effect"
)

// LoopPoints are the crash points every consumer loop has.
var LoopPoints = []Point{BeforeProcess, AfterEffectBeforeAck}

// Fault types.
const (
	ConsumerCrash       = "consumer-crash"
	ProduceResponseLost = "produce-response-lost"
)

// Kind describes one fault type: its name, what it does and which
// type-specific scenario keys it takes.
type Kind struct {
	Name   string
	Doc    string
	Params []string // scenario keys besides the common schedule keys
	// Side is where the fault acts: "consumer" (the generic consumer loop
	// injects it) or "broker" (the broker adapter must support it).
	Side string
}

// All is every fault type, in the order the docs list them.
var All = []Kind{
	{
		Name:   ConsumerCrash,
		Doc:    "the consumer dies at a crash point (connection closed, nothing acked); a replacement starts and the broker redelivers",
		Params: []string{"at"},
		Side:   "consumer",
	},
	{
		Name: ProduceResponseLost,
		Doc:  "the broker stores the publish but the producer never sees the response and retries",
		Side: "broker",
	},
}

// Lookup returns the kind named name.
func Lookup(name string) (Kind, bool) {
	for _, k := range All {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Schedule decides when one fault fires. Exactly one of Every and
// Probability is set; MaxAttempt limits firing to an intent's first
// MaxAttempt attempts (deliveries for consumer faults, sends for producer
// faults), so that a retry or redelivery can get through.
type Schedule struct {
	Seed        int64
	Fault       string // the fault's name, part of the hash
	Every       int
	Probability float64
	MaxAttempt  int
}

// Fires reports whether the fault hits intent (1-based) on its attempt-th
// attempt (1-based).
func (s Schedule) Fires(intent, attempt int) bool {
	max := s.MaxAttempt
	if max <= 0 {
		max = 1
	}
	if attempt < 1 || attempt > max {
		return false
	}
	if s.Every > 0 {
		offset := int(hash(s.Seed, s.Fault, 0, 0) % uint64(s.Every))
		return intent%s.Every == offset
	}
	if s.Probability <= 0 {
		return false
	}
	u := float64(hash(s.Seed, s.Fault, intent, attempt)>>11) / float64(1<<53)
	return u < s.Probability
}

func hash(seed int64, fault string, intent, attempt int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	h.Write([]byte(fault))
	binary.LittleEndian.PutUint64(b[:], uint64(intent))
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], uint64(attempt))
	h.Write(b[:])
	// fnv's low bits mix poorly for short inputs; finish with splitmix64.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

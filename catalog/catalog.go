// Package catalog describes, without implementing them, every broker kind,
// fault type and consumer strategy dqbench knows: their names, docs,
// parameters, crash points and where each is available.
//
// It is a leaf: the scenario parser, the JSON Schema and the checker read it
// without linking a broker client or a database driver. The implementations
// live in brokers/, faults/ and strategy/, each keyed by a name from here;
// a test in each of those packages checks that the two agree.
package catalog

import "slices"

// Mode says whether a broker runs in-process or is reached over the network.
type Mode string

// Broker modes.
const (
	Embedded Mode = "embedded" // an in-process broker started for the run
	External Mode = "external" // a running broker at the scenario's addresses
	Managed  Mode = "managed"  // a broker dqbench starts from the installed server: a local RabbitMQ, NATS or Apache Kafka cluster (or reused), a throwaway Mosquitto per variant
)

// Modes lists the broker modes.
var Modes = []Mode{Embedded, External, Managed}

// Acks is the broker acknowledgement a producer waits for.
type Acks string

// Producer acknowledgement levels.
const (
	AcksAll    Acks = "all"
	AcksLeader Acks = "leader"
	AcksNone   Acks = "none"
)

// AcksLevels lists the producer acknowledgement levels.
var AcksLevels = []Acks{AcksAll, AcksLeader, AcksNone}

// AckMode is when a consumer acknowledges (commits) a delivery.
type AckMode string

// Consumer acknowledgement modes.
const (
	AckAfterProcess  AckMode = "after-process"  // at-least-once
	AckBeforeProcess AckMode = "before-process" // at-most-once
	// AckAuto: the broker counts a delivery acked when it sends it
	// (RabbitMQ's autoAck), at-most-once; only where Broker.AutoAck.
	AckAuto AckMode = "auto"
)

// AckModes lists the consumer acknowledgement modes.
var AckModes = []AckMode{AckAfterProcess, AckBeforeProcess, AckAuto}

// CrashPoint is a place in a consumer's handling of one delivery where a
// consumer-crash fault can kill it.
type CrashPoint string

// The crash points. The consumer loop has BeforeProcess and
// AfterEffectBeforeAck for every strategy; the others belong to the
// strategies that list them.
const (
	BeforeProcess         CrashPoint = "before-process"
	AfterEffectBeforeAck  CrashPoint = "after-effect-before-ack"
	BetweenDedupAndEffect CrashPoint = "between-dedup-and-effect"
	BetweenCheckAndAct    CrashPoint = "between-check-and-act"
	BetweenSetnxAndEffect CrashPoint = "between-setnx-and-effect"
)

// LoopPoints are the crash points every consumer loop has.
var LoopPoints = []CrashPoint{BeforeProcess, AfterEffectBeforeAck}

// CrashPoints lists every crash point: the loop's, then the strategies'.
func CrashPoints() []CrashPoint {
	out := slices.Clone(LoopPoints)
	for _, s := range Strategies {
		for _, p := range s.CrashPoints {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// Strings converts a list of named string values for messages and schemas.
func Strings[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

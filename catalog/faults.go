package catalog

import (
	"fmt"
	"time"
)

// FaultType names a kind of fault.
type FaultType string

// The fault types.
const (
	ConsumerCrash       FaultType = "consumer-crash"
	ProduceResponseLost FaultType = "produce-response-lost"
	ConsumerZombie      FaultType = "consumer-zombie"
	AckLost             FaultType = "ack-lost"
	ConfirmLost         FaultType = "confirm-lost"
	PoisonMessage       FaultType = "poison-message"
	ConnectionReset     FaultType = "connection-reset"
	Partition           FaultType = "partition"
	Latency             FaultType = "latency"
)

// Fault describes one fault type.
type Fault struct {
	Type FaultType
	// Doc says what the fault does, for docs and the schema.
	Doc string
	// Injection says what one count of faults_injected is for this fault.
	Injection string
	// NewParams returns a pointer to a zero value of the fault's own
	// parameters (the scenario keys besides the common schedule keys), or
	// nil when it takes none. Its fields are tagged like the scenario's.
	NewParams func() any
	// Available says why the fault cannot act where it would be used, or ""
	// when it can. Validation rejects a fault that cannot act.
	Available func(Where) string
	// InProcessToxiproxy: the fault is a protocol-aware toxic that runs in
	// dqbench's own toxiproxy, so an external toxiproxy cannot inject it.
	InProcessToxiproxy bool
}

// Where is what decides whether a fault can act: the broker and the
// effective producer settings of one variant.
type Where struct {
	Broker BrokerKind
	Mode   Mode
	Acks   Acks
}

// ConsumerCrashParams are consumer-crash's and consumer-zombie's own
// parameters.
type ConsumerCrashParams struct {
	At CrashPoint `yaml:"at" json:"at" jsonschema:"required,description=Where the consumer dies (consumer-crash) or stalls (consumer-zombie)."`
}

// Faults lists every fault type, in the order docs list them. Each has an
// implementation in faults/ under the same type.
var Faults = []Fault{
	{
		Type:      ConsumerCrash,
		Doc:       "the consumer dies at a crash point (connection closed, nothing acked); a replacement starts and the broker redelivers",
		Injection: "one consumer killed at its crash point",
		NewParams: func() any { return new(ConsumerCrashParams) },
		Available: func(Where) string { return "" },
	},
	{
		Type:      ConsumerZombie,
		Doc:       "the consumer stalls at a crash point past its lease (a GC pause, a slow disk, longer than the session timeout): the broker gives what it had not acked to another instance, which handles the same intent; then the stalled one wakes and finishes its delivery, without acking. Two instances handle one intent at once",
		Injection: "one consumer instance stalled past its lease at its crash point",
		NewParams: func() any { return new(ConsumerCrashParams) },
		Available: func(Where) string { return "" },
	},
	{
		Type:      ProduceResponseLost,
		Doc:       "the broker stores the publish but the producer never sees the response and retries",
		Injection: "one produce response lost (a request that may carry several intents)",
		Available: func(w Where) string {
			switch {
			case w.Broker != Kafka || w.Mode != Embedded:
				return "it is injected inside the embedded Kafka broker (kfake); use broker kind: kafka, mode: embedded"
			case w.Acks == AcksNone:
				return "with acks: none the broker sends no response to lose; use acks: all or leader"
			}
			return ""
		},
	},
	consumerKill,
	{
		Type:               AckLost,
		Doc:                "the consumer applies the effect and sends its ack, which never reaches the broker (a protocol-aware toxiproxy toxic drops that AMQP basic.ack frame); the connection then breaks, the broker requeues and redelivers. The consumer believes it acked: the history shows the ack, then the redelivery",
		Injection:          "one consumer ack lost (and its connection broken)",
		Available:          needsAMQPProxy,
		InProcessToxiproxy: true,
	},
	{
		Type:               ConfirmLost,
		Doc:                "the broker stores the publish, but its publisher confirm (the AMQP basic.ack to the producer) is dropped by a protocol-aware toxiproxy toxic while the connection stays up; the producer times out (producer confirm_timeout) and republishes (producer retries), so the queue holds two copies",
		Injection:          "one publisher confirm lost",
		Available:          needsAMQPProxy,
		InProcessToxiproxy: true,
	},
	{
		Type:      PoisonMessage,
		Doc:       "the chosen intents fail processing on every delivery (a poison message); the consumer hands each failed delivery back (consumer on_failure): requeued, it loops unless the queue's delivery_limit dead-letters it; rejected, the broker dead-letters it at once. The runner reads the dead-letter queue",
		Injection: "one failed processing of a poison message (so, with requeue, the loop count)",
		Available: func(w Where) string {
			if b, _ := LookupBroker(w.Broker); !b.DeadLetter {
				return "its consumer hands failed deliveries back to the broker, which dead-letters them; use broker kind: rabbitmq"
			}
			return ""
		},
	},
	{
		Type:      ConnectionReset,
		Doc:       "the consumer's connection is reset (toxiproxy's reset_peer toxic on its proxy) right after it received the chosen intent, before processing it: the broker requeues what the consumer had not acked and a replacement consumer starts. At-least-once redelivers the intent; with the ack before processing it is lost",
		Injection: "one consumer connection reset",
		Available: throughToxiproxy,
	},
	{
		Type:      Partition,
		Doc:       "the consumer is cut off from the broker right after it received the chosen intent (toxiproxy's timeout toxic on its proxy drops everything both ways) for a duration, after which its connection closes: it processes the intent meanwhile, its ack never arrives, and the broker requeues and redelivers the intent to the replacement consumer",
		Injection: "one consumer partitioned from the broker",
		NewParams: func() any { return new(PartitionParams) },
		Available: throughToxiproxy,
	},
	{
		Type:      Latency,
		Doc:       "the consumer's network turns slow right after it received the chosen intent (toxiproxy's latency toxic on both directions of its proxy) for a while: every frame between it and the broker is delayed. It changes how long things take, not what happens: on its own it neither duplicates nor loses",
		Injection: "one consumer connection slowed",
		NewParams: func() any { return new(LatencyParams) },
		Available: throughToxiproxy,
	},
}

// LatencyParams are latency's own parameters.
type LatencyParams struct {
	Latency  Duration `yaml:"latency" json:"latency,omitempty" jsonschema:"description=Delay added to every chunk of data in each direction (default 100ms)."`
	Duration Duration `yaml:"duration" json:"duration,omitempty" jsonschema:"description=How long the connection stays slow (default 1s)."`
}

// Defaults fills in what the scenario leaves out.
func (p *LatencyParams) Defaults() {
	if p.Latency <= 0 {
		p.Latency = Duration(100 * time.Millisecond)
	}
	if p.Duration <= 0 {
		p.Duration = Duration(time.Second)
	}
}

// PartitionParams are partition's own parameters.
type PartitionParams struct {
	Duration Duration `yaml:"duration" json:"duration,omitempty" jsonschema:"description=How long the client is cut off before its connection closes (default 1s)."`
}

// Defaults fills in what the scenario leaves out.
func (p *PartitionParams) Defaults() {
	if p.Duration <= 0 {
		p.Duration = Duration(time.Second)
	}
}

// throughToxiproxy: the fault is a toxiproxy toxic on a client's
// connection; only RabbitMQ's clients go through toxiproxy so far.
func throughToxiproxy(w Where) string {
	if w.Broker != RabbitMQ {
		return "it acts on a client's connection through toxiproxy, which only rabbitmq clients go through; use broker kind: rabbitmq"
	}
	return ""
}

// needsAMQPProxy: the fault is a toxic that parses AMQP 0-9-1 frames, in
// front of a RabbitMQ client's connection.
func needsAMQPProxy(w Where) string {
	if w.Broker != RabbitMQ {
		return "it parses AMQP 0-9-1 frames on a RabbitMQ client's connection; use broker kind: rabbitmq"
	}
	return ""
}

// LookupFault returns the fault type t.
func LookupFault(t FaultType) (Fault, bool) {
	for _, f := range Faults {
		if f.Type == t {
			return f, true
		}
	}
	return Fault{}, false
}

// FaultTypes lists the fault type names.
func FaultTypes() []FaultType {
	out := make([]FaultType, len(Faults))
	for i, f := range Faults {
		out[i] = f.Type
	}
	return out
}

// Allowed lists the valid values, for strict decoding and the schema.
func (FaultType) Allowed() []string { return Strings(FaultTypes()) }

// Allowed lists the valid values, for strict decoding and the schema.
func (CrashPoint) Allowed() []string { return Strings(CrashPoints()) }

// Allowed lists the valid values, for strict decoding and the schema.
func (Mode) Allowed() []string { return Strings(Modes) }

// Allowed lists the valid values, for strict decoding and the schema.
func (Acks) Allowed() []string { return Strings(AcksLevels) }

// Allowed lists the valid values, for strict decoding and the schema.
func (AckMode) Allowed() []string { return Strings(AckModes) }

// DefaultFaultName is a fault's label when the scenario gives none: its
// type, plus the crash point for a consumer crash or zombie.
func DefaultFaultName(t FaultType, params any) string {
	if p, ok := params.(*ConsumerCrashParams); ok && p.At != "" {
		return fmt.Sprintf("%s@%s", t, p.At)
	}
	if p, ok := params.(*ConsumerKillParams); ok && p.At != "" {
		return fmt.Sprintf("%s@%s", t, p.At)
	}
	return string(t)
}

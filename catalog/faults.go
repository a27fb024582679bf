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
	ProducerCrash       FaultType = "producer-crash"
	ConsumerZombie      FaultType = "consumer-zombie"
	AckLost             FaultType = "ack-lost"
	Disconnect          FaultType = "disconnect"
	BrokerRestart       FaultType = "broker-restart"
	TransformCrash      FaultType = "transform-crash"
	TransactionAbort    FaultType = "transaction-abort"
	LeaderMove          FaultType = "leader-move"
	Rebalance           FaultType = "rebalance"
	LeaderFailover      FaultType = "leader-failover"
	ConfirmLost         FaultType = "confirm-lost"
	PoisonMessage       FaultType = "poison-message"
	ConnectionReset     FaultType = "connection-reset"
	Partition           FaultType = "partition"
	Latency             FaultType = "latency"
	SubscriberOffline   FaultType = "subscriber-offline"
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
	// ConsumerAck is the variant's consumer ack mode, when known ("" when
	// not: the fault is asked about the broker alone).
	ConsumerAck AckMode
	// Settings are the broker kind's own settings as the scenario gave
	// them (Broker.NewSettings), when known.
	Settings any
}

// ConsumerCrashParams are consumer-crash's and consumer-zombie's own
// parameters.
type ConsumerCrashParams struct {
	At CrashPoint `yaml:"at" json:"at" jsonschema:"required,description=Where the consumer dies (consumer-crash) or stalls (consumer-zombie)."`
}

// Point is where the fault acts (PointParams).
func (p *ConsumerCrashParams) Point() CrashPoint { return p.At }

// PointParams are the parameters of a fault that acts at a crash point:
// validation rejects a point no variant's strategy has, where the fault
// could never fire.
type PointParams interface {
	Point() CrashPoint
}

// LeaderFailoverParams are leader-failover's own parameters.
type LeaderFailoverParams struct {
	At  CrashPoint  `yaml:"at" json:"at" jsonschema:"required,description=Where in the consumer's handling of the chosen intent the queue's leader node is stopped (e.g. after-effect-before-ack: the effect applied and the ack not sent)."`
	How FailoverHow `yaml:"how" json:"how,omitempty" jsonschema:"description=How the leader goes: kill (default: its node is killed with SIGKILL and restarted in the background) or step-down (NATS only: the stream's leader hands over to a follower\\, $JS.API.STREAM.LEADER.STEPDOWN\\, and every node keeps running)."`
}

// FailoverHow is how leader-failover removes a leader.
type FailoverHow string

// The ways a leader goes.
const (
	KillLeader     FailoverHow = "kill"
	StepDownLeader FailoverHow = "step-down"
)

// Allowed lists the valid values, for strict decoding and the schema.
func (FailoverHow) Allowed() []string { return []string{string(KillLeader), string(StepDownLeader)} }

// Defaults fills in what the scenario leaves out.
func (p *LeaderFailoverParams) Defaults() {
	if p.How == "" {
		p.How = KillLeader
	}
}

// Point is where the fault acts (PointParams).
func (p *LeaderFailoverParams) Point() CrashPoint { return p.At }

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
			case w.Broker != Kafka:
				return "it loses a Kafka produce response (inside the embedded kfake, or by dqbench's Kafka protocol filter in front of a real Kafka); use broker kind: kafka"
			case w.Acks == AcksNone:
				return "with acks: none the broker sends no response to lose; use acks: all or leader"
			}
			return ""
		},
	},
	{
		Type:      ProducerCrash,
		Doc:       "the producer process dies after sending: the broker stores the chosen produce request, and the producer client dies before it reads the response. A new producer client starts and the application resends every intent it had no confirm for. An idempotent producer's new client gets a new producer id, so the broker cannot tell the resend from a new record; a transactional producer's new client, with the same transactional_id, fences the old one and aborts its open transaction",
		Injection: "one producer client killed with a request stored and unanswered (the request's intents are listed)",
		Available: producerCrashWhere,
	},
	{
		Type:      TransformCrash,
		Doc:       "the consume-transform-produce stage dies after writing a batch to its output topic and before committing the input offsets (inside the transaction, before it commits, when the stage is transactional); a replacement starts from the last committed offsets. Hits the variants with a stage",
		Injection: "one stage instance killed with a written, uncommitted batch (the batch's intents are listed)",
		Available: stageOnKafka,
	},
	{
		Type:      TransactionAbort,
		Doc:       "the transactional stage aborts a batch's transaction after writing it to the output topic; it rewinds to the last committed offsets and does the batch again. Hits the variants with a transactional stage",
		Injection: "one transaction aborted (the batch's intents are listed)",
		Available: stageOnKafka,
	},
	{
		Type:      Rebalance,
		Doc:       "a new stage instance joins the stage's consumer group after a batch is written and before it is committed, and partitions move to it; the instance that wrote the batch waits until the newcomer has read its first record, then commits: with transactions the rebalance aborts its transaction (the newcomer does the revoked records again); without, it commits what it still owns and the revoked records are written again by the newcomer. Hits the variants with a stage",
		Injection: "one stage instance joined the group (the batch's intents are listed)",
		Available: stageOnKafka,
	},
	{
		Type:      LeaderMove,
		Doc:       "every partition of the variant's topics gets a new leader when a produce request carries a chosen intent (the embedded cluster: the next broker; a real Kafka: the next in-sync replica, through the admin API: the replicas reordered, then the preferred leader elected); clients find the new leader through NOT_LEADER_OR_FOLLOWER and a metadata refresh",
		Injection: "one move of every partition's leader (the fault event names each move)",
		Available: leaderMoveWhere,
	},
	consumerKill,
	{
		Type:      LeaderFailover,
		Doc:       "the node leading the variant's quorum queue (RabbitMQ), replicated stream and its consumer (NATS) or partitions (Kafka, a managed three-node Apache Kafka) is killed (SIGKILL) while the consumer handles the chosen intent at a crash point; clients reconnect to a surviving node, a new leader is elected and the dead connections' unacked messages and unconfirmed publishes are redelivered or retried; the node restarts in the background (Kafka: before the next failover). On Kafka, what the leader had confirmed with acks: leader and its followers had not fetched is lost. On NATS, how: step-down makes the stream's leader hand over instead, every node running",
		Injection: "one queue leader node stopped (once for all variants that reach the same intent)",
		NewParams: func() any { return new(LeaderFailoverParams) },
		Available: leaderFailoverWhere,
	},
	{
		Type:               AckLost,
		Doc:                "an acknowledgement never arrives. RabbitMQ: the consumer applies the effect and sends basic.ack, which a protocol-aware toxic in dqbench's in-process toxiproxy drops, and the connection breaks; the broker requeues and redelivers, and the consumer believes it acked (the history shows the ack, then the redelivery). MQTT: the chosen packet (PUBACK, PUBREC, PUBREL or PUBCOMP of the chosen intent, on the chosen leg) is lost and the connection breaks, and the sender retries on reconnect as MQTT 3.1.1 requires; it acts only in variants whose QoS on that leg uses the packet. NATS: the consumer's ack (a PUB to the delivery's $JS.ACK reply subject) is dropped by the NATS toxic while the connection stays up, and the server delivers the message again once ack_wait has passed; with ack: plain the consumer believes it acked, with ack: sync (the double ack) no confirmation comes, the consumer records ack-unconfirmed and acks again, in time. Kafka (managed or external): the OffsetCommit that commits the chosen delivery is dropped on its way to the broker and the connection cut, in the relays in front of the cluster; the client sends the commit again on a new connection, and a broken connection makes Kafka redeliver nothing, so on its own it neither duplicates nor loses (RabbitMQ's broker redelivers what a broken connection had not acked; Kafka's only moves on from the committed offset)",
		Injection:          "one acknowledgement lost (on RabbitMQ and MQTT, its connection broken)",
		NewParams:          func() any { return new(AckLostParams) },
		Available:          ackLostWhere,
		InProcessToxiproxy: true,
	},
	{
		Type:      Disconnect,
		Doc:       "the publisher's or the subscriber's connection breaks right after the broker handled the chosen intent's PUBLISH on that leg; the client reconnects (the publisher) or is restarted (the consumer) with its session",
		Injection: "one connection broken",
		NewParams: func() any { return new(DisconnectParams) },
		Available: mqttEmbedded,
	},
	{
		Type:      BrokerRestart,
		Doc:       "MQTT: the variant's managed Mosquitto is stopped (SIGTERM: it writes its persistence file when persistence is on) right after the broker confirmed the chosen intent, and started again on the same port and directory; clients reconnect. It keeps exactly what Mosquitto keeps. RabbitMQ: the managed single node writes its metadata (the queues declared) to disk, then is frozen (SIGSTOP) as the producer sends the chosen intent, so that publish is in flight and not stored, then killed (SIGKILL) and started again on the same ports and data directory; clients reconnect and declare their queue again. A transient queue comes back empty, a durable one without its transient messages; without confirms the producer never learns what was lost. Kafka: the node of a managed one-node Kafka is killed (SIGKILL) once the broker confirmed the chosen intent (with acks: none, once it was sent) and started again; what it confirmed survives in the page cache, the clients retry what the kill left unanswered",
		Injection: "one broker restart",
		Available: brokerRestartWhere,
	},
	{
		Type:               ConfirmLost,
		Doc:                "the broker stores the publish, but its publisher confirm is dropped by a protocol-aware toxic in dqbench's in-process toxiproxy while the connection stays up; the producer times out (producer confirm_timeout) and republishes (producer retries). RabbitMQ: the AMQP basic.ack to the producer is lost, so the queue holds two copies. NATS: the JetStream PubAck (the MSG on the publish's reply subject) is lost; the stream stores the retry as a second copy unless it carries the first send's Nats-Msg-Id within duplicate_window (msg_id: business), when the stream drops it",
		Injection:          "one publisher confirm lost",
		Available:          confirmLostWhere,
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
		Doc:       "the consumer's connection is reset (toxiproxy's reset_peer toxic on its proxy) right after it received the chosen intent, before processing it: the broker requeues what the consumer had not acked and a replacement consumer starts. At-least-once redelivers the intent; with the ack before processing it is lost. With connection: producer (or both) the producer's connection is reset when the broker's confirm of the chosen publish comes back, before the producer reads it: the broker has the message, the producer does not know, and with retries it publishes it again. Kafka (managed or external): the relays in front of the cluster reset every connection of the consumer instance, which is then replaced (the group hands its partitions to the replacement from the last commit); on the producer's connection the chosen request's response is dropped and the connection cut, and the client sends it again on a new connection whatever producer retries says (a broken connection does not end a Kafka publish): the broker stores it twice unless the producer is idempotent",
		Injection: "one connection reset (the consumer's or the producer's)",
		NewParams: func() any { return new(ConnectionResetParams) },
		Available: throughToxiproxy,
	},
	{
		Type:      Partition,
		Doc:       "the consumer is cut off from the broker right after it received the chosen intent (toxiproxy's timeout toxic on its proxy drops everything both ways) for a duration, after which its connection closes: it processes the intent meanwhile, its ack never arrives, and the broker requeues and redelivers the intent to the replacement consumer. With connection: producer (or both) the producer is cut off when the broker's confirm of the chosen publish comes back: the confirm and everything after it both ways are dropped for the duration, then the connection closes; with retries the producer publishes again what it had no confirm for. Kafka (managed or external): the relays in front of the cluster drop everything of the consumer instance (or the producer) both ways, then close its connections; the client then reconnects and goes on. A consumer's commit waits through the partition and is sent again: shorter than the group's session timeout (6 s on a real Kafka) it lands and nothing is redelivered; longer, the broker has expelled the member, refuses the commit (UNKNOWN_MEMBER_ID), and the replacement gets everything since the last commit again. A producer's request whose response the partition swallowed is sent again: twice stored unless the producer is idempotent",
		Injection: "one client partitioned from the broker (the consumer or the producer)",
		NewParams: func() any { return new(PartitionParams) },
		Available: throughToxiproxy,
	},
	{
		Type:      Latency,
		Doc:       "the consumer's network turns slow right after it received the chosen intent (toxiproxy's latency toxic on both directions of its proxy) for a while: every frame between it and the broker is delayed. It changes how long things take, not what happens: on its own it neither duplicates nor loses. Kafka (managed or external): every piece of data through the relays of the consumer instance (or, with connection: producer, of the producer, from the chosen request on) waits the latency",
		Injection: "one consumer connection slowed",
		NewParams: func() any { return new(LatencyParams) },
		Available: throughToxiproxy,
	},
	{
		Type:      SubscriberOffline,
		Doc:       "the subscriber goes offline for a window of intents: once it has handled what the broker had sent it, its connection is closed (no clean unsubscribe) before the chosen intent is routed, the broker refuses its reconnects while the chosen intent and the next for-1 are routed, and it reconnects after. QoS 0 messages routed meanwhile are lost; a persistent session (clean_session: false) keeps QoS 1 and 2 messages and the broker delivers them on reconnect; a clean session loses them",
		Injection: "one offline window (the event lists the intents the broker received meanwhile)",
		NewParams: func() any { return new(SubscriberOfflineParams) },
		Available: mqttEmbedded,
	},
	slowProcessing,
	failOnce,
	producerAppCrash,
}

// leaderMoveWhere: leader-move needs a Kafka whose partitions have another
// broker to lead them: the embedded cluster, a managed one of three nodes,
// or an external one (whose topics are replicated, as the run finds out).
func leaderMoveWhere(w Where) string {
	switch {
	case w.Broker != Kafka:
		return "partition leaders are Kafka's; use broker kind: kafka (embedded or managed with brokers: 3, or an external cluster whose topics are replicated)"
	case w.Mode == Managed:
		if s, ok := w.Settings.(*KafkaSettings); ok && s.Brokers != 3 {
			return "it hands each partition's leadership to another replica, and a one-node cluster has none; add brokers: 3 to the broker"
		}
	}
	return ""
}

// leaderFailoverWhere: leader-failover stops a node of a local cluster
// dqbench manages, leading a quorum queue (RabbitMQ) or a stream with
// replicas to fail over to (NATS).
func leaderFailoverWhere(w Where) string {
	if (w.Broker != RabbitMQ && w.Broker != NATS && w.Broker != Kafka) || w.Mode != Managed {
		return "it stops a node of the local cluster dqbench manages; use broker kind: rabbitmq, mode: managed, queue_type: quorum, or kind: nats, mode: managed, replicas: 3, or kind: kafka, mode: managed, brokers: 3"
	}
	if s, ok := w.Settings.(*KafkaSettings); ok && s.Brokers != 3 {
		return "it kills the node leading the variant's partitions, and a topic needs the 3 replicas of a three-node cluster to have a majority left; add brokers: 3 to the broker"
	}
	if s, ok := w.Settings.(*RabbitMQSettings); ok && s.QueueType != QuorumQueue {
		return "it stops the leader of a quorum queue, and classic queues have none; add queue_type: quorum to the broker"
	}
	if s, ok := w.Settings.(*NATSSettings); ok && s.Replicas < 3 {
		return "it fails a stream's leader over to a follower, and a stream needs replicas: 3 on the 3-node cluster to have a majority left; add replicas: 3 to the broker"
	}
	return ""
}

// brokerRestartWhere says why a restart of a broker process dqbench
// started cannot act elsewhere: a variant's managed Mosquitto, or the
// node of a single-node managed RabbitMQ or Kafka.
func brokerRestartWhere(w Where) string {
	if w.Broker == Kafka && w.Mode == Managed {
		if s, ok := w.Settings.(*KafkaSettings); ok && s.Brokers == 3 {
			return "it restarts the node of a one-node managed Kafka, which every variant's partitions are on; leave out brokers: 3 (leader-failover kills a node of three)"
		}
		return ""
	}
	if w.Broker == RabbitMQ && w.Mode == Managed {
		if s, ok := w.Settings.(*RabbitMQSettings); ok && s.Nodes != 1 {
			return "it restarts the node of a single-node managed RabbitMQ, which every variant's queue is on; add nodes: 1 to the broker"
		}
		return ""
	}
	if w.Broker != MQTT || w.Mode != Managed {
		return "it restarts a broker process dqbench started; use broker kind: mqtt, mode: managed (the embedded mochi-mqtt keeps no sessions across a restart in this build) or kind: rabbitmq, mode: managed, nodes: 1, or kind: kafka, mode: managed"
	}
	return ""
}

// mqttEmbeddedOrProxied says why an MQTT packet fault, injected inside the
// embedded broker or by the MQTT toxic in front of an external one, cannot
// act elsewhere.
func mqttEmbeddedOrProxied(w Where) string {
	if w.Broker != MQTT || w.Mode == Managed {
		return "it is injected inside the embedded MQTT broker (mochi-mqtt) or by dqbench's in-process toxiproxy in front of an external one; use broker kind: mqtt, mode: embedded or external"
	}
	return ""
}

// mqttEmbedded says why a fault injected inside the embedded MQTT broker
// cannot act elsewhere.
func mqttEmbedded(w Where) string {
	if w.Broker != MQTT || w.Mode != Embedded {
		return "it is injected inside the embedded MQTT broker (mochi-mqtt); use broker kind: mqtt, mode: embedded"
	}
	return ""
}

// InProcessOnly says whether a fault of type t with params acts inside
// dqbench's in-process toxiproxy: a protocol-aware toxic, or a network
// fault on the producer's connection, which watches for the broker's
// confirm of the chosen publish.
func InProcessOnly(t FaultType, params any) bool {
	if k, _ := LookupFault(t); k.InProcessToxiproxy {
		return true
	}
	p, ok := params.(OnConnection)
	return ok && p.On().Producer()
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
// type, plus the crash point for a consumer crash or zombie, the packet
// and leg of a lost MQTT acknowledgement, the leg of a disconnect.
func DefaultFaultName(t FaultType, params any) string {
	if p, ok := params.(*ConsumerCrashParams); ok && p.At != "" {
		return fmt.Sprintf("%s@%s", t, p.At)
	}
	if p, ok := params.(*SlowProcessingParams); ok && p.At != "" {
		return fmt.Sprintf("%s@%s", t, p.At)
	}
	if p, ok := params.(*FailOnceParams); ok && p.At != "" {
		return fmt.Sprintf("%s@%s", t, p.At)
	}
	if p, ok := params.(*ConsumerKillParams); ok && p.At != "" {
		return fmt.Sprintf("%s@%s", t, p.At)
	}
	if p, ok := params.(*ProducerAppCrashParams); ok && p.At != "" {
		return fmt.Sprintf("%s@%s", t, p.At)
	}
	if p, ok := params.(*AckLostParams); ok && p.Packet != "" {
		return fmt.Sprintf("%s@%s/%s", t, p.Packet, p.Leg)
	}
	if p, ok := params.(*DisconnectParams); ok && p.Leg != "" {
		return fmt.Sprintf("%s@%s", t, p.Leg)
	}
	// The consumer's (the default) keeps the bare type, the name its
	// schedule has always been hashed with.
	if p, ok := params.(OnConnection); ok && p.On() != "" && p.On() != ConsumerConnection {
		return fmt.Sprintf("%s@%s", t, p.On())
	}
	return string(t)
}

// producerCrashWhere: producer-crash sees the produce requests inside the
// embedded Kafka broker (kfake), or in the Kafka protocol filter in front
// of a real one, and kills franz-go's client connections.
func producerCrashWhere(w Where) string {
	switch {
	case w.Broker != Kafka:
		return "it sees a Kafka produce request (inside the embedded kfake, or in dqbench's Kafka protocol filter in front of a real Kafka) and kills the client that sent it; use broker kind: kafka"
	case w.Acks == AcksNone:
		return "with acks: none the producer waits for no response, so it has nothing unconfirmed to resend; use acks: all or leader"
	}
	return "" // and client: franz-go, which scenario validation checks per variant
}

// stageOnKafka: a consume-transform-produce stage runs on Kafka only.
func stageOnKafka(w Where) string {
	if w.Broker != Kafka {
		return "a consume-transform-produce stage runs on Kafka only; use broker kind: kafka"
	}
	return ""
}

// Connection is which client's connection a network fault acts on.
type Connection string

// The connections a network fault can act on.
const (
	ConsumerConnection Connection = "consumer"
	ProducerConnection Connection = "producer"
	BothConnections    Connection = "both"
)

// Allowed lists the valid values, for strict decoding and the schema.
func (Connection) Allowed() []string {
	return Strings([]Connection{ConsumerConnection, ProducerConnection, BothConnections})
}

// Consumer says whether the fault acts on the consumer's connection (the
// default).
func (c Connection) Consumer() bool { return c != ProducerConnection }

// Producer says whether the fault acts on the producer's connection.
func (c Connection) Producer() bool { return c == ProducerConnection || c == BothConnections }

// OnConnection is what a network fault's params say about the connection it acts on.
type OnConnection interface{ On() Connection }

// ConnectionResetParams are connection-reset's own parameters.
type ConnectionResetParams struct {
	Connection Connection `yaml:"connection" json:"connection,omitempty" jsonschema:"description=Whose connection is reset: consumer (default: right after it received the chosen intent)\\, producer (when the broker's confirm of the chosen publish comes back\\, before the producer reads it) or both."`
}

// On is the connection the fault acts on (OnConnection).
func (p *ConnectionResetParams) On() Connection { return p.Connection }

// LatencyParams are latency's own parameters.
type LatencyParams struct {
	Latency    Duration   `yaml:"latency" json:"latency,omitempty" jsonschema:"description=Delay added to every chunk of data in each direction (default 100ms)."`
	Duration   Duration   `yaml:"duration" json:"duration,omitempty" jsonschema:"description=How long the connection stays slow (default 1s)."`
	Connection Connection `yaml:"connection" json:"connection,omitempty" jsonschema:"description=Whose connection turns slow: consumer (default: right after it received the chosen intent)\\, producer (when the broker's confirm of the chosen publish comes back\\, which goes through) or both."`
}

// On is the connection the fault acts on (OnConnection).
func (p *LatencyParams) On() Connection { return p.Connection }

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
	Duration   Duration   `yaml:"duration" json:"duration,omitempty" jsonschema:"description=How long the client is cut off before its connection closes (default 1s)."`
	Connection Connection `yaml:"connection" json:"connection,omitempty" jsonschema:"description=Who is cut off: consumer (default: right after it received the chosen intent)\\, producer (when the broker's confirm of the chosen publish comes back) or both."`
}

// On is the connection the fault acts on (OnConnection).
func (p *PartitionParams) On() Connection { return p.Connection }

// Defaults fills in what the scenario leaves out.
func (p *PartitionParams) Defaults() {
	if p.Duration <= 0 {
		p.Duration = Duration(time.Second)
	}
}

// throughToxiproxy: the fault acts on a client's connection where it
// passes through dqbench: a RabbitMQ client's toxiproxy, or the relays in
// front of a real Kafka (managed or external).
func throughToxiproxy(w Where) string {
	switch {
	case w.Broker == RabbitMQ:
		return ""
	case w.Broker == Kafka && w.Mode == Embedded:
		return "it acts on a client's connection, and the embedded Kafka's clients reach kfake directly; use mode: managed or external (a real Kafka, reached through dqbench's relays)"
	case w.Broker != Kafka:
		return "it acts on a client's connection where it passes through dqbench, which rabbitmq clients and those of a real Kafka do; use broker kind: rabbitmq, or kafka with mode: managed or external"
	}
	return ""
}

// confirmLostWhere: confirm-lost is a toxic that parses AMQP 0-9-1 frames
// in front of a RabbitMQ producer, or the NATS protocol in front of a NATS
// producer (embedded or external: the toxiproxy runs in-process).
func confirmLostWhere(w Where) string {
	if w.Broker != RabbitMQ && w.Broker != NATS {
		return "it parses the broker's protocol (AMQP 0-9-1 or NATS) on a producer's connection; use broker kind: rabbitmq or nats"
	}
	return ""
}

// ackLostWhere: ack-lost acts on RabbitMQ through the AMQP toxic, on NATS
// through the NATS toxic (in-process, in front of any server), on a real
// Kafka through its relays, and on MQTT as the MQTT fault does.
func ackLostWhere(w Where) string {
	switch {
	case w.ConsumerAck == AckAuto:
		return "it drops the consumer's acknowledgement, and with ack: auto the broker takes a message as acked when it delivers it: there is none to lose; use consumer ack: after-process (or before-process)"
	case w.Broker == RabbitMQ || w.Broker == NATS:
		return ""
	case w.Broker == Kafka && w.Mode == Embedded:
		return "on Kafka it drops the consumer's offset commit on its way to the broker, through the relays in front of a real Kafka; the embedded Kafka's clients reach kfake directly: use mode: managed or external"
	case w.Broker == Kafka:
		return ""
	}
	if why := mqttEmbeddedOrProxied(w); why != "" {
		return why + "; or broker kind: rabbitmq or nats (the AMQP or NATS toxic), or kafka with mode: managed or external"
	}
	return ""
}

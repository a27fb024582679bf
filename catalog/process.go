package catalog

// ConsumerKill is the fault that SIGKILLs a consumer process of a process
// variant (a consumer outside dqbench) at a point dqbench sees from
// outside: the broker delivering the intent to it, or its commit or ack of
// the intent.
const ConsumerKill FaultType = "consumer-kill"

// KillPoint is where consumer-kill kills a consumer process, seen from
// outside it.
type KillPoint string

// The kill points.
const (
	// KillOnDelivery: the broker is about to send the process a fetch
	// response carrying the intent; the process is killed before the
	// response leaves, so it never processes the intent.
	KillOnDelivery KillPoint = "delivery"
	// KillOnCommit: the process's offset commit covering the intent
	// reached the broker; the commit is withheld and the process killed,
	// after its effect and before the broker has the commit.
	KillOnCommit KillPoint = "commit"
	// KillOnAck: the process's acknowledgement of the intent (RabbitMQ's
	// basic.ack, MQTT's PUBACK or PUBREC, NATS's PUB to the delivery's
	// $JS.ACK reply subject) reached dqbench on its way to
	// the broker; it is dropped and the process killed, after its effect
	// and before the broker has the ack.
	KillOnAck KillPoint = "ack"
)

// KillPoints lists the kill points, in the order a delivery meets them.
var KillPoints = []KillPoint{KillOnDelivery, KillOnCommit, KillOnAck}

// AckPoint is the kill point where a consumer of broker kind k tells the
// broker it is done with a message: Kafka's offset commit, the others'
// acknowledgement. A kill point on kind k is KillOnDelivery or this.
func AckPoint(k BrokerKind) KillPoint {
	if k == Kafka {
		return KillOnCommit
	}
	return KillOnAck
}

// ProcessOn says why a process variant cannot run on broker kind k in
// mode m, or "" when it can: dqbench must see each delivery to the process
// and each of its commits or acks on the wire.
func ProcessOn(k BrokerKind, m Mode) string {
	switch k {
	case Kafka, RabbitMQ, MQTT, NATS:
		return ""
	}
	return "process variants run on kafka, rabbitmq, mqtt and nats for now"
}

// Allowed lists the valid values, for strict decoding and the schema.
func (KillPoint) Allowed() []string { return Strings(KillPoints) }

// ConsumerKillParams are consumer-kill's own parameters.
type ConsumerKillParams struct {
	At KillPoint `yaml:"at" json:"at" jsonschema:"required,description=When the consumer process is killed: delivery (the broker is about to deliver the intent to it: a Kafka fetch response\\, a RabbitMQ basic.deliver\\, an MQTT PUBLISH or a NATS MSG\\, withheld) or\\, after its effect\\, commit (Kafka: its offset commit reached the broker and is withheld) or ack (RabbitMQ: its basic.ack; MQTT: its PUBACK or PUBREC; NATS: its PUB to the delivery's $JS.ACK subject; dropped)."`
}

// consumerKill describes consumer-kill for catalog.Faults.
var consumerKill = Fault{
	Type:      ConsumerKill,
	Doc:       "SIGKILL a consumer process of a process variant when the broker is about to deliver the intent to it (at: delivery), or when its offset commit (Kafka, at: commit) or its ack (RabbitMQ, MQTT, NATS: at: ack) of the intent reaches the broker (withheld); a fresh process is started in its place",
	Injection: "one consumer process killed (SIGKILL to its process group)",
	NewParams: func() any { return new(ConsumerKillParams) },
	Available: func(w Where) string {
		return ProcessOn(w.Broker, w.Mode)
	},
}

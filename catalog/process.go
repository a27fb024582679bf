package catalog

// ConsumerKill is the fault that SIGKILLs a consumer process of a process
// variant (a consumer outside dqbench) at a point dqbench sees from
// outside: a fetch response carrying the intent, or a commit of it.
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
)

// KillPoints lists the kill points, in the order a delivery meets them.
var KillPoints = []KillPoint{KillOnDelivery, KillOnCommit}

// Allowed lists the valid values, for strict decoding and the schema.
func (KillPoint) Allowed() []string { return Strings(KillPoints) }

// ConsumerKillParams are consumer-kill's own parameters.
type ConsumerKillParams struct {
	At KillPoint `yaml:"at" json:"at" jsonschema:"required,description=When the consumer process is killed: delivery (the fetch response carrying the intent is about to leave the broker) or commit (its offset commit reached the broker and is withheld)."`
}

// consumerKill describes consumer-kill for catalog.Faults.
var consumerKill = Fault{
	Type:      ConsumerKill,
	Doc:       "SIGKILL a consumer process of a process variant when the broker is about to deliver the intent to it, or when its offset commit for the intent reaches the broker (withheld); a fresh process is started in its place",
	Injection: "one consumer process killed (SIGKILL to its process group)",
	NewParams: func() any { return new(ConsumerKillParams) },
	Available: func(w Where) string {
		if w.Broker != Kafka || w.Mode != Embedded {
			return "dqbench watches the consumer's fetches and commits inside the embedded Kafka broker (kfake); use broker kind: kafka, mode: embedded"
		}
		return ""
	},
}

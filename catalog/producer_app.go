package catalog

// ProducerPattern is how the producer application hands an intent to the
// broker (producer.pattern): published directly, after a write of its own
// business row (a dual write), or through a transactional outbox and a
// relay.
type ProducerPattern string

// The producer patterns.
const (
	// Direct: the application publishes each intent, and has no store of
	// its own (the default, and every built-in before producer.pattern).
	Direct ProducerPattern = "direct"
	// DualWrite: the application commits its business row in its own
	// store, then publishes: two writes, no transaction spanning them.
	DualWrite ProducerPattern = "dual-write"
	// Outbox: the application commits its business row and an outbox row
	// in one transaction; a relay publishes each unsent outbox row and
	// then marks it sent.
	Outbox ProducerPattern = "outbox"
)

// ProducerPatterns lists the producer patterns.
var ProducerPatterns = []ProducerPattern{Direct, DualWrite, Outbox}

// Allowed lists the valid values, for strict decoding and the schema.
func (ProducerPattern) Allowed() []string { return Strings(ProducerPatterns) }

// ProducerPoint is a place in the producer application where a
// producer-app-crash kills it.
type ProducerPoint string

// The producer application's crash points, one per pattern that has a
// store.
const (
	// BetweenWriteAndPublish: dual-write's business row is committed, the
	// publish not sent.
	BetweenWriteAndPublish ProducerPoint = "between-write-and-publish"
	// AfterPublishBeforeMark: the outbox relay had the broker's confirm
	// for a row and had not marked it sent.
	AfterPublishBeforeMark ProducerPoint = "after-publish-before-mark"
)

// Allowed lists the valid values, for strict decoding and the schema.
func (ProducerPoint) Allowed() []string {
	return []string{string(BetweenWriteAndPublish), string(AfterPublishBeforeMark)}
}

// Point is the crash point producer pattern p has, "" for direct.
func (p ProducerPattern) Point() ProducerPoint {
	switch p {
	case DualWrite:
		return BetweenWriteAndPublish
	case Outbox:
		return AfterPublishBeforeMark
	}
	return ""
}

// PatternWith is the producer pattern that has crash point at.
func PatternWith(at ProducerPoint) ProducerPattern {
	for _, p := range ProducerPatterns {
		if p.Point() == at {
			return p
		}
	}
	return ""
}

// ProducerAppCrash kills the producer application (not only its broker
// client, as producer-crash does) at a point of its producer.pattern.
const ProducerAppCrash FaultType = "producer-app-crash"

// ProducerAppCrashParams are producer-app-crash's own parameters.
type ProducerAppCrashParams struct {
	At ProducerPoint `yaml:"at" json:"at" jsonschema:"required,description=Where the producer application dies: between-write-and-publish (producer.pattern dual-write: its business row committed and the publish never sent) or after-publish-before-mark (producer.pattern outbox: the relay had the broker's confirm and had not marked the outbox row sent)."`
}

// producerAppCrash describes producer-app-crash for catalog.Faults.
var producerAppCrash = Fault{
	Type: ProducerAppCrash,
	Doc: "the producer application dies at a point of its producer.pattern and restarts. between-write-and-publish (dual-write): the business row is committed and the publish never sent; the restarted application goes on with the next intent, and nothing tells it to send the one it lost. " +
		"after-publish-before-mark (outbox): the relay published an outbox row and had the broker's confirm, and dies before marking the row sent; the restarted relay finds the row unsent and publishes it again (a duplicate publish, with the same business id). Acts only in the variants whose pattern has the point",
	Injection: "one producer application (or outbox relay) killed at its crash point",
	NewParams: func() any { return new(ProducerAppCrashParams) },
	Available: func(Where) string { return "" },
}

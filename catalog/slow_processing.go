package catalog

// SlowProcessing is the fault that keeps a consumer busy with one
// delivery for longer than the broker lets it hold the message unacked
// (NATS ack_wait), while it stays connected: the broker delivers the
// message again to another instance meanwhile.
const SlowProcessing FaultType = "slow-processing"

// SlowProcessingParams are slow-processing's own parameters.
type SlowProcessingParams struct {
	At CrashPoint `yaml:"at" json:"at" jsonschema:"required,description=Where the consumer is slow: before-process (the redelivery races the first processing) or after-effect-before-ack (the effect is applied\\, the ack comes late)."`
}

// Point is where the fault acts (PointParams).
func (p *SlowProcessingParams) Point() CrashPoint { return p.At }

// slowProcessing describes slow-processing for catalog.Faults.
var slowProcessing = Fault{
	Type:      SlowProcessing,
	Doc:       "the consumer takes longer over the chosen delivery, at a crash point, than the broker's ack deadline (NATS ack_wait, RabbitMQ consumer_timeout on managed nodes) while it stays connected: the broker delivers the message again to another consumer instance, which handles it while the slow one still holds it; then the slow one goes on with its delivery and acks it, late (RabbitMQ: the broker closed its channel at the timeout, so the ack goes nowhere). Two instances handle one intent, and neither crashed",
	Injection: "one delivery held past the ack deadline (ack_wait, consumer_timeout) until the broker delivered it again to another instance",
	NewParams: func() any { return new(SlowProcessingParams) },
	Available: func(w Where) string {
		if w.ConsumerAck == AckAuto {
			return "it holds a delivery unacked past the broker's ack deadline, and with ack: auto the broker takes a message as acked when it delivers it: nothing is held unacked, nothing delivered again; use consumer ack: after-process (or before-process)"
		}
		if w.Broker == RabbitMQ && w.Mode == Managed {
			if s, ok := w.Settings.(*RabbitMQSettings); ok && s.ConsumerTimeout <= 0 {
				return "it holds a delivery past the broker's consumer_timeout, which is 30 minutes unless set; add consumer_timeout (e.g. 2s) to the broker"
			}
			return ""
		}
		if w.Broker != NATS {
			return "it needs a broker that delivers a message again when its consumer holds it too long while still connected (NATS JetStream's ack_wait, RabbitMQ's consumer_timeout); use broker kind: nats, or kind: rabbitmq, mode: managed with consumer_timeout"
		}
		return ""
	},
}

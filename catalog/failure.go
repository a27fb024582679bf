package catalog

// FailureMode is what a consumer does with a delivery whose processing
// failed (a poison message).
type FailureMode string

// The failure modes.
const (
	// FailRequeue hands the delivery back to be delivered again (AMQP
	// basic.nack with requeue): right for a transient failure; a message
	// that fails every time loops unless the queue has a delivery limit.
	FailRequeue FailureMode = "requeue"
	// FailReject refuses it for good (basic.reject without requeue): the
	// broker dead-letters it at once.
	FailReject FailureMode = "reject"
	// FailRetryInProcess runs the processing again at once, in the
	// consumer, without handing the delivery back: any broker.
	FailRetryInProcess FailureMode = "retry-in-process"
	// FailRetryQueue is RabbitMQ's delayed retry through dead-lettering
	// (the retry-queue pattern): the consumer rejects the delivery without
	// requeue, the queue's dead-letter exchange routes it to a wait queue
	// whose message TTL (retry_delay) expires it, and the wait queue's own
	// dead-letter exchange routes it back: it comes again as a new
	// delivery (not flagged redelivered; its x-death header counts the
	// trips). Neither hop is confirmed to anyone.
	FailRetryQueue FailureMode = "retry-queue"
)

// FailureModes lists the failure modes.
var FailureModes = []FailureMode{FailRequeue, FailReject, FailRetryInProcess, FailRetryQueue}

// HandsBack reports whether the mode hands the delivery back to the broker
// (which needs a broker that takes it: Broker.DeadLetter).
func (m FailureMode) HandsBack() bool { return m != FailRetryInProcess }

// DeadLetters reports whether the mode hands a failed delivery to the
// queue's dead-letter exchange (basic.reject without requeue): to the
// dead-letter queue (reject) or to the wait queue (retry-queue).
func (m FailureMode) DeadLetters() bool { return m == FailReject || m == FailRetryQueue }

// Allowed lists the valid values, for strict decoding and the schema.
func (FailureMode) Allowed() []string { return Strings(FailureModes) }

// Overflow is what a full queue (producer max_length) does with a publish.
type Overflow string

// The overflow behaviours (RabbitMQ's x-overflow).
const (
	// DropHead drops the oldest message to make room, after the broker
	// confirmed it: a loss no client sees.
	DropHead Overflow = "drop-head"
	// RejectPublish refuses the new publish with a basic.nack: the
	// producer sees the failure.
	RejectPublish Overflow = "reject-publish"
)

// Overflows lists the overflow behaviours.
var Overflows = []Overflow{DropHead, RejectPublish}

// Allowed lists the valid values, for strict decoding and the schema.
func (Overflow) Allowed() []string { return Strings(Overflows) }

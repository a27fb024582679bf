// Package brokers is the seam between dqbench's generic pipeline and a
// message broker. An adapter provides a producer that reports each publish's
// outcome and consumers that deliver, ack and die; the pipeline wraps them
// in recording clients (package history), so an adapter records nothing.
//
// Fault powers (faults only some brokers can inject) go through one seam,
// Powered.Apply (powers.go); other optional abilities (a dead-letter
// queue, a stage) are separate interfaces found by type assertion.
package brokers

import (
	"context"
	"errors"

	"github.com/dqbench/dqbench/catalog"
)

// ErrUnreachable wraps every failure to reach a broker, so the CLI can tell
// "the run could not be completed" from a failed expectation.
var ErrUnreachable = errors.New("broker unreachable")

// ErrUnconfirmed is what a fire-and-forget publish (Kafka acks=0, MQTT QoS
// 0) reports: it was sent, but the broker never confirms anything, so the
// outcome is unknown and the intent counts as indeterminate.
var ErrUnconfirmed = errors.New("sent without confirmation (fire and forget)")

// ErrRefused marks a publish the broker definitely did not take: it
// answered with a refusal (RabbitMQ basic.nack, a Kafka error that says
// the record was not written, an MQTT 5 PUBACK/PUBREC reason code of 0x80
// or more). Such an intent is counted as refused, not lost: the producer
// was told. Any other publish error leaves the outcome unknown.
var ErrRefused = errors.New("refused by the broker")

// ErrProducerCrashed ends every publish a producer client had not had
// confirmed when a producer-crash fault killed it: the outcome is unknown
// (the broker may have stored it), and the application, restarted with a
// new client, publishes it again (the runner does).
var ErrProducerCrashed = errors.New("the producer client died before the broker's answer")

// ErrAckUnconfirmed is what a consumer's Ack returns when it asked the
// broker to confirm the ack (NATS's double ack) and no confirmation came
// in time: the broker may not have the ack. The consumer loop records it
// and acks again.
var ErrAckUnconfirmed = errors.New("the broker did not confirm the ack in time")

// ErrCleanup wraps a failure to remove what a run made on an external
// broker (topics, groups, queues): the run's counts stand, but something
// was left behind.
var ErrCleanup = errors.New("cleanup on the broker failed")

// Config is what the scenario says about the broker.
type Config struct {
	Kind      catalog.BrokerKind
	Mode      catalog.Mode
	Addresses []string
	// Settings is the kind's own settings (catalog.Broker.NewSettings),
	// with defaults applied.
	Settings any
}

// Broker is a running broker that variants open destinations on.
type Broker interface {
	// Name says what the broker is, e.g. "kafka (embedded kfake)".
	Name() string
	// Open prepares a fresh destination (topic, queue) for one variant.
	Open(ctx context.Context, spec DestinationSpec) (Destination, error)
	// Close stops an embedded broker and releases clients.
	Close() error
}

// DestinationSpec is what a variant asks of a broker.
type DestinationSpec struct {
	// Name is unique per variant and run, safe for topic and group names.
	Name string
	// Idempotent, Acks and Window are the effective producer settings.
	Idempotent bool
	Acks       catalog.Acks
	Window     int
	// Retries is the application's retry policy (producer.retries): when it
	// is above 0 the application publishes again after a send that ends
	// without a confirm, so an adapter whose client would retry on its own
	// where it may give up (Kafka without idempotence) lets it give up at
	// once and report the unknown outcome.
	Retries int
	// Prefetch is how many messages a consumer fetches at once.
	Prefetch int
	// Instances is how many consumer instances run at once (consumer.instances);
	// an MQTT destination gives each its own session in a shared subscription.
	Instances int
	// AutoAck: the broker counts a delivery acked when it sends it
	// (consumer ack: auto, only for kinds with catalog.Broker.AutoAck);
	// Consumer.Ack is then a no-op.
	AutoAck bool
	// Settings is the kind's own settings for this variant
	// (scenario.BrokerSettingsFor: the broker's, with the variant's
	// overrides and its kind-only producer and consumer keys, such as
	// Kafka's client and isolation or RabbitMQ's max_length); nil means
	// the broker's.
	Settings any
	// Stage, when set, puts a consume-transform-produce stage between the
	// producer and the consumers; only a destination with the Stager power
	// can run one.
	Stage *StageSpec
	// DeadLetter: the destination moves refused messages (and, with a
	// delivery limit in its settings, over-delivered ones) to a
	// dead-letter queue, read through DeadLetterer.
	DeadLetter bool
}

// Message is one publish.
type Message struct {
	Intent int
	// Attempt counts the application's sends of this intent, from 1.
	Attempt int
	Key     string
	Body    []byte
}

// Delivery is one message as a consumer received it.
type Delivery struct {
	Intent int
	Body   []byte
	// Position says where the broker kept the message ("0@17": partition 0,
	// offset 17), opaque to the pipeline; two deliveries of one intent from
	// different positions mean the broker stored it twice. Empty where the
	// broker has no such notion.
	Position string
	// Tag is the broker's own tag of this delivery (RabbitMQ's delivery
	// tag, MQTT's packet identifier, NATS's consumer sequence), what id:
	// delivery-tag deduplicates on; empty where there is none (Kafka).
	Tag string
	// Redelivered: the broker flagged it, or the same position came again.
	Redelivered bool
	// Attempt is this intent's delivery count in the variant, from 1; the
	// recording consumer sets it, adapters leave it 0.
	Attempt int
	// QoS is the QoS level the delivery arrived with where the protocol
	// has one (MQTT: "0", "1" or "2"); empty elsewhere.
	QoS string
	// Retained: the broker sent it from its retained messages because the
	// consumer subscribed (MQTT's RETAIN flag on a delivery).
	Retained bool
	// Deaths is how many times the broker had dead-lettered the message
	// before this delivery (RabbitMQ's x-death header, counts summed): a
	// delayed retry through a wait queue comes back as a new message, not
	// flagged redelivered, and this is what says it came back. 0
	// elsewhere.
	Deaths int
	// Handle is the adapter's own reference, passed back to Ack.
	Handle any
}

// Destination is one variant's topic or queue on a broker.
type Destination interface {
	// Producer starts a producer with the spec's settings.
	Producer(ctx context.Context) (Producer, error)
	// Consumer starts a consumer instance; gen numbers instances from 1 so
	// a replacement can be told from the one it replaces.
	Consumer(ctx context.Context, gen int) (Consumer, error)
	// Backlog reports how many stored messages no consumer has acked or
	// committed yet (0: the broker has nothing left to deliver).
	Backlog(ctx context.Context) (int64, error)
	// Close deletes the destination where the broker is external and
	// releases the destination's clients. A failure to delete wraps
	// ErrCleanup.
	Close(ctx context.Context) error
}

// Producer publishes asynchronously.
type Producer interface {
	// Publish sends m; done is called exactly once, with nil when the broker
	// confirmed it, or with the error that ended the attempt (the outcome is
	// then unknown: the broker may have stored it).
	Publish(ctx context.Context, m Message, done func(error))
	// Close waits for outstanding publishes (bounded by ctx) and closes.
	Close(ctx context.Context)
}

// Dropper is a consumer whose death can say which messages died unseen
// with it: sent to it by the broker and not yet handed out by Next, when
// the broker forgot them as it sent them (RabbitMQ autoAck). The
// checker counts such an intent, never applied, as lost in the consumer,
// not in the broker.
type Dropper interface {
	// AbandonDropping is Abandon, returning the intents the client held
	// unread (nil when the broker keeps what it sent until an ack).
	AbandonDropping() []int
}

// Consumer receives deliveries one at a time.
type Consumer interface {
	// Next blocks for the next delivery.
	Next(ctx context.Context) (Delivery, error)
	// Ack acknowledges (commits) d; it returns once the broker has it.
	Ack(ctx context.Context, d Delivery) error
	// Abandon kills the consumer as a crash would: the connection closes
	// and nothing more is acked, so the broker redelivers what was not.
	Abandon()
	// Close stops the consumer cleanly at the end of a run, within ctx.
	Close(ctx context.Context)
}

// LimitReporter is a destination whose broker drops messages past limits
// it was configured with (a managed Mosquitto's max_queued_messages): the
// runner records them, so a report can name the limit behind a loss.
type LimitReporter interface {
	// Limits names the limits, e.g. "Mosquitto max_queued_messages 1000,
	// max_inflight_messages 20".
	Limits() string
}

// Nacker is a consumer that can hand a delivery back as failed (a poison
// message): the consumer loop calls it instead of Ack after processing
// failed.
type Nacker interface {
	// Nack tells the broker the delivery failed and returns once the
	// broker has it. requeue: deliver it again (a transient failure; AMQP
	// basic.nack with requeue); otherwise refuse it for good (basic.reject),
	// and the broker dead-letters it.
	Nack(ctx context.Context, d Delivery, requeue bool) error
}

// AutoCommitter is a consumer whose client may commit by itself (Kafka's
// auto-commit, consumer commit: auto): then its Ack commits nothing (it
// only notes that the application is done with the delivery), and the
// client reports each commit the broker took, with the deliveries it
// covered, so that the history has an ack for each when it happened.
type AutoCommitter interface {
	// AutoCommits says whether the client commits by itself; when it
	// does, it calls committed (from any goroutine) after each commit
	// the broker took, with the deliveries it covered.
	AutoCommits(committed func(ds []Delivery)) bool
}

// BatchAcker is a consumer whose ack of a delivery also acks the
// deliveries before it on the same partition (a Kafka offset commit): one
// request can ack many.
type BatchAcker interface {
	// AckBatch acks ds (in the order delivered) in one request and
	// returns once the broker has it.
	AckBatch(ctx context.Context, ds []Delivery) error
}

// DeadLetterer is a destination whose broker moves refused and
// over-delivered messages to a dead-letter queue; the runner reads that
// queue and records a dead-letter event for each message there.
type DeadLetterer interface {
	// DeadLetters starts a consumer on the dead-letter queue. Its
	// deliveries carry the intent and position as the original's did;
	// Backlog counts what it has not acked.
	DeadLetters(ctx context.Context) (Consumer, error)
}

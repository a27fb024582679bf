// Package brokers is the seam between dqbench's generic pipeline and a
// message broker. An adapter provides a producer that reports each publish's
// outcome and consumers that deliver, ack and die; the pipeline records
// everything in the history.
//
// Optional powers (faults only some brokers can inject) are separate
// interfaces found by type assertion, like ProduceResponseLoser.
package brokers

import (
	"context"
	"errors"
)

// ErrUnreachable wraps every failure to reach a broker, so the CLI can tell
// "the run could not be completed" from a failed expectation.
var ErrUnreachable = errors.New("broker unreachable")

// ErrUnconfirmed is what a fire-and-forget publish (Kafka acks=0, MQTT QoS
// 0) reports: it was sent, but the broker never confirms anything, so the
// outcome is unknown and the intent counts as indeterminate.
var ErrUnconfirmed = errors.New("sent without confirmation (fire and forget)")

// Broker is a running broker that variants open channels on.
type Broker interface {
	// Name says what the broker is, e.g. "kafka (embedded kfake)".
	Name() string
	// Open prepares a fresh destination (topic, queue) for one variant.
	Open(ctx context.Context, spec ChannelSpec) (Channel, error)
	// Close stops an embedded broker and releases clients.
	Close() error
}

// ChannelSpec is what a variant asks of a broker.
type ChannelSpec struct {
	// Name is unique per variant and run, safe for topic and group names.
	Name       string
	Partitions int
	// Idempotent, Acks and Window are the effective producer settings.
	Idempotent bool
	Acks       string
	Window     int
	// Prefetch is how many messages a consumer fetches at once.
	Prefetch int
}

// Message is one publish.
type Message struct {
	Intent int
	Key    string
	Body   []byte
}

// Delivery is one message as a consumer received it.
type Delivery struct {
	Intent      int
	Body        []byte
	Partition   int32
	Offset      int64
	Redelivered bool // the broker flagged it, or the same log position came again
	// Handle is the adapter's own reference, passed back to Ack.
	Handle any
}

// Channel is one variant's destination on a broker.
type Channel interface {
	// Producer starts a producer with the spec's settings.
	Producer(ctx context.Context) (Producer, error)
	// Consumer starts a consumer instance; gen numbers instances from 1 so
	// a replacement can be told from the one it replaces.
	Consumer(ctx context.Context, gen int) (Consumer, error)
	// Drained reports whether the broker has nothing left to deliver:
	// everything stored has been acked or committed by the consumers.
	Drained(ctx context.Context) (bool, error)
	// Close deletes the destination where the broker is external and
	// releases the channel's clients.
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

// Consumer receives deliveries one at a time.
type Consumer interface {
	// Next blocks for the next delivery.
	Next(ctx context.Context) (Delivery, error)
	// Ack acknowledges (commits) d; it returns once the broker has it.
	Ack(ctx context.Context, d Delivery) error
	// Abandon kills the consumer as a crash would: the connection closes
	// and nothing more is acked, so the broker redelivers what was not.
	Abandon()
	// Close stops the consumer cleanly at the end of a run.
	Close()
}

// ProduceResponseLoser is a channel that can make the broker store a publish
// but lose its response, so the producer retries it.
type ProduceResponseLoser interface {
	// LoseProduceResponses installs the fault: for each publish request the
	// broker receives, fires is asked with each intent in it and how many
	// times that intent has reached the broker (1 for the first); when it
	// says yes the broker stores the request and answers with a timeout, and
	// fired is called.
	LoseProduceResponses(fires func(intent, attempt int) bool, fired func(intent, attempt int))
}

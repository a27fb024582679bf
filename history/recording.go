package history

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
)

// Recording clients wrap a broker adapter's producer and consumers so that
// every publish, confirm, delivery and ack lands in the history, whatever
// loop drives them (etcd's robustness tests call this a RecordingClient).

// RecordingProducer records each publish and its outcome.
type RecordingProducer struct {
	brokers.Producer
	rec *VariantRecorder
}

// RecordProducer wraps p.
func RecordProducer(p brokers.Producer, rec *VariantRecorder) *RecordingProducer {
	return &RecordingProducer{Producer: p, rec: rec}
}

// Publish records a publish of m, then a confirm or a failure when the
// broker answers (or the attempt ends), before done is called.
func (p *RecordingProducer) Publish(ctx context.Context, m brokers.Message, done func(error)) {
	p.rec.Record(Event{Type: Publish, Intent: m.Intent, Attempt: m.Attempt})
	p.Producer.Publish(ctx, m, func(err error) {
		if err != nil {
			p.rec.Record(Event{Type: PubFailed, Intent: m.Intent, Attempt: m.Attempt, Reason: err.Error(),
				Refused: errors.Is(err, brokers.ErrRefused)})
		} else {
			p.rec.Record(Event{Type: Confirm, Intent: m.Intent, Attempt: m.Attempt})
		}
		done(err)
	})
}

// Deliveries numbers the deliveries of each intent across all of a
// variant's consumer instances, so that a redelivery to a replacement
// consumer is the intent's second attempt.
type Deliveries struct {
	mu sync.Mutex
	n  []uint16 // by intent; a compact count, saturating
}

// NewDeliveries is sized for intents 1..messages.
func NewDeliveries(messages int) *Deliveries {
	return &Deliveries{n: make([]uint16, messages+1)}
}

func (d *Deliveries) next(intent int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if intent < 0 {
		return 1
	}
	if intent >= len(d.n) {
		d.n = append(d.n, make([]uint16, intent+1-len(d.n))...)
	}
	if d.n[intent] < ^uint16(0) {
		d.n[intent]++
	}
	return int(d.n[intent])
}

// RecordingConsumer records a consumer instance's start, deliveries, acks
// and death.
type RecordingConsumer struct {
	c    brokers.Consumer
	rec  *VariantRecorder
	gen  int
	seen *Deliveries
}

// RecordConsumer wraps consumer instance gen and records its start.
func RecordConsumer(c brokers.Consumer, gen int, seen *Deliveries, rec *VariantRecorder) *RecordingConsumer {
	rec.Record(Event{Type: Start, Consumer: gen})
	return &RecordingConsumer{c: c, rec: rec, gen: gen, seen: seen}
}

// Gen is the consumer instance's generation.
func (c *RecordingConsumer) Gen() int { return c.gen }

// Next records the delivery, with its attempt number set.
func (c *RecordingConsumer) Next(ctx context.Context) (brokers.Delivery, error) {
	d, err := c.c.Next(ctx)
	if err != nil {
		return d, err
	}
	d.Attempt = c.seen.next(d.Intent)
	c.rec.Record(Event{
		Type: Deliver, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.gen,
		Position: d.Position, Redelivered: d.Redelivered, QoS: d.QoS,
	})
	return d, nil
}

// Ack records the ack once the broker has it.
func (c *RecordingConsumer) Ack(ctx context.Context, d brokers.Delivery) error {
	if err := c.c.Ack(ctx, d); err != nil {
		return err
	}
	c.rec.Record(Event{Type: Ack, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.gen, Position: d.Position})
	return nil
}

// Abandon kills the instance as a crash would and records its death; reason
// is empty when a fault killed it.
func (c *RecordingConsumer) Abandon(reason string) {
	c.c.Abandon()
	c.rec.Record(Event{Type: Crash, Consumer: c.gen, Reason: reason})
}

// Close stops the instance at the end of a run, within ctx.
func (c *RecordingConsumer) Close(ctx context.Context) { c.c.Close(ctx) }

// Nack hands d back to the broker as failed (brokers.Nacker); the history
// has the failure already (the effect event with Rejected, the fault).
func (c *RecordingConsumer) Nack(ctx context.Context, d brokers.Delivery, requeue bool) error {
	n, ok := c.c.(brokers.Nacker)
	if !ok {
		return errors.New("this broker's consumer cannot hand a failed delivery back")
	}
	return n.Nack(ctx, d, requeue)
}

// ResetConnection resets the instance's network connection
// (brokers.ConnectionResetter); the history records the fault, and the
// instance's end as a crash with its reason.
func (c *RecordingConsumer) ResetConnection(ctx context.Context) error {
	r, ok := c.c.(brokers.ConnectionResetter)
	if !ok {
		return errors.New("this broker's consumer cannot have its connection reset")
	}
	return r.ResetConnection(ctx)
}

// Partition cuts the instance off from the broker for d
// (brokers.Partitioner).
func (c *RecordingConsumer) Partition(ctx context.Context, d time.Duration) error {
	p, ok := c.c.(brokers.Partitioner)
	if !ok {
		return errors.New("this broker's consumer cannot be partitioned")
	}
	return p.Partition(ctx, d)
}

// Slow delays the instance's network traffic (brokers.Slower).
func (c *RecordingConsumer) Slow(ctx context.Context, latency, d time.Duration) error {
	s, ok := c.c.(brokers.Slower)
	if !ok {
		return errors.New("this broker's consumer cannot be slowed")
	}
	return s.Slow(ctx, latency, d)
}

// SyncAcks waits until the broker has applied the acks written so far,
// where the adapter's Ack does not (brokers.AckSyncer); otherwise there is
// nothing to wait for.
func (c *RecordingConsumer) SyncAcks(ctx context.Context) error {
	if s, ok := c.c.(brokers.AckSyncer); ok {
		return s.SyncAcks(ctx)
	}
	return nil
}

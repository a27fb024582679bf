package recording

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

// Recording clients wrap a broker adapter's producer and consumers so that
// every publish, confirm, delivery and ack lands in the history, whatever
// loop drives them (etcd's robustness tests call this a RecordingClient).

// Producer records each publish and its outcome.
type Producer struct {
	brokers.Producer
	rec *history.VariantRecorder

	mu     sync.Mutex
	gaveUp map[[2]int]bool // attempts (intent, attempt) the application gave up, awaiting the client's answer
}

// NewProducer wraps p.
func NewProducer(p brokers.Producer, rec *history.VariantRecorder) *Producer {
	return &Producer{Producer: p, rec: rec}
}

// Publish records a publish of m, then a confirm or a failure when the
// broker answers (or the attempt ends), before done is called.
func (p *Producer) Publish(ctx context.Context, m brokers.Message, done func(error)) {
	p.rec.Record(history.Event{Type: history.Publish, Intent: m.Intent, Attempt: m.Attempt})
	p.Producer.Publish(ctx, m, func(err error) {
		// A definite refusal is recorded even after a give-up: the
		// broker said it does not have it.
		refused := errors.Is(err, brokers.ErrRefused)
		if gaveUp := p.answered(m.Intent, m.Attempt); err != nil && (!gaveUp || refused) {
			p.rec.Record(history.Event{Type: history.PubFailed, Intent: m.Intent, Attempt: m.Attempt, Reason: err.Error(),
				Refused: refused, FireAndForget: errors.Is(err, brokers.ErrUnconfirmed)})
		} else if err == nil {
			p.rec.Record(history.Event{Type: history.Confirm, Intent: m.Intent, Attempt: m.Attempt})
		}
		done(err)
	})
}

// GaveUp records that the application gave intent's attempt up before the
// client answered (producer.confirm_timeout): a pub-failed with reason.
// The client's own failure of that attempt, when it comes, is not
// recorded again (the attempt failed once); a late confirm or a refusal
// is, so that the history shows what the broker did with it after all.
func (p *Producer) GaveUp(intent, attempt int, reason string) {
	p.mu.Lock()
	if p.gaveUp == nil {
		p.gaveUp = map[[2]int]bool{}
	}
	p.gaveUp[[2]int{intent, attempt}] = true
	p.mu.Unlock()
	p.rec.Record(history.Event{Type: history.PubFailed, Intent: intent, Attempt: attempt, Reason: reason})
}

// answered notes the client's answer to intent's attempt, and says
// whether the application had given that attempt up.
func (p *Producer) answered(intent, attempt int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := [2]int{intent, attempt}
	if !p.gaveUp[k] {
		return false
	}
	delete(p.gaveUp, k)
	return true
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

// Consumer records a consumer instance's start, deliveries, acks
// and death.
type Consumer struct {
	c    brokers.Consumer
	rec  *history.VariantRecorder
	gen  int
	seen *Deliveries
	// auto: the client commits by itself (brokers.AutoCommitter); its
	// commits are recorded as they happen (autoCommitted), not at Ack.
	auto bool
	// attempts are the attempt numbers of the deliveries not yet
	// auto-committed, by position.
	mu       sync.Mutex
	attempts map[string]int
}

// NewConsumer wraps consumer instance gen and records its start.
func NewConsumer(c brokers.Consumer, gen int, seen *Deliveries, rec *history.VariantRecorder) *Consumer {
	rec.Record(history.Event{Type: history.Start, Consumer: gen})
	rc := &Consumer{c: c, rec: rec, gen: gen, seen: seen}
	if ac, ok := c.(brokers.AutoCommitter); ok {
		rc.attempts = map[string]int{}
		rc.auto = ac.AutoCommits(rc.autoCommitted)
	}
	return rc
}

// AutoCommitReason is the reason of an ack the client's auto-commit made.
const AutoCommitReason = "auto-commit"

// autoCommitted records an ack for each delivery an auto-commit covered.
func (c *Consumer) autoCommitted(ds []brokers.Delivery) {
	for _, d := range ds {
		c.mu.Lock()
		attempt := c.attempts[d.Position]
		delete(c.attempts, d.Position)
		c.mu.Unlock()
		c.rec.Record(history.Event{Type: history.Ack, Intent: d.Intent, Attempt: max(attempt, 1), Consumer: c.gen, Position: d.Position, Reason: AutoCommitReason})
	}
}

// Gen is the consumer instance's generation.
func (c *Consumer) Gen() int { return c.gen }

// Next records the delivery, with its attempt number set.
func (c *Consumer) Next(ctx context.Context) (brokers.Delivery, error) {
	d, err := c.c.Next(ctx)
	if err != nil {
		return d, err
	}
	d.Attempt = c.seen.next(d.Intent)
	if c.auto {
		c.mu.Lock()
		c.attempts[d.Position] = d.Attempt
		c.mu.Unlock()
	}
	c.rec.Record(history.Event{
		Type: history.Deliver, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.gen,
		Position: d.Position, Redelivered: d.Redelivered, QoS: d.QoS, Retained: d.Retained, Deaths: d.Deaths,
	})
	return d, nil
}

// Ack records the ack once the broker has it, or, when the broker did not
// confirm an ack the consumer asked it to confirm
// (brokers.ErrAckUnconfirmed), that it did not.
func (c *Consumer) Ack(ctx context.Context, d brokers.Delivery) error {
	if c.auto {
		return c.c.Ack(ctx, d) // commits nothing: autoCommitted records the commits
	}
	if err := c.c.Ack(ctx, d); err != nil {
		if errors.Is(err, brokers.ErrAckUnconfirmed) {
			c.rec.Record(history.Event{Type: history.AckUnconfirmed, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.gen, Position: d.Position, Reason: err.Error()})
		}
		return err
	}
	c.rec.Record(history.Event{Type: history.Ack, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.gen, Position: d.Position})
	return nil
}

// BatchAcks reports whether the consumer can ack many deliveries in one
// request (brokers.BatchAcker).
func (c *Consumer) BatchAcks() bool {
	_, ok := c.c.(brokers.BatchAcker)
	return ok
}

// AckBatch acks ds in one request (the consumer must BatchAcks) and
// records an ack for each once the broker has them.
func (c *Consumer) AckBatch(ctx context.Context, ds []brokers.Delivery) error {
	if err := c.c.(brokers.BatchAcker).AckBatch(ctx, ds); err != nil || c.auto {
		return err
	}
	for _, d := range ds {
		c.rec.Record(history.Event{Type: history.Ack, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.gen, Position: d.Position})
	}
	return nil
}

// Abandon kills the instance as a crash would and records its death; reason
// is empty when a fault killed it.
func (c *Consumer) Abandon(reason string) {
	var dropped []int
	if d, ok := c.c.(brokers.Dropper); ok {
		dropped = d.AbandonDropping()
	} else {
		c.c.Abandon()
	}
	c.rec.Record(history.Event{Type: history.Crash, Consumer: c.gen, Reason: reason, Intents: dropped})
}

// LoseLease kills the instance's connection as Abandon does, for an
// instance that stalled past its lease at point p and goes on as a zombie:
// its crash event says LeaseLost.
func (c *Consumer) LoseLease(p catalog.CrashPoint) {
	c.c.Abandon()
	c.rec.Record(history.Event{Type: history.Crash, Consumer: c.gen, LeaseLost: true,
		Reason: fmt.Sprintf("%s: stalled at %s past its session timeout; another instance took over", history.LeaseLost, p)})
}

// Close stops the instance at the end of a run, within ctx.
func (c *Consumer) Close(ctx context.Context) { c.c.Close(ctx) }

// Nack hands d back to the broker as failed (brokers.Nacker); the history
// has the failure already (the effect event with Rejected, the fault).
func (c *Consumer) Nack(ctx context.Context, d brokers.Delivery, requeue bool) error {
	n, ok := c.c.(brokers.Nacker)
	if !ok {
		return errors.New("this broker's consumer cannot hand a failed delivery back")
	}
	return n.Nack(ctx, d, requeue)
}

// Inner is the adapter's consumer the recording wraps: the runner asks it
// to apply the powers a fault needs (brokers.Partition and the like), which a
// recording client does not have.
func (c *Consumer) Inner() brokers.Consumer { return c.c }

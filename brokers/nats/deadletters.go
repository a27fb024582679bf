package nats

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/dqbench/dqbench/brokers"
)

// Dead letters. JetStream has no dead-letter queue: a message it gives up
// stays in the stream, and the server publishes an advisory naming its
// stream sequence: MAX_DELIVERIES once it was delivered max_deliver times
// without an ack (the consumer nakked it, or ack_wait passed, each time),
// MSG_TERMINATED when the consumer terminated it (on_failure: reject).
// Reading those advisories and fetching each message by its sequence is
// how a NATS application builds its dead-letter path, and what the
// runner's dead-letter reader does through DeadLetters.

var _ brokers.DeadLetterer = (*dest)(nil)

// The advisory subjects of the messages a consumer gives up, and what
// they say (the fields dqbench reads).
const (
	maxDeliveriesAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."
	terminatedAdvisory    = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."
)

type advisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// advisories queues the give-up advisories of one variant's consumer as
// they arrive (unbounded: a handler never blocks the connection).
type advisories struct {
	subs  []*nats.Subscription
	mu    sync.Mutex
	queue []advisory
	ready chan struct{} // signalled when queue grows
	errs  []error
}

// watchGiveUps subscribes, on the admin connection and before any consumer
// starts, to the advisories of the messages the variant's consumer gives
// up.
func (d *dest) watchGiveUps() error {
	a := &advisories{ready: make(chan struct{}, 1)}
	for _, prefix := range []string{maxDeliveriesAdvisory, terminatedAdvisory} {
		sub, err := d.b.nc.Subscribe(prefix+d.stream+"."+durable, a.add)
		if err != nil {
			a.stop()
			return fmt.Errorf("subscribe to %s advisories of stream %s: %w", prefix, d.stream, err)
		}
		a.subs = append(a.subs, sub)
	}
	if err := d.b.nc.FlushTimeout(flushWait); err != nil {
		a.stop()
		return fmt.Errorf("subscribe to the advisories of stream %s: %w", d.stream, err)
	}
	d.dead = a
	return nil
}

func (a *advisories) add(m *nats.Msg) {
	var adv advisory
	err := json.Unmarshal(m.Data, &adv)
	a.mu.Lock()
	if err != nil || adv.StreamSeq == 0 {
		a.errs = append(a.errs, fmt.Errorf("advisory on %s: cannot read %q", m.Subject, m.Data))
	} else {
		a.queue = append(a.queue, adv)
	}
	a.mu.Unlock()
	select {
	case a.ready <- struct{}{}:
	default:
	}
}

// next waits for the next advisory.
func (a *advisories) next(ctx context.Context) (advisory, error) {
	for {
		a.mu.Lock()
		if len(a.errs) > 0 {
			err := a.errs[0]
			a.errs = a.errs[1:]
			a.mu.Unlock()
			return advisory{}, err
		}
		if len(a.queue) > 0 {
			adv := a.queue[0]
			a.queue = a.queue[1:]
			a.mu.Unlock()
			return adv, nil
		}
		a.mu.Unlock()
		select {
		case <-a.ready:
		case <-ctx.Done():
			return advisory{}, ctx.Err()
		}
	}
}

func (a *advisories) stop() {
	for _, s := range a.subs {
		_ = s.Unsubscribe()
	}
}

// DeadLetters reads the messages the server gives up: each advisory's
// message, fetched from the stream by its sequence, is a delivery with the
// intent and position (stream sequence) of the original. Acking it does
// nothing: the server has given it up already.
func (d *dest) DeadLetters(context.Context) (brokers.Consumer, error) {
	if d.dead == nil {
		return nil, fmt.Errorf("stream %s: the variant reads no dead letters (no max_deliver, no on_failure: reject)", d.stream)
	}
	return &deadLetters{d: d}, nil
}

type deadLetters struct{ d *dest }

func (c *deadLetters) Next(ctx context.Context) (brokers.Delivery, error) {
	adv, err := c.d.dead.next(ctx)
	if err != nil {
		return brokers.Delivery{}, err
	}
	st, err := c.d.b.js.Stream(ctx, c.d.stream)
	if err != nil {
		return brokers.Delivery{}, fmt.Errorf("stream %s: %w", c.d.stream, err)
	}
	m, err := st.GetMsg(ctx, adv.StreamSeq)
	if err != nil {
		return brokers.Delivery{}, fmt.Errorf("message %d of stream %s, given up after %d deliveries: %w", adv.StreamSeq, c.d.stream, adv.Deliveries, err)
	}
	intent, err := c.d.intentOf(m.Subject)
	if err != nil {
		return brokers.Delivery{}, err
	}
	return brokers.Delivery{Intent: intent, Body: m.Data, Position: strconv.FormatUint(adv.StreamSeq, 10)}, nil
}

func (c *deadLetters) Ack(context.Context, brokers.Delivery) error { return nil }
func (c *deadLetters) Abandon()                                    {}
func (c *deadLetters) Close(context.Context)                       {}

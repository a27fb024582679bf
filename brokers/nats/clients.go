package nats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/netfault"
	natsfault "github.com/dqbench/dqbench/netfault/nats"
)

// dest is one variant's stream and durable pull consumer.
type dest struct {
	b        *Broker
	spec     brokers.DestinationSpec
	settings catalog.NATSSettings
	stream   string
	prefix   string // subjects: prefix + key
	cons     jetstream.Consumer
	// ackNone: the consumer has the AckNone policy (ack: auto): the
	// server counts a message acked once it sent it, so the backlog adds
	// what the server sent and no consumer instance has settled yet.
	ackNone bool
	// confirmLost, when armed (Apply), routes every producer started
	// afterwards through a proxy that loses the chosen PubAcks; ackLost
	// does the same for consumers and their acks.
	confirmLost *lose
	ackLost     *lose
	// dead holds the advisories of messages the server gave up
	// (deadletters.go), when the variant reads dead letters.
	dead *advisories
	// out is the relay of a process variant's consumers (outside.go).
	out *outside

	mu      sync.Mutex
	live    map[*consumer]bool
	settled int64 // AckNone: received, then handed on (Ack) or dropped by a crash
}

var _ brokers.Destination = (*dest)(nil)

// Backlog is what the consumer has not acked: the stream's messages not
// yet delivered plus those delivered and not acked (num_pending +
// num_ack_pending). With AckNone the server counts nothing as pending
// once sent, so the messages it sent that no instance has settled yet are
// added: the backlog may be high for a moment, never low.
func (d *dest) Backlog(ctx context.Context) (int64, error) {
	d.mu.Lock()
	settled := d.settled
	d.mu.Unlock()
	// The stream's last sequence first, the consumer's state after: the
	// consumer's num_pending can lag the stream for a moment after
	// publishes the server has confirmed (seen under -race: 3 of 6), and
	// the messages past the last one delivered are exact from the stream.
	st, err := d.b.js.Stream(ctx, d.stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s on %s: %w", d.stream, d.b.Name(), err)
	}
	sinfo, err := st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream info of %s on %s: %w", d.stream, d.b.Name(), err)
	}
	info, err := d.cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("consumer info of stream %s on %s: %w", d.stream, d.b.Name(), err)
	}
	pending := int64(info.NumPending)
	if undelivered := int64(sinfo.State.LastSeq) - int64(info.Delivered.Stream); undelivered > pending {
		pending = undelivered
	}
	n := pending + int64(info.NumAckPending)
	if d.ackNone {
		n += max(int64(info.Delivered.Consumer)-settled, 0)
	}
	return n, nil
}

// Close stops reading advisories, stops a process variant's relay and
// deletes the stream (and its consumer with it).
func (d *dest) Close(ctx context.Context) error {
	if d.dead != nil {
		d.dead.stop()
	}
	rerr := d.closeOutside()
	err := d.b.js.DeleteStream(ctx, d.stream)
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return errors.Join(rerr, fmt.Errorf("%w on %s: delete stream %s: %v", brokers.ErrCleanup, d.b.Name(), d.stream, err))
	}
	d.b.forget(d.stream)
	return rerr
}

// Producer connects a publisher: straight to the server, or with
// confirm-lost armed through its own proxy (faults.go).
func (d *dest) Producer(ctx context.Context) (brokers.Producer, error) {
	name := "dqbench-" + d.stream + "-p"
	url, opts := d.b.url, []nats.Option(nil)
	var px *netfault.Proxy
	if lose := d.confirmLost; lose != nil {
		var err error
		if px, url, err = d.proxied(name, lose); err != nil {
			return nil, err
		}
		opts = proxiedOpts
	}
	nc, js, err := connect(ctx, url, name, true, slices.Concat(opts, d.b.sec)...)
	if err != nil {
		if px != nil {
			_ = px.Close(context.WithoutCancel(ctx))
		}
		return nil, unreachable(err)
	}
	return &producer{d: d, nc: nc, js: js, px: px, closing: make(chan struct{})}, nil
}

// unreachable marks a failed client connect as the broker's being
// unreachable (exit 3), once.
func unreachable(err error) error {
	if errors.Is(err, brokers.ErrUnreachable) {
		return err
	}
	return fmt.Errorf("%w: %v", brokers.ErrUnreachable, err)
}

// producer publishes with PublishMsgAsync and reports each PubAck.
type producer struct {
	d       *dest
	nc      *nats.Conn
	js      jetstream.JetStream
	px      *netfault.Proxy // confirm-lost's proxy, or nil
	wg      sync.WaitGroup
	closing chan struct{}
	once    sync.Once
}

var _ brokers.Producer = (*producer)(nil)

// errClosed ends a publish still unconfirmed when the producer closes.
var errClosed = errors.New("producer closed before the publish ack came")

// Publish sends m with its Nats-Msg-Id; done gets the PubAck's outcome.
// A PubAck saying duplicate (the stream dropped it: it had that id within
// its duplicate window) is a confirm: the stream has the message.
func (p *producer) Publish(ctx context.Context, m brokers.Message, done func(error)) {
	msg := &nats.Msg{Subject: p.d.subject(m.Key), Data: m.Body}
	var opts []jetstream.PublishOpt
	if id := p.d.msgID(m); id != "" {
		opts = append(opts, jetstream.WithMsgID(id))
	}
	f, err := p.js.PublishMsgAsync(msg, opts...)
	if err != nil {
		done(classify(err))
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		select {
		case <-f.Ok():
			done(nil)
		case err := <-f.Err():
			done(classify(err))
		case <-p.closing:
			done(errClosed)
		}
	}()
}

// classify wraps a definite refusal with brokers.ErrRefused: the server
// answered with a JetStream API error, or no stream listens on the
// subject. Anything else leaves the outcome unknown.
func classify(err error) error {
	var api *jetstream.APIError
	if errors.As(err, &api) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) {
		return fmt.Errorf("%w: %v", brokers.ErrRefused, err)
	}
	return err
}

// lateAckWait bounds Close's wait for outstanding publish acks. The
// pipeline closes a producer once every intent has an outcome, so what is
// still outstanding then is a publish the application gave up on (no
// PubAck within producer.confirm_timeout): a late PubAck is recorded if it
// comes by then, and a lost one does not hold the run up.
const lateAckWait = time.Second

// Close waits for outstanding publish acks (until ctx ends, at most
// lateAckWait), fails the rest and closes the connection.
func (p *producer) Close(ctx context.Context) {
	all := make(chan struct{})
	go func() { p.wg.Wait(); close(all) }()
	late := time.NewTimer(lateAckWait)
	defer late.Stop()
	select {
	case <-all:
	case <-late.C:
	case <-ctx.Done():
	}
	p.once.Do(func() { close(p.closing) })
	<-all
	p.nc.Close()
	if p.px != nil {
		_ = p.px.Close(context.WithoutCancel(ctx))
	}
}

// Consumer connects a consumer instance to the variant's durable pull
// consumer: straight to the server, or with ack-lost armed through its own
// proxy (faults.go).
func (d *dest) Consumer(ctx context.Context, gen int) (brokers.Consumer, error) {
	name := fmt.Sprintf("dqbench-%s-c%d", d.stream, gen)
	c := &consumer{d: d}
	url, opts := d.b.url, []nats.Option(nil)
	if lose := d.ackLost; lose != nil && !d.ackNone {
		c.acks = new(natsfault.Acks)
		px, purl, err := d.proxy(name, func(px *netfault.Proxy) error {
			return px.AddFilter("ack-lost", netfault.Upstream, natsfault.LoseAcks(c.acks, lose.fires, lose.lost))
		})
		if err != nil {
			return nil, err
		}
		c.px, url, opts = px, purl, proxiedOpts
	}
	nc, js, err := connect(ctx, url, name, false, slices.Concat(opts, d.b.sec)...)
	if err != nil {
		c.closeProxy()
		return nil, unreachable(err)
	}
	cons, err := js.Consumer(ctx, d.stream, durable)
	if err != nil {
		nc.Close()
		c.closeProxy()
		return nil, fmt.Errorf("consumer of stream %s on %s: %w", d.stream, d.b.Name(), err)
	}
	c.nc, c.cons, c.batch = nc, cons, max(d.spec.Prefetch, 1)
	if d.ackNone {
		// One at a time: a crash drops nothing fetched beyond the
		// message in hand.
		c.batch = 1
	}
	d.mu.Lock()
	if d.live == nil {
		d.live = map[*consumer]bool{}
	}
	d.live[c] = true
	d.mu.Unlock()
	return c, nil
}

// fetchWait bounds one pull request: Next asks again after it.
const fetchWait = time.Second

// consumer is one consumer instance, with its own connection.
type consumer struct {
	d     *dest
	nc    *nats.Conn
	cons  jetstream.Consumer
	batch int
	buf   []jetstream.Msg
	// mb is the pull request in progress (nil: none), cancel ends it.
	mb     jetstream.MessageBatch
	cancel context.CancelFunc
	held   atomic.Int64 // AckNone: received and not yet settled
	gone   atomic.Bool
	// px and acks: ack-lost's proxy, and the ack subjects it may lose
	// (nil when ack-lost is not armed).
	px   *netfault.Proxy
	acks *natsfault.Acks
}

var (
	_ brokers.Consumer = (*consumer)(nil)
	_ brokers.Nacker   = (*consumer)(nil)
	_ brokers.Powered  = (*consumer)(nil)
)

// delivery is a Delivery's Handle: the message, and whether its ack was
// sent once already (ack-lost loses only an ack's first send).
type delivery struct {
	m       jetstream.Msg
	ackSent bool
}

// Next returns the next message of the stream for this consumer: each
// pull request asks for up to batch messages and lasts fetchWait; the
// messages are handed on as they arrive.
func (c *consumer) Next(ctx context.Context) (brokers.Delivery, error) {
	for len(c.buf) == 0 {
		if err := ctx.Err(); err != nil {
			return brokers.Delivery{}, err
		}
		if c.nc.IsClosed() {
			return brokers.Delivery{}, fmt.Errorf("connection to %s closed", c.d.b.Name())
		}
		if c.mb == nil {
			fctx, cancel := context.WithTimeout(ctx, fetchWait)
			mb, err := c.cons.Fetch(c.batch, jetstream.FetchContext(fctx))
			if err != nil {
				cancel()
				if ctx.Err() != nil {
					return brokers.Delivery{}, ctx.Err()
				}
				return brokers.Delivery{}, fmt.Errorf("fetch from stream %s: %w", c.d.stream, err)
			}
			c.mb, c.cancel = mb, cancel
		}
		select {
		case m, ok := <-c.mb.Messages():
			if ok {
				if c.d.ackNone {
					c.held.Add(1)
				}
				c.buf = append(c.buf, m)
				continue
			}
			err := c.mb.Error()
			c.cancel()
			c.mb = nil
			if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
				return brokers.Delivery{}, fmt.Errorf("fetch from stream %s: %w", c.d.stream, err)
			}
		case <-ctx.Done():
			return brokers.Delivery{}, ctx.Err()
		}
	}
	m := c.buf[0]
	c.buf = c.buf[1:]
	meta, err := m.Metadata()
	if err != nil {
		return brokers.Delivery{}, fmt.Errorf("stream %s: %w", c.d.stream, err)
	}
	intent, err := c.d.intentOf(m.Subject())
	if err != nil {
		return brokers.Delivery{}, err
	}
	return brokers.Delivery{
		Intent:      intent,
		Body:        m.Data(),
		Position:    strconv.FormatUint(meta.Sequence.Stream, 10),
		Tag:         strconv.FormatUint(meta.Sequence.Consumer, 10),
		Redelivered: meta.NumDelivered > 1,
		Handle:      &delivery{m: m},
	}, nil
}

// handle is d's message, or an error when d is not from this consumer.
func handle(d brokers.Delivery) (*delivery, error) {
	h, ok := d.Handle.(*delivery)
	if !ok {
		return nil, fmt.Errorf("delivery of intent %d is not from a NATS consumer", d.Intent)
	}
	return h, nil
}

// Ack acks d. With ack: sync (the double ack) it waits for the server to
// confirm the ack, at most ackTimeout: no confirmation by then is
// brokers.ErrAckUnconfirmed (the server may not have the ack; acking
// again is safe). With ack: plain it writes the ack and returns (Backlog
// may count the message for a moment longer; SyncAcks waits for it). With
// AckNone there is nothing to send.
func (c *consumer) Ack(ctx context.Context, d brokers.Delivery) error {
	if c.d.ackNone {
		c.settle(1)
		return nil
	}
	h, err := handle(d)
	if err != nil {
		return err
	}
	if c.acks != nil && !h.ackSent {
		c.acks.Put(h.m.Reply(), d.Intent, d.Attempt)
	}
	h.ackSent = true
	if c.d.settings.Ack == catalog.PlainAck {
		return h.m.Ack()
	}
	wait := c.d.ackTimeout()
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err = h.m.DoubleAck(actx)
	if err != nil && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)) {
		return fmt.Errorf("%w: no answer to the double ack of intent %d within %s", brokers.ErrAckUnconfirmed, d.Intent, wait)
	}
	return err
}

// ackTimeout is how long a double ack waits for the server's answer: a
// quarter of ack_wait (at least 100ms, at most 5s), so an ack sent again
// after it still reaches the server before ack_wait passes.
func (d *dest) ackTimeout() time.Duration {
	return min(max(d.settings.AckWait.D()/4, 100*time.Millisecond), 5*time.Second)
}

// flushWait bounds a round trip to the server (SyncAcks, Nack).
const flushWait = 5 * time.Second

// Nack hands d back as failed: requeue is a nak (the server delivers it
// again at once, until max_deliver), otherwise a term (the server gives
// it up for good). It returns once the server has read it: a round trip
// on the connection.
func (c *consumer) Nack(ctx context.Context, d brokers.Delivery, requeue bool) error {
	h, err := handle(d)
	if err != nil {
		return err
	}
	if requeue {
		err = h.m.Nak()
	} else {
		err = h.m.Term()
	}
	if err != nil {
		return err
	}
	fctx, cancel := context.WithTimeout(ctx, flushWait)
	defer cancel()
	return c.nc.FlushWithContext(fctx)
}

// Apply gives the consumer's one power: SyncAcks, a round trip on the
// connection, after which the server has read every plain ack written so
// far (a double ack is confirmed already).
func (c *consumer) Apply(ctx context.Context, p brokers.Power) error {
	if _, ok := p.(brokers.SyncAcks); !ok {
		return brokers.NoPower(p)
	}
	if c.d.ackNone || c.d.settings.Ack != catalog.PlainAck {
		return nil
	}
	fctx, cancel := context.WithTimeout(ctx, flushWait)
	defer cancel()
	return c.nc.FlushWithContext(fctx)
}

// settle counts n AckNone messages as done with.
func (c *consumer) settle(n int64) {
	if n <= 0 {
		return
	}
	c.held.Add(-n)
	c.d.mu.Lock()
	c.d.settled += n
	c.d.mu.Unlock()
}

// leave closes the connection (nats.go writes out what it buffered, plain
// acks included, before it closes the socket) and ack-lost's proxy, and
// settles what the instance held: with explicit acks the server
// redelivers it after ack_wait; with AckNone it is lost.
func (c *consumer) leave() {
	if c.gone.Swap(true) {
		return
	}
	c.nc.Close()
	if c.cancel != nil {
		c.cancel()
	}
	c.closeProxy()
	c.d.mu.Lock()
	delete(c.d.live, c)
	c.d.mu.Unlock()
	c.settle(c.held.Load())
}

func (c *consumer) closeProxy() {
	if c.px != nil {
		_ = c.px.Close(context.Background())
	}
}

// Abandon drops the connection as a crash would.
func (c *consumer) Abandon() { c.leave() }

// Close stops the instance at the end of a run.
func (c *consumer) Close(context.Context) { c.leave() }

package rabbitmq

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dqbench/dqbench/brokers"
)

// errUnknownOutcome: the channel or connection closed before the broker
// confirmed or nacked a publish, which it may or may not have stored.
var errUnknownOutcome = errors.New("channel closed before the publisher confirm: outcome unknown")

// closeWait bounds a clean connection close (connection.close-ok) and the
// wait for the client's goroutines to end after a connection is dropped.
const closeWait = 5 * time.Second

// Producer publishes persistent messages on a channel in confirm mode, at
// most spec.Window unconfirmed at once (amqp091's deferred confirmations).
func (d *queueDest) Producer(ctx context.Context) (brokers.Producer, error) {
	conn, err := d.r.dialAny(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", brokers.ErrUnreachable, err)
	}
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("rabbitmq producer on %s: %w", d.r.masked, err)
	}
	window := max(d.spec.Window, 1)
	p := &producer{
		d: d, conn: conn, ch: ch,
		id:      fmt.Sprintf("p%d", d.r.seq.Add(1)),
		window:  make(chan struct{}, window),
		pending: make(chan pending, window),
		stop:    make(chan struct{}),
		loop:    make(chan struct{}),
	}
	go p.confirms()
	return p, nil
}

type producer struct {
	d    *queueDest
	conn *amqp.Connection
	ch   *amqp.Channel
	id   string // names this producer's publishes in the copy header

	window  chan struct{} // a slot per unconfirmed publish
	pending chan pending  // in publish order, for confirms()
	stop    chan struct{} // closed by Close: no more publishes
	loop    chan struct{} // closed when confirms() has called every done

	mu      sync.Mutex // publish order = sequence numbers; guards closing
	closing bool
	once    sync.Once
}

var _ brokers.Producer = (*producer)(nil)

type pending struct {
	ch   *amqp.Channel // the channel it was published on
	dc   *amqp.DeferredConfirmation
	done func(error)
}

func (p *producer) Publish(ctx context.Context, m brokers.Message, done func(error)) {
	select {
	case p.window <- struct{}{}:
	case <-ctx.Done():
		done(ctx.Err())
		return
	case <-p.stop:
		done(errors.New("rabbitmq producer closed"))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		<-p.window
		done(errors.New("rabbitmq producer closed"))
		return
	}
	if p.ch.IsClosed() {
		// Its node died (a managed cluster's failover): what was
		// unconfirmed on it ends as unknown; go on on a survivor.
		if err := p.reconnect(ctx); err != nil {
			<-p.window
			done(fmt.Errorf("publish intent %d to %s: %w (outcome unknown)", m.Intent, p.d.queue, err))
			return
		}
	}
	// One basic.publish is one stored copy in the queue (RabbitMQ keeps
	// no producer-side dedup), so the publish's sequence number on this
	// producer's channel names the copy; a consumer reports it as the
	// delivery's Position.
	copyID := fmt.Sprintf("%s#%d", p.id, p.ch.GetNextPublishSeqNo())
	dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, "", p.d.queue, false, false, amqp.Publishing{
		DeliveryMode: amqp.Persistent,
		MessageId:    m.Key,
		Headers:      amqp.Table{copyHeader: copyID},
		Body:         m.Body,
	})
	if err != nil {
		<-p.window
		done(fmt.Errorf("publish intent %d to %s: %w (outcome unknown)", m.Intent, p.d.queue, err))
		return
	}
	p.pending <- pending{p.ch, dc, done} // never blocks: the window bounds it
}

// confirms calls each publish's done in publish order once the broker
// answered it: nil for basic.ack, an error for basic.nack (the broker
// refused it), errUnknownOutcome when the channel closed first (amqp091
// then marks every outstanding confirmation as not acked).
func (p *producer) confirms() {
	defer close(p.loop)
	for pe := range p.pending {
		<-pe.dc.Done()
		var err error
		if !pe.dc.Acked() {
			if pe.ch.IsClosed() {
				err = errUnknownOutcome
			} else {
				err = fmt.Errorf("broker nacked the publish to %s (basic.nack)", p.d.queue)
			}
		}
		<-p.window
		pe.done(err)
	}
}

// Close waits for the outstanding confirms within ctx, then closes the
// connection, which ends whatever is still unconfirmed as unknown.
func (p *producer) Close(ctx context.Context) {
	p.once.Do(func() {
		close(p.stop)
		p.mu.Lock()
		p.closing = true
		close(p.pending)
		p.mu.Unlock()
		select {
		case <-p.loop:
		case <-ctx.Done():
		}
		p.mu.Lock()
		conn := p.conn
		p.mu.Unlock()
		closeConn(ctx, conn)
		<-p.loop
	})
}

// closeConn closes conn cleanly, within ctx and closeWait.
func closeConn(ctx context.Context, conn *amqp.Connection) {
	deadline := time.Now().Add(closeWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.CloseDeadline(deadline)
}

// Consumer starts a consumer on its own connection: basic.qos(prefetch)
// and manual acks.
func (d *queueDest) Consumer(ctx context.Context, gen int) (brokers.Consumer, error) {
	c := &consumer{d: d, gen: gen, prefetch: max(d.spec.Prefetch, 1), autoAck: d.spec.AutoAck}
	conn, err := d.r.dialAny(ctx, func(nc net.Conn) net.Conn {
		c.fc = &frameCounter{Conn: nc}
		return c.fc
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", brokers.ErrUnreachable, err)
	}
	c.conn = conn
	c.closed = conn.NotifyClose(make(chan *amqp.Error, 1))
	c.ch, err = conn.Channel()
	if err == nil {
		err = c.ch.Qos(c.prefetch, 0, false)
	}
	if err != nil {
		closeConn(ctx, conn)
		return nil, fmt.Errorf("rabbitmq consumer %d on %s: %w", gen, d.queue, err)
	}
	// Counted before basic.consume: the broker may deliver before
	// consume-ok reaches us, and Backlog must see those deliveries.
	// One call at a time on a channel: Backlog's flush may come meanwhile.
	d.join(c)
	tag := fmt.Sprintf("%s-consumer-%d", d.queue, gen)
	c.rpcMu.Lock()
	c.deliveries, err = c.ch.ConsumeWithContext(ctx, d.queue, tag, c.autoAck, false, false, false, nil)
	c.rpcMu.Unlock()
	if err != nil {
		d.leave(c)
		closeConn(ctx, conn)
		return nil, fmt.Errorf("rabbitmq consumer %d on %s: %w", gen, d.queue, err)
	}
	d.registered(c)
	return c, nil
}

type consumer struct {
	d          *queueDest
	gen        int
	prefetch   int
	autoAck    bool
	fc         *frameCounter
	conn       *amqp.Connection
	ch         *amqp.Channel
	deliveries <-chan amqp.Delivery
	closed     chan *amqp.Error

	consuming bool // consume-ok received (guarded by d.mu)

	settled atomic.Int64 // deliveries acked
	rpcMu   sync.Mutex   // amqp091 matches a channel's replies to one call at a time
	once    sync.Once
}

var _ brokers.Consumer = (*consumer)(nil)

func (c *consumer) Next(ctx context.Context) (brokers.Delivery, error) {
	var m amqp.Delivery
	var ok bool
	select {
	case m, ok = <-c.deliveries:
	case <-ctx.Done():
		return brokers.Delivery{}, ctx.Err()
	}
	if !ok {
		return brokers.Delivery{}, fmt.Errorf("rabbitmq consumer %d on %s: the channel closed", c.gen, c.d.queue)
	}
	if c.autoAck {
		c.settled.Add(1) // handed over: the broker forgot it when it sent it
	}
	intent, err := brokers.ParseKey(m.MessageId)
	if err != nil {
		return brokers.Delivery{}, fmt.Errorf("message on %s: %w", c.d.queue, err)
	}
	pos, _ := m.Headers[copyHeader].(string)
	return brokers.Delivery{
		Intent: intent, Body: m.Body, Position: pos, Redelivered: m.Redelivered, Handle: m.DeliveryTag,
	}, nil
}

// Ack acknowledges d and returns once the broker has processed the ack.
// AMQP 0-9-1 has no answer to basic.ack, so Ack follows it with a round
// trip on the same channel (basic.qos, unchanged): the broker handles a
// channel's frames in order, so its qos-ok means the ack was applied.
// Only writing the ack is not enough: a consumer killed right after it
// (Abandon drops the socket with deliveries still unread, so the kernel
// sends a reset) can lose acks the broker had not read yet, and the
// broker redelivers messages whose ack the consumer believed done.
func (c *consumer) Ack(ctx context.Context, d brokers.Delivery) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.autoAck {
		return nil // the broker counted it acked when it sent it
	}
	if err := c.ch.Ack(d.Handle.(uint64), false); err != nil {
		return fmt.Errorf("ack intent %d on %s: %w", d.Intent, c.d.queue, err)
	}
	c.settled.Add(1)
	if err := c.flush(); err != nil {
		return fmt.Errorf("ack intent %d on %s: %w", d.Intent, c.d.queue, err)
	}
	return nil
}

// held is how many deliveries this consumer read and has not acked; with
// autoAck, how many it read and Next has not handed over yet (the broker
// no longer has them, but the run will still process them).
func (c *consumer) held() int64 { return c.fc.delivers.Load() - c.settled.Load() }

// flush makes a round trip on the consumer's channel (basic.qos with the
// same prefetch): the broker answers after the deliveries it had sent on
// the channel before, so once it returns they have been read and counted.
// A closed channel has nothing more to read (Backlog ignores the error).
func (c *consumer) flush() error {
	c.rpcMu.Lock()
	defer c.rpcMu.Unlock()
	return c.ch.Qos(c.prefetch, 0, false)
}

// Abandon drops the TCP connection without a word, as a killed process
// would: nothing more is acked and the broker requeues what this consumer
// had not acked. It does not wait on the broker.
func (c *consumer) Abandon() {
	c.once.Do(func() {
		c.d.leave(c)
		_ = c.fc.Conn.Close()
		c.waitClosed(closeWait)
	})
}

// Close stops the consumer cleanly (connection.close); the broker requeues
// what it had not acked.
func (c *consumer) Close(ctx context.Context) {
	c.once.Do(func() {
		c.d.leave(c)
		closeConn(ctx, c.conn)
		if !c.conn.IsClosed() {
			_ = c.fc.Conn.Close()
		}
		c.waitClosed(closeWait)
	})
}

// waitClosed waits until amqp091 has noticed the closed connection (its
// goroutines end then).
func (c *consumer) waitClosed(limit time.Duration) {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-c.closed:
	case <-t.C:
	}
}

// frameCounter counts the basic.deliver frames read from a connection, as
// they are read: amqp091 buffers deliveries before a consumer takes them,
// so counting in Next would miss what sits in that buffer.
//
// An AMQP frame is type (1 byte), channel (2), payload size (4), payload,
// 0xCE; a method frame's payload starts with class and method ids (2 + 2);
// basic.deliver is 60/60.
type frameCounter struct {
	net.Conn
	delivers atomic.Int64

	head [11]byte // frame header plus class and method ids
	n    int      // bytes of head filled
	skip int      // bytes left of the current frame
}

func (f *frameCounter) Read(p []byte) (int, error) {
	n, err := f.Conn.Read(p)
	f.scan(p[:n])
	return n, err
}

func (f *frameCounter) scan(b []byte) {
	for len(b) > 0 {
		if f.skip > 0 {
			k := min(f.skip, len(b))
			f.skip -= k
			b = b[k:]
			continue
		}
		need := 7
		if f.n >= 7 && f.head[0] == 1 { // a method frame: read its ids too
			need = 11
		}
		k := copy(f.head[f.n:need], b)
		f.n += k
		b = b[k:]
		if f.n < need || (need == 7 && f.head[0] == 1) {
			continue
		}
		size := int(binary.BigEndian.Uint32(f.head[3:7]))
		if need == 11 && binary.BigEndian.Uint16(f.head[7:9]) == 60 && binary.BigEndian.Uint16(f.head[9:11]) == 60 {
			f.delivers.Add(1)
		}
		f.skip = size - (f.n - 7) + 1 // the rest of the payload and the end byte
		f.n = 0
	}
}

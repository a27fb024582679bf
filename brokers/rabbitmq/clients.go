package rabbitmq

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/netfault"
	amqpfault "github.com/dqbench/dqbench/netfault/amqp"
)

// errUnknownOutcome: the channel or connection closed before the broker
// confirmed or nacked a publish, which it may or may not have stored.
var errUnknownOutcome = errors.New("channel closed before the publisher confirm: outcome unknown")

// abandonFlushWait bounds Abandon's round trip for the acks written
// before it.
const abandonFlushWait = time.Second

// closeWait bounds a clean connection close (connection.close-ok) and the
// wait for the client's goroutines to end after a connection is dropped.
const closeWait = 5 * time.Second

// Producer publishes persistent messages on a channel in confirm mode, at
// most spec.Window unconfirmed at once (amqp091's deferred confirmations),
// through its own proxy; or transient messages (persistent: false), or
// without confirms (confirms: false: each publish is done once written,
// with brokers.ErrUnconfirmed).
func (d *queueDest) Producer(ctx context.Context) (brokers.Producer, error) {
	p := &producer{d: d, id: fmt.Sprintf("p%d", d.r.seq.Add(1))}
	conn, px, err := d.r.dialProxied(ctx, d.queue+"-"+p.id, p.setup, nil)
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err == nil && d.confirms {
		err = ch.Confirm(false)
	}
	if err != nil {
		conn.Close()
		_ = px.Close(ctx)
		return nil, fmt.Errorf("rabbitmq producer on %s: %w", d.r.masked, err)
	}
	p.conn, p.ch, p.px = conn, ch, px
	p.window = make(chan struct{}, max(d.spec.Window, 1))
	p.stop = make(chan struct{})
	return p, nil
}

// setup installs the producer's toxics on a new proxy: with confirm-lost
// armed, the filter that loses the chosen confirms, with a fresh table
// (each connection's channel numbers its publishes from 1).
func (p *producer) setup(px *netfault.Proxy) error {
	p.tags = nil
	if lose := p.d.confirmLost; lose != nil {
		p.tags = new(amqpfault.Tags)
		if err := px.AddFilter("confirm-lost", netfault.Downstream, amqpfault.LoseConfirms(p.tags, lose.fires, lose.lost)); err != nil {
			return err
		}
	}
	p.cutTags = nil
	for i, c := range p.d.producerCuts {
		tags := new(amqpfault.Tags)
		p.cutTags = append(p.cutTags, tags)
		if c.latency > 0 {
			hit := func(intent, attempt int) {
				c.cut(intent, attempt)
				// Not from inside the proxy's own filter.
				go p.slow(px, c.latency, c.after)
			}
			if err := px.AddFilter(fmt.Sprintf("producer-slow-%d", i), netfault.Downstream, amqpfault.WatchConfirms(tags, c.fires, hit)); err != nil {
				return err
			}
			continue
		}
		dark := new(atomic.Bool)
		hit := func(intent, attempt int) {
			c.cut(intent, attempt)
			if c.after > 0 {
				// A partition: dark both ways until the connection
				// closes, as a client's TCP eventually gives up.
				time.AfterFunc(c.after, func() { p.disable(px) })
			}
		}
		if err := px.AddFilter(fmt.Sprintf("producer-cut-%d", i), netfault.Downstream, amqpfault.CutOnConfirm(tags, c.fires, hit, c.after == 0, dark)); err != nil {
			return err
		}
		if err := px.AddFilter(fmt.Sprintf("producer-dark-%d", i), netfault.Upstream, amqpfault.Dark(dark)); err != nil {
			return err
		}
	}
	return nil
}

type producer struct {
	d    *queueDest
	px   *netfault.Proxy
	conn *amqp.Connection
	ch   *amqp.Channel
	id   string          // names this producer's publishes in the copy header
	tags *amqpfault.Tags // which publish sequence number carries which intent, for confirm-lost
	// cutTags are the same for each network fault on the producer's
	// connection.
	cutTags []*amqpfault.Tags
	// pxMu orders a partition's end (disable) before or after the proxy's
	// deletion (closeProxy), never during it.
	pxMu   sync.Mutex
	pxGone map[*netfault.Proxy]bool
	slowed map[*netfault.Proxy]bool // a latency on it not over yet
	// unconfirmed numbers the publishes of a producer without confirms
	// (the channel's sequence numbers count only in confirm mode).
	unconfirmed uint64

	window  chan struct{}  // a slot per unconfirmed publish not given up
	stop    chan struct{}  // closed by Close: no more publishes
	waiting sync.WaitGroup // a goroutine per unconfirmed publish

	mu      sync.Mutex // publish order = sequence numbers; guards closing
	closing bool
	once    sync.Once

	// givenUp has an entry per publish between Publish and its outcome,
	// closed when the application gives it up (GiveUp).
	givenUpMu sync.Mutex
	givenUp   map[attemptKey]chan struct{}
}

// attemptKey names one publish: an intent's attempt.
type attemptKey struct{ intent, attempt int }

var (
	_ brokers.Producer  = (*producer)(nil)
	_ brokers.GiveUpper = (*producer)(nil)
)

func (p *producer) Publish(ctx context.Context, m brokers.Message, done func(error)) {
	k := attemptKey{m.Intent, m.Attempt}
	givenUp := p.track(k)
	fail := func(err error) {
		p.forget(k)
		done(err)
	}
	select {
	case p.window <- struct{}{}:
	case <-ctx.Done():
		fail(ctx.Err())
		return
	case <-p.stop:
		fail(errors.New("rabbitmq producer closed"))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		<-p.window
		fail(errors.New("rabbitmq producer closed"))
		return
	}
	if p.ch.IsClosed() {
		// Its node died (a managed cluster's failover): what was
		// unconfirmed on it ends as unknown; go on on a survivor.
		if err := p.reconnect(ctx); err != nil {
			<-p.window
			fail(fmt.Errorf("publish intent %d to %s: %w (outcome unknown)", m.Intent, p.d.queue, err))
			return
		}
	}
	// One basic.publish is one stored copy in the queue (RabbitMQ keeps
	// no producer-side dedup), so the publish's sequence number on this
	// producer's channel names the copy; a consumer reports it as the
	// delivery's Position.
	if hook := p.d.onPublish; hook != nil {
		if written := hook(ctx, m.Intent, m.Attempt, p.awaitConfirms); written != nil {
			defer written()
		}
	}
	seq := p.ch.GetNextPublishSeqNo()
	copyID := fmt.Sprintf("%s#%d", p.id, seq)
	if p.tags != nil {
		p.tags.Put(seq, m.Intent, m.Attempt)
	}
	for _, t := range p.cutTags {
		t.Put(seq, m.Intent, m.Attempt)
	}
	mode := amqp.Persistent
	if !p.d.persistent {
		mode = amqp.Transient
	}
	msg := amqp.Publishing{
		DeliveryMode: mode,
		MessageId:    m.Key,
		Headers:      amqp.Table{copyHeader: copyID},
		Body:         m.Body,
	}
	if !p.d.confirms {
		// Fire and forget: written is all the producer ever learns. Without
		// confirm mode the channel numbers nothing, so the copy header
		// counts this producer's publishes itself.
		p.unconfirmed++
		msg.Headers = amqp.Table{copyHeader: fmt.Sprintf("%s#%d", p.id, p.unconfirmed)}
		err := p.ch.PublishWithContext(ctx, "", p.d.queue, false, false, msg)
		<-p.window
		if err != nil {
			fail(fmt.Errorf("publish intent %d to %s: %w (outcome unknown)", m.Intent, p.d.queue, err))
			return
		}
		fail(brokers.ErrUnconfirmed)
		return
	}
	dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, "", p.d.queue, false, false, msg)
	if err != nil {
		<-p.window
		fail(fmt.Errorf("publish intent %d to %s: %w (outcome unknown)", m.Intent, p.d.queue, err))
		return
	}
	p.waiting.Add(1)
	go p.confirm(p.ch, dc, k, givenUp, done)
}

// confirm calls a publish's done once the broker answered it: nil for
// basic.ack, an error for basic.nack (the broker refused it),
// errUnknownOutcome when the channel closed first (amqp091 then marks
// every outstanding confirmation as not acked). Each publish waits on its
// own, so a confirm that never comes holds up no other; and its window
// slot is freed when the application gives it up (GiveUp), so it does not
// hold up the next publishes either.
func (p *producer) confirm(ch *amqp.Channel, dc *amqp.DeferredConfirmation, k attemptKey, givenUp <-chan struct{}, done func(error)) {
	defer p.waiting.Done()
	slot := true // it holds a window slot
	select {
	case <-dc.Done():
	case <-givenUp:
		<-p.window
		slot = false
		<-dc.Done() // a late answer is still reported; Close ends the wait
	}
	p.forget(k)
	var err error
	if !dc.Acked() {
		if ch.IsClosed() {
			err = errUnknownOutcome
		} else {
			err = fmt.Errorf("%w: broker nacked the publish to %s (basic.nack)", brokers.ErrRefused, p.d.queue)
		}
	}
	if slot {
		<-p.window
	}
	done(err)
}

// awaitConfirms waits until the broker has answered every publish sent so
// far (within ctx).
func (p *producer) awaitConfirms(ctx context.Context) {
	answered := make(chan struct{})
	go func() { p.waiting.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-ctx.Done():
	}
}

// GiveUp frees the window slot of intent's attempt: the application gave
// the publish up (producer.confirm_timeout), so its slot goes to the next
// publish, as after any other unknown outcome. Its done still comes when
// the broker answers or Close ends it. Given before the publish took its
// slot, the publish frees it as soon as it is sent.
func (p *producer) GiveUp(intent, attempt int) {
	p.givenUpMu.Lock()
	defer p.givenUpMu.Unlock()
	if ch, ok := p.givenUp[attemptKey{intent, attempt}]; ok {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

// track notes a publish of k until its outcome; the channel closes when
// the application gives it up.
func (p *producer) track(k attemptKey) chan struct{} {
	p.givenUpMu.Lock()
	defer p.givenUpMu.Unlock()
	if p.givenUp == nil {
		p.givenUp = map[attemptKey]chan struct{}{}
	}
	ch := make(chan struct{})
	p.givenUp[k] = ch
	return ch
}

// forget ends tracking k: it has its outcome.
func (p *producer) forget(k attemptKey) {
	p.givenUpMu.Lock()
	defer p.givenUpMu.Unlock()
	delete(p.givenUp, k)
}

// lateConfirmWait bounds how long Close waits for outstanding confirms.
// The pipeline closes a producer once every intent has an outcome, so what
// is still outstanding then is a publish the application gave up on (no
// confirm within producer.confirm_timeout): a late confirm is recorded if
// it comes by then, and a lost one does not hold the run up.
const lateConfirmWait = time.Second

// Close waits for the outstanding confirms within ctx and lateConfirmWait,
// then closes the connection, which ends whatever is still unconfirmed as
// unknown, and deletes the producer's proxy.
func (p *producer) Close(ctx context.Context) {
	p.once.Do(func() {
		close(p.stop)
		p.mu.Lock()
		p.closing = true
		p.mu.Unlock()
		confirmed := make(chan struct{})
		go func() { p.waiting.Wait(); close(confirmed) }()
		late := time.NewTimer(lateConfirmWait)
		defer late.Stop()
		select {
		case <-confirmed:
		case <-late.C:
		case <-ctx.Done():
		}
		p.mu.Lock()
		conn, px := p.conn, p.px
		p.mu.Unlock()
		closeConn(ctx, conn)
		<-confirmed
		p.closeProxy(context.WithoutCancel(ctx), px)
	})
}

// disable disables px, which closes the connection through it (the end of
// a partition on the producer's connection), unless it is closed already.
func (p *producer) disable(px *netfault.Proxy) {
	p.pxMu.Lock()
	defer p.pxMu.Unlock()
	if !p.pxGone[px] {
		_ = px.Disable() // fails only when the proxy is gone
	}
}

// slow adds toxiproxy's latency toxic to both directions of px for d (a
// latency on the producer's connection), unless px is slowed already or
// gone.
func (p *producer) slow(px *netfault.Proxy, latency, d time.Duration) {
	p.pxMu.Lock()
	defer p.pxMu.Unlock()
	if p.pxGone[px] || p.slowed[px] {
		return
	}
	names := []string{"producer-latency-upstream", "producer-latency-downstream"}
	for i, s := range []netfault.Stream{netfault.Upstream, netfault.Downstream} {
		if err := px.Add(netfault.Toxic{Name: names[i], Type: "latency", Stream: s, Attributes: map[string]any{"latency": latency.Milliseconds()}}); err != nil {
			return // the proxy is going
		}
	}
	if p.slowed == nil {
		p.slowed = map[*netfault.Proxy]bool{}
	}
	p.slowed[px] = true
	time.AfterFunc(d, func() {
		p.pxMu.Lock()
		defer p.pxMu.Unlock()
		delete(p.slowed, px)
		if !p.pxGone[px] {
			for _, name := range names {
				_ = px.Remove(name)
			}
		}
	})
}

// closeProxy deletes px; a partition's end that comes later leaves it be.
func (p *producer) closeProxy(ctx context.Context, px *netfault.Proxy) {
	p.pxMu.Lock()
	if p.pxGone == nil {
		p.pxGone = map[*netfault.Proxy]bool{}
	}
	p.pxGone[px] = true
	p.pxMu.Unlock()
	_ = px.Close(ctx)
}

// closeConn closes conn cleanly, within ctx and closeWait.
func closeConn(ctx context.Context, conn *amqp.Connection) {
	deadline := time.Now().Add(closeWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.CloseDeadline(deadline)
}

// Consumer starts a consumer on its own connection, through its own
// proxy: basic.qos(prefetch) and manual acks.
func (d *queueDest) Consumer(ctx context.Context, gen int) (brokers.Consumer, error) {
	c := &consumer{d: d, gen: gen, prefetch: max(d.spec.Prefetch, 1), autoAck: d.spec.AutoAck}
	setup := func(px *netfault.Proxy) error {
		if d.ackLost == nil || c.autoAck {
			return nil
		}
		c.tags = new(amqpfault.Tags)
		c.acked = make(chan struct{}, 1)
		return px.AddFilter("ack-lost", netfault.Upstream, amqpfault.LoseAcks(c.tags, d.ackLost.fires, d.ackLost.lost))
	}
	conn, px, err := d.r.dialProxied(ctx, fmt.Sprintf("%s-c%d", d.queue, gen), setup, func(nc net.Conn) net.Conn {
		c.fc = &frameCounter{Conn: nc}
		return c.fc
	})
	if err != nil {
		return nil, err
	}
	c.px = px
	c.conn = conn
	c.closed = conn.NotifyClose(make(chan *amqp.Error, 1))
	c.ch, err = conn.Channel()
	if err == nil {
		err = c.ch.Qos(c.prefetch, 0, false)
	}
	if err != nil {
		closeConn(ctx, conn)
		_ = px.Close(ctx)
		return nil, fmt.Errorf("rabbitmq consumer %d on %s: %w", gen, d.queue, err)
	}
	// Counted before basic.consume: the broker may deliver before
	// consume-ok reaches us, and Backlog must see those deliveries.
	// One call at a time on a channel: Backlog's flush may come meanwhile.
	d.join(c)
	c.tag = fmt.Sprintf("%s-consumer-%d", d.queue, gen)
	c.rpcMu.Lock()
	c.deliveries, err = c.ch.ConsumeWithContext(ctx, d.queue, c.tag, c.autoAck, false, false, false, nil)
	c.rpcMu.Unlock()
	if err != nil {
		d.leave(c)
		closeConn(ctx, conn)
		_ = px.Close(ctx)
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
	px         *netfault.Proxy
	fc         *frameCounter
	conn       *amqp.Connection
	ch         *amqp.Channel
	deliveries <-chan amqp.Delivery
	tag        string // the consumer tag of basic.consume
	closed     chan *amqp.Error

	consuming bool // consume-ok received (guarded by d.mu)

	settled   atomic.Int64 // deliveries acked
	unflushed atomic.Bool  // an ack was written since the last round trip
	// partitioned: cut off from the broker (Partition); acks are lost.
	partitioned  atomic.Bool
	partitionMu  sync.Mutex  // one Partition at a time
	partitionEnd *time.Timer // ends a Partition: closes the connection
	proxyGoing   bool        // stopTimers was called (guarded by partitionMu)
	slowMu       sync.Mutex
	slowTimer    *time.Timer // ends a Slow
	rpcMu        sync.Mutex  // amqp091 matches a channel's replies to one call at a time
	once         sync.Once

	// With ack-lost armed: which delivery tag carries which intent, for
	// the filter; and one delivery at a time (see Next).
	tags      *amqpfault.Tags
	handedOut atomic.Int64  // deliveries Next returned
	answered  atomic.Int64  // of those, acked (or found unackable)
	acked     chan struct{} // a signal per answered delivery
	broken    atomic.Bool   // an ack's round trip failed: the connection is gone
}

var _ brokers.Consumer = (*consumer)(nil)

func (c *consumer) Next(ctx context.Context) (brokers.Delivery, error) {
	if err := c.awaitAcks(ctx); err != nil {
		return brokers.Delivery{}, err
	}
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
	c.handedOut.Add(1)
	return brokers.Delivery{
		Intent: intent, Body: m.Body, Position: pos, Tag: strconv.FormatUint(m.DeliveryTag, 10), Redelivered: m.Redelivered, Handle: m.DeliveryTag,
		Deaths: deaths(m.Headers),
	}, nil
}

// deaths sums the counts of a message's x-death header: how many times
// the broker dead-lettered it, from any queue for any reason.
func deaths(h amqp.Table) int {
	list, _ := h["x-death"].([]any)
	n := 0
	for _, e := range list {
		t, _ := e.(amqp.Table)
		switch c := t["count"].(type) {
		case int64:
			n += int(c)
		case int32:
			n += int(c)
		case int:
			n += c
		}
	}
	return n
}

// Ack acknowledges d; the broker has it by the time anything depends on
// it. AMQP 0-9-1 has no answer to basic.ack, so a round trip on the same
// channel (basic.qos, unchanged) tells when the broker has applied it: it
// handles a channel's frames in order, so its qos-ok means every ack
// written before was applied. Only writing the ack is not enough before a
// crash: a consumer killed right after it (Abandon drops the socket with
// deliveries still unread, so the kernel sends a reset) can lose acks the
// broker had not read yet, and the broker would redeliver messages whose
// ack the consumer believed done. So the round trip is made where it
// matters, not after every ack (it would cost most of the throughput):
// Abandon makes it before dropping the socket, Backlog makes it anyway,
// and with ack-lost armed every Ack makes it (awaitAcks needs each ack's
// fate before the next delivery).
//
// When the connection breaks after the ack was written and before the
// round trip's answer, the consumer cannot know whether the broker got the
// ack; like any AMQP client it has written it, so Ack reports it done (the
// history shows the ack, and the broker's redelivery if it was lost), but
// Backlog goes on counting the delivery as held until the broker drops the
// consumer and requeues what it had.
func (c *consumer) Ack(ctx context.Context, d brokers.Delivery) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.autoAck {
		return nil // the broker counted it acked when it sent it
	}
	defer c.answer()
	tag := d.Handle.(uint64)
	if c.tags != nil {
		c.tags.Put(tag, d.Intent, d.Attempt)
	}
	if err := c.ch.Ack(tag, false); err != nil {
		return fmt.Errorf("ack intent %d on %s: %w", d.Intent, c.d.queue, err)
	}
	if c.partitioned.Load() {
		return nil // written into the partition: the broker never gets it
	}
	if c.acked == nil {
		c.settled.Add(1)
		c.unflushed.Store(true)
		return nil
	}
	if err := c.flush(); err != nil {
		c.broken.Store(true)
		return nil
	}
	c.settled.Add(1)
	return nil
}

// Nack hands d back as failed: requeued (basic.nack with requeue) or
// refused for good (basic.reject), when the queue dead-letters it. Like
// Ack, it returns once the broker has processed it.
func (c *consumer) Nack(ctx context.Context, d brokers.Delivery, requeue bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.autoAck {
		return nil // the broker forgot it when it sent it
	}
	defer c.answer()
	tag := d.Handle.(uint64)
	var err error
	if requeue {
		err = c.ch.Nack(tag, false, true)
	} else {
		err = c.ch.Reject(tag, false)
	}
	if err != nil {
		return fmt.Errorf("nack intent %d on %s: %w", d.Intent, c.d.queue, err)
	}
	if err := c.flush(); err != nil {
		c.broken.Store(true)
		return nil
	}
	c.settled.Add(1) // no longer held: requeued (ready again) or gone
	return nil
}

var _ brokers.Powered = (*consumer)(nil)

// Apply acts on the consumer's connection, through its proxy: a reset, a
// partition, latency; or makes the round trip that applies its acks.
func (c *consumer) Apply(ctx context.Context, p brokers.Power) error {
	switch p := p.(type) {
	case brokers.ResetConnection:
		return c.resetConnection(ctx)
	case brokers.Partition:
		return c.partition(ctx, p.For)
	case brokers.Slow:
		return c.slow(ctx, p.Latency, p.For)
	case brokers.SyncAcks:
		return c.syncAcks(ctx)
	}
	return brokers.NoPower(p)
}

// resetConnection adds toxiproxy's reset_peer toxic to the consumer's
// proxy and makes a round trip on the channel, whose first bytes trigger
// it: the proxy resets both sides of the connection. The acks Ack returned
// for reach the broker first (see Ack), so the reset hits exactly what the
// consumer had not acked.
func (c *consumer) resetConnection(ctx context.Context) error {
	if err := c.flush(); err != nil {
		return fmt.Errorf("rabbitmq consumer %d on %s: %w", c.gen, c.d.queue, err)
	}
	if err := c.px.Add(netfault.Toxic{Name: "connection-reset", Type: "reset_peer", Stream: netfault.Upstream, Attributes: map[string]any{"timeout": 0}}); err != nil {
		return err
	}
	if err := c.flush(); err == nil {
		return fmt.Errorf("rabbitmq consumer %d on %s: the connection outlived its reset", c.gen, c.d.queue)
	}
	c.waitClosed(closeWait)
	return nil
}

// partition adds toxiproxy's timeout toxic to both directions of the
// consumer's proxy, which drops all data, and disables the proxy after d,
// which closes the connection (as a client's TCP eventually gives up). The
// acks Ack returned for reach the broker first; the ones written during
// the partition are lost, so they are not counted settled (Backlog goes on
// counting those deliveries as held).
//
// A partition of a consumer partitioned already (it goes on handling what
// it had read before the cut) extends it: the connection closes d from
// now. There is nothing to flush then: no round trip crosses a partition
// (it would wait for the close, or fail on it). The close is dqbench's own
// timer rather than the toxic's timeout, so that extending it changes no
// toxic that toxiproxy is running.
func (c *consumer) partition(ctx context.Context, d time.Duration) error {
	c.partitionMu.Lock()
	defer c.partitionMu.Unlock()
	if c.partitionEnd != nil {
		c.partitionEnd.Reset(d)
		return nil
	}
	if err := c.flush(); err != nil {
		return fmt.Errorf("rabbitmq consumer %d on %s: %w", c.gen, c.d.queue, err)
	}
	c.partitioned.Store(true)
	for _, s := range []netfault.Stream{netfault.Upstream, netfault.Downstream} {
		if err := c.px.Add(netfault.Toxic{Name: "partition-" + string(s), Type: "timeout", Stream: s, Attributes: map[string]any{"timeout": 0}}); err != nil {
			return err
		}
	}
	c.partitionEnd = time.AfterFunc(d, func() {
		c.partitionMu.Lock()
		defer c.partitionMu.Unlock()
		if !c.proxyGoing {
			_ = c.px.Disable() // fails only when the proxy is gone
		}
	})
	return nil
}

// slow adds toxiproxy's latency toxic to both directions of the consumer's
// proxy and removes it after d (unless the consumer is gone by then). A
// consumer slowed already stays as it is.
func (c *consumer) slow(ctx context.Context, latency, d time.Duration) error {
	c.slowMu.Lock()
	defer c.slowMu.Unlock()
	if c.slowTimer != nil {
		return nil
	}
	names := []string{"latency-upstream", "latency-downstream"}
	for i, s := range []netfault.Stream{netfault.Upstream, netfault.Downstream} {
		if err := c.px.Add(netfault.Toxic{Name: names[i], Type: "latency", Stream: s, Attributes: map[string]any{"latency": latency.Milliseconds()}}); err != nil {
			return err
		}
	}
	c.slowTimer = time.AfterFunc(d, func() {
		c.slowMu.Lock()
		defer c.slowMu.Unlock()
		for _, name := range names {
			_ = c.px.Remove(name) // fails only when the proxy is gone
		}
		c.slowTimer = nil
	})
	return nil
}

// stopTimers cancels a pending end of Slow or Partition: the proxy is
// about to go.
func (c *consumer) stopTimers() {
	c.slowMu.Lock()
	if c.slowTimer != nil {
		c.slowTimer.Stop()
	}
	c.slowMu.Unlock()
	c.partitionMu.Lock()
	c.proxyGoing = true
	if c.partitionEnd != nil {
		c.partitionEnd.Stop()
	}
	c.partitionMu.Unlock()
}

// syncAcks makes the round trip that tells the broker has applied every
// ack written so far (see Ack), when one was written since the last.
func (c *consumer) syncAcks(ctx context.Context) error {
	if !c.unflushed.Load() {
		return nil
	}
	return c.flush()
}

// answer notes that a delivery Next handed out was acked or found
// unackable (see awaitAcks).
func (c *consumer) answer() {
	if c.acked == nil {
		return
	}
	c.answered.Add(1)
	select {
	case c.acked <- struct{}{}:
	default:
	}
}

// awaitAcks, with ack-lost armed, holds the next delivery back until every
// delivery handed out was acked, and fails once an ack's round trip found
// the connection broken. The consumer loop acks a delivery while it
// handles the next; without this, the next delivery's effect could apply
// (or not) before the break is seen, depending on timing, and the same
// seed would not give the same counts.
func (c *consumer) awaitAcks(ctx context.Context) error {
	if c.acked == nil {
		return nil
	}
	for c.answered.Load() < c.handedOut.Load() {
		select {
		case <-c.acked:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c.broken.Load() {
		return fmt.Errorf("rabbitmq consumer %d on %s: the connection broke after an ack", c.gen, c.d.queue)
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
	c.unflushed.Store(false)
	return c.ch.Qos(c.prefetch, 0, false)
}

// Abandon drops the TCP connection without a word, as a killed process
// would: nothing more is acked and the broker requeues what this consumer
// had not acked. First it makes sure the broker has the acks Ack returned
// for (see Ack), waiting at most abandonFlushWait: it does not wait on a
// broker that stopped answering.
func (c *consumer) Abandon() {
	c.once.Do(func() {
		if c.unflushed.Load() {
			flushed := make(chan struct{})
			go func() { _ = c.flush(); close(flushed) }()
			t := time.NewTimer(abandonFlushWait)
			select {
			case <-flushed:
			case <-t.C:
			}
			t.Stop()
		}
		c.d.leave(c)
		_ = c.fc.Conn.Close()
		c.waitClosed(closeWait)
		c.stopTimers()
		_ = c.px.Close(context.Background())
	})
}

var _ brokers.Dropper = (*consumer)(nil)

// AbandonDropping is Abandon. With autoAck it first takes every message
// the broker had sent this consumer and amqp091 had not handed out (the
// broker forgot each as it sent it; amqp091 drops its buffer with the
// connection) and returns those intents: lost in the consumer. It cancels
// the consumer (basic.cancel) and reads the deliveries until amqp091 ends
// them after cancel-ok, which the broker sends after every delivery it
// made to this consumer: what was on the wire is read too. The broker
// stops sending at the cancel, as it would at the crash's closed
// connection. With manual acks there is nothing to take: the broker keeps
// what it sent until an ack and delivers it again.
func (c *consumer) AbandonDropping() []int {
	var dropped []int
	if c.autoAck {
		dropped = c.unread()
	}
	c.Abandon()
	return dropped
}

// unreadWait bounds unread: a connection already broken gets no
// cancel-ok, and what it held is gone anyway.
const unreadWait = 2 * time.Second

// unread cancels the consumer and takes its deliveries until amqp091 ends
// them (or unreadWait passes).
func (c *consumer) unread() []int {
	go func() {
		c.rpcMu.Lock()
		defer c.rpcMu.Unlock()
		_ = c.ch.Cancel(c.tag, false) // an error: the connection is gone, its buffer with it
	}()
	limit := time.NewTimer(unreadWait)
	defer limit.Stop()
	var out []int
	for {
		select {
		case m, ok := <-c.deliveries:
			if !ok {
				return out
			}
			if id, err := brokers.ParseKey(m.MessageId); err == nil {
				out = append(out, id)
			}
		case <-limit.C:
			return out
		}
	}
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
		c.stopTimers()
		_ = c.px.Close(context.WithoutCancel(ctx))
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

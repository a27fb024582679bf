package mqtt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pahomqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/dqbench/dqbench/brokers"
)

// paho is eclipse/paho.mqtt.golang (MQTT 3.1.1). Both sessions keep their
// client state in the destination's session stores, so it survives a
// client restart as the session does on the broker.
type paho struct{}

func (paho) options(d *dest, id string, store *sessionStore) *pahomqtt.ClientOptions {
	return pahomqtt.NewClientOptions().
		AddBroker(d.urlFor(id)).
		SetClientID(id).
		SetCleanSession(d.clean).
		SetStore(store.view()).
		SetKeepAlive(30 * time.Second).
		SetWriteTimeout(10 * time.Second).
		SetOrderMatters(true).
		SetAutoReconnect(false) // the producer turns it on; a consumer is replaced instead
}

// wait waits for a paho token within ctx.
func wait(ctx context.Context, t pahomqtt.Token, what string) error {
	select {
	case <-t.Done():
		if err := t.Error(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

func (p paho) connect(ctx context.Context, d *dest, opts *pahomqtt.ClientOptions) (pahomqtt.Client, error) {
	cl, _, err := p.connectSession(ctx, d, opts)
	return cl, err
}

// connectSession is connect, also saying whether the broker had the
// session. The connect ends with ctx (see pahoConnect).
func (p paho) connectSession(ctx context.Context, d *dest, opts *pahomqtt.ClientOptions) (pahomqtt.Client, bool, error) {
	cl, present, err := pahoConnect(ctx, d.url, d.b.sec, opts)
	if err != nil {
		d.noteSilent(err)
	}
	return cl, present, err
}

func (p paho) subscribe(ctx context.Context, d *dest, s *subSession) error {
	cl, err := p.connect(ctx, d, p.options(d, s.id, s.store).SetAutoAckDisabled(true))
	if err != nil {
		return err
	}
	defer cl.Disconnect(100)
	return wait(ctx, cl.Subscribe(d.filter, d.subQoS, nil), "subscribe to "+d.filter)
}

func (p paho) producer(ctx context.Context, d *dest) (brokers.Producer, error) {
	opts := p.options(d, d.pubID, d.pubStore).
		SetAutoReconnect(true).
		// Set deliberately: paho's backoff doubles for connections lost
		// within 3s of each other, up to 10 minutes by default, which
		// under repeated faults looks like a stalled publisher.
		SetMaxReconnectInterval(20 * time.Millisecond)
	cl, err := p.connect(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	return &pahoProducer{d: d, cl: cl, closing: make(chan struct{})}, nil
}

// pahoProducer publishes with paho's own retries: a QoS 1 or 2 publish
// stays in its store until acknowledged and is resent on every reconnect.
type pahoProducer struct {
	d       *dest
	cl      pahomqtt.Client
	wg      sync.WaitGroup
	closing chan struct{}
}

var _ brokers.Producer = (*pahoProducer)(nil)

func (p *pahoProducer) Publish(ctx context.Context, m brokers.Message, done func(error)) {
	t := p.cl.Publish(p.d.topicOf(m.Intent), p.d.pubQoS, p.d.retain, m.Body)
	p.wg.Go(func() {
		select {
		case <-t.Done():
			err := t.Error()
			if err == nil {
				p.d.confirm()
			}
			defer func() {
				if err == nil && p.d.pubQoS > 0 {
					p.d.confirmedIntent(m.Intent)
				}
			}()
			if err == nil && p.d.pubQoS == 0 {
				p.d.qos0Seen() // sent, maybe not yet read by the broker
				err = brokers.ErrUnconfirmed
			}
			done(err)
		case <-p.closing:
			done(errProducerClosed)
		}
	})
}

var errProducerClosed = errors.New("mqtt producer closed before the broker confirmed")

func (p *pahoProducer) Close(ctx context.Context) {
	all := make(chan struct{})
	go func() { p.wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-ctx.Done():
	}
	close(p.closing)
	<-all
	p.settle(ctx)
	p.cl.Disconnect(50)
}

// settle waits, within ctx and settleLimit, until paho's store holds no
// publish of its own: at a reconnect paho completes the token of each
// publish it resumes (claimID ends the old token) before the broker has
// completed it, so after the last token the exchange of the last intent
// may still be under way (the PUBCOMP not yet sent, the PUBLISH not yet
// re-sent). Disconnecting then cut it short, and a fault chosen for it
// never fired (mqtt-client-qos2, seeds 27 and 44).
func (p *pahoProducer) settle(ctx context.Context) {
	limit := time.NewTimer(settleLimit)
	defer limit.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for p.d.pubStore.outbound() > 0 {
		select {
		case <-tick.C:
		case <-limit.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// settleLimit bounds settle: a resumed exchange takes a reconnect
// (paho's interval is at most 20 ms here) and three packets.
const settleLimit = 2 * time.Second

// consumerWriteTimeout bounds a consumer's packet writes and its wait to
// hand a packet to paho's writer.
const consumerWriteTimeout = 2 * time.Second

func (p paho) consumer(ctx context.Context, d *dest, s *subSession) (brokers.Consumer, error) {
	c := &pahoConsumer{d: d, s: s, in: newInbox(d, s)}
	opts := p.options(d, s.id, s.store).
		SetAutoAckDisabled(true).
		SetDefaultPublishHandler(c.receive).
		SetConnectionLostHandler(func(pahomqtt.Client, error) { c.in.markLost() }).
		// A broken connection can leave paho's status "connected" with
		// its workers gone: an Unsubscribe (the ack's round trip) then
		// waits the write timeout to hand its packet over. At 10 s that
		// outlasted the drain's 5 s without progress (mqtt-qos-levels on
		// Mosquitto, about 1 run in 100 under load, invalid); at 2 s the
		// ack fails, and the instance is replaced as after any broken
		// connection. Loopback writes take microseconds.
		SetWriteTimeout(consumerWriteTimeout)
	cl, present, err := p.connectSession(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	c.cl = cl
	// A session the broker kept has the subscription (subscribing again
	// would also collide in mochi-mqtt, which checks a SUBSCRIBE's packet
	// id against the ids of its own PUBLISHes in flight).
	if !present {
		if err := wait(ctx, cl.Subscribe(d.filter, d.subQoS, nil), "subscribe to "+d.filter); err != nil {
			cl.Disconnect(0)
			return nil, err
		}
	}
	d.markSubscribed(s)
	if d.state != nil {
		c.acks = make(chan pahomqtt.Message, 1024)
		go c.writeAcks()
	}
	return c, nil
}

// pahoConsumer is one consumer instance on one of the variant's sessions.
type pahoConsumer struct {
	d      *dest
	s      *subSession
	cl     pahomqtt.Client
	in     *inbox
	behind unsynced
	// acks, on the embedded broker, are the acks to write, in order, by
	// writeAcks: paho hands an ack to its outgoing goroutine through two
	// unbuffered channels, so Message.Ack waits until the ack before it
	// is written, and the consumer loop spent about a fifth of its time
	// there (the trace's sync profile of the MQTT row of make bench).
	// Where anything depends on an ack, Ack waits for the broker to
	// process it anyway; nil on other brokers (their Ack makes a round
	// trip after the ack, which must be written first).
	acks      chan pahomqtt.Message
	acksClose sync.Once
}

// writeAcks writes the queued acks in order until acks is closed.
func (c *pahoConsumer) writeAcks() {
	for m := range c.acks {
		m.Ack()
	}
}

// ack writes m's ack: queued for writeAcks on the embedded broker.
func (c *pahoConsumer) ack(m pahomqtt.Message) {
	if c.acks == nil {
		m.Ack()
		return
	}
	c.acks <- m
}

// stopAcks ends writeAcks once it has written what is queued (paho drops
// an ack it gets after the disconnect).
func (c *pahoConsumer) stopAcks() {
	if c.acks != nil {
		c.acksClose.Do(func() { close(c.acks) })
	}
}

var (
	_ brokers.Consumer = (*pahoConsumer)(nil)
	_ brokers.Powered  = (*pahoConsumer)(nil)
)

// receive runs in paho's router, in delivery order; it must not block.
func (c *pahoConsumer) receive(_ pahomqtt.Client, m pahomqtt.Message) {
	intent, err := c.d.intentOf(m.Topic())
	if err != nil {
		c.in.fail(err)
		return
	}
	c.in.push(received{intent: intent, body: m.Payload(), qos: m.Qos(), dup: m.Duplicate(), retained: m.Retained(), pid: m.MessageID(), handle: m})
}

func (c *pahoConsumer) Next(ctx context.Context) (brokers.Delivery, error) { return c.in.next(ctx) }

// Ack sends the PUBACK (QoS 1) or PUBREC (QoS 2) and returns once the
// broker has processed it and, at QoS 2, once the PUBREL, PUBCOMP exchange
// has ended or the connection is lost: the client hands over the next
// message only then (OneInFlight). On a quiet embedded destination at QoS
// 1 it returns once the PUBACK is written, as a plain client's does: no
// fault can lose it, and a crash point syncs it first (Apply).
func (c *pahoConsumer) Ack(ctx context.Context, del brokers.Delivery) error {
	m := del.Handle.(pahomqtt.Message)
	if m.Qos() == 0 {
		return nil
	}
	var processed, completed chan struct{}
	if c.d.state != nil {
		processed = c.d.state.awaitAck(c.s, m.MessageID())
		if m.Qos() == 2 {
			completed = c.d.state.awaitComplete(c.s, m.MessageID())
		} else if c.d.state.quiet() {
			c.ack(m)
			c.behind.last = processed
			c.d.state.lag(c.s, processed)
			return nil
		}
	}
	c.ack(m)
	if processed == nil {
		// MQTT does not answer an ack: a round trip on the same connection
		// (the broker handles a client's packets in order) says it has it.
		if err := c.barrier(ctx); err != nil {
			return err
		}
		c.d.ackedCopy(del.Position)
		if m.Qos() == 2 {
			// The PUBREL came before the barrier's answer, and the PUBCOMP
			// went out before this second one; a lost connection shows at
			// the next delivery.
			_ = c.barrier(ctx)
		}
		return nil
	}
	if err := waitAck(ctx, processed, c.in.lost); err != nil {
		return err
	}
	return waitComplete(ctx, completed, c.in.lost)
}

// Apply syncs the acks (brokers.SyncAcks) before a crash point's fault
// acts; it is the consumer's only power.
func (c *pahoConsumer) Apply(ctx context.Context, p brokers.Power) error {
	if _, ok := p.(brokers.SyncAcks); ok {
		return c.behind.sync(ctx, c.in.lost)
	}
	return brokers.NoPower(p)
}

func (c *pahoConsumer) barrier(ctx context.Context) error {
	return wait(ctx, c.cl.Unsubscribe(c.d.topic+"ack-barrier"), "ack round trip")
}

// OneInFlight: like paho's router with auto ack, the consumer hands over
// one message at a time.
func (c *pahoConsumer) OneInFlight() bool { return true }

// Abandon drops the connection without acking anything more.
func (c *pahoConsumer) Abandon() {
	_ = c.behind.sync(context.Background(), c.in.lost) // what it acked stays acked
	c.in.markLost()
	c.cl.Disconnect(0)
	c.stopAcks()
	c.d.release(c.s)
}

func (c *pahoConsumer) Close(ctx context.Context) {
	c.in.markLost()
	c.cl.Disconnect(50)
	c.stopAcks()
	c.d.release(c.s)
}

// unsynced is the last PUBACK a consumer wrote without waiting for the
// embedded broker to process it (Ack on a quiet destination). The broker
// processes a client's packets in order, so once it has processed this
// one it has every one before. Only the consumer loop's goroutine uses it.
type unsynced struct{ last chan struct{} }

// sync waits until the broker has processed the last PUBACK written, or
// the connection is lost (what the broker had not processed then, it
// delivers again, as after any lost connection).
func (u *unsynced) sync(ctx context.Context, lost <-chan struct{}) error {
	if u.last == nil {
		return nil
	}
	err := waitAck(ctx, u.last, lost)
	u.last = nil
	if errors.Is(err, errConnectionLost) {
		return nil
	}
	return err
}

package mqtt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/packets"
	pahov5 "github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session"
	"github.com/eclipse/paho.golang/paho/session/state"

	"github.com/dqbench/dqbench/brokers"
)

// pahoGolang is eclipse/paho.golang (MQTT 5). Its session state (the
// packet ids in flight, QoS 2 PUBREL and PUBREC state) is kept per
// destination in a state.State that every client instance of the session
// shares, so a reconnect or a restarted consumer resumes it; the publisher
// reconnects in a loop of its own, as autopaho does.
type pahoGolang struct{}

// sessionExpiry is the MQTT 5 session expiry of client id's persistent
// session (0: the session ends with the connection, like clean_session:
// true): the longest, or for a consumer session the scenario's
// session_expiry.
func (d *dest) sessionExpiry(id string) uint32 {
	switch {
	case d.clean:
		return 0
	case d.expiry > 0 && id != d.pubID:
		return uint32(d.expiry / time.Second)
	}
	return math.MaxUint32
}

// dialV5 connects one MQTT 5 client instance on session sess.
func (d *dest) dialV5(ctx context.Context, id string, sess *state.State, cfg pahov5.ClientConfig) (*pahov5.Client, error) {
	cl, _, err := d.dialV5Session(ctx, id, sess, cfg)
	return cl, err
}

// dialV5Session is dialV5, also saying whether the broker had the session.
// The TCP dial and the wait for CONNACK end with ctx, or after
// connectTimeout.
func (d *dest) dialV5Session(ctx context.Context, id string, sess *state.State, cfg pahov5.ClientConfig) (*pahov5.Client, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	h := newHandshake(d.url, d.b.sec)
	conn, err := h.dial(cctx, hostPort(d.urlFor(id)))
	if err != nil {
		return nil, false, h.fail(ctx, err)
	}
	cfg.ClientID = id
	cfg.Conn = packets.NewThreadSafeConn(conn)
	cfg.Session = sess
	cfg.PacketTimeout = time.Minute
	cl := pahov5.NewClient(cfg)
	expiry := d.sessionExpiry(id)
	sec := d.b.sec
	ca, err := cl.Connect(cctx, &pahov5.Connect{
		ClientID: id, CleanStart: d.clean, KeepAlive: 30,
		Properties: &pahov5.ConnectProperties{SessionExpiryInterval: &expiry},
		Username:   sec.user, UsernameFlag: sec.user != "",
		Password: []byte(sec.pass), PasswordFlag: sec.hasPass,
	})
	h.done()
	if err != nil {
		conn.Close()
		err = h.fail(ctx, v5Refusal(ca, err))
		d.noteSilent(err)
		return nil, false, err
	}
	return cl, ca.SessionPresent, nil
}

func (pahoGolang) subscribe(ctx context.Context, d *dest, s *subSession) error {
	cl, err := d.dialV5(ctx, s.id, s.v5, pahov5.ClientConfig{EnableManualAcknowledgment: true})
	if err != nil {
		return err
	}
	defer cl.Disconnect(&pahov5.Disconnect{ReasonCode: 0})
	_, err = cl.Subscribe(ctx, &pahov5.Subscribe{Subscriptions: []pahov5.SubscribeOptions{{Topic: d.filter, QoS: d.subQoS}}})
	if err != nil {
		return fmt.Errorf("subscribe to %s: %w", d.filter, err)
	}
	return nil
}

func (pahoGolang) producer(ctx context.Context, d *dest) (brokers.Producer, error) {
	p := &v5Producer{d: d, up: make(chan struct{}), closing: make(chan struct{})}
	cl, err := d.dialV5(ctx, d.pubID, d.pubSession(), pahov5.ClientConfig{})
	if err != nil {
		return nil, err
	}
	p.cl = cl
	close(p.up)
	p.loop.Go(p.reconnect)
	return p, nil
}

// v5Producer publishes on the current client instance; the session state
// resends what was not acknowledged when the next instance connects, and
// a publish waiting for its acknowledgement gets it from whichever
// instance receives it.
type v5Producer struct {
	d       *dest
	mu      sync.Mutex
	cl      *pahov5.Client
	up      chan struct{} // closed while cl is connected
	wg      sync.WaitGroup
	loop    sync.WaitGroup
	closing chan struct{}
	once    sync.Once
}

var _ brokers.Producer = (*v5Producer)(nil)

// reconnect replaces a client instance whose connection broke.
func (p *v5Producer) reconnect() {
	for {
		p.mu.Lock()
		cl := p.cl
		p.mu.Unlock()
		select {
		case <-cl.Done():
		case <-p.closing:
			return
		}
		p.mu.Lock()
		p.up = make(chan struct{})
		p.mu.Unlock()
		for {
			select {
			case <-p.closing:
				return
			case <-time.After(20 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			next, err := p.d.dialV5(ctx, p.d.pubID, p.d.pubSession(), pahov5.ClientConfig{})
			cancel()
			if err == nil {
				p.mu.Lock()
				p.cl = next
				close(p.up)
				p.mu.Unlock()
				break
			}
		}
	}
}

// current waits for a connected client instance.
func (p *v5Producer) current(ctx context.Context) (*pahov5.Client, error) {
	p.mu.Lock()
	up, cl := p.up, p.cl
	p.mu.Unlock()
	select {
	case <-up:
		return cl, nil
	case <-p.closing:
		return nil, errProducerClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *v5Producer) Publish(ctx context.Context, m brokers.Message, done func(error)) {
	p.wg.Go(func() {
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		go func() {
			select {
			case <-p.closing:
				cancel()
			case <-pctx.Done():
			}
		}()
		resp, err := p.publish(pctx, m)
		// Not refusals: 0x91 (packet identifier in use) answers a PUBLISH
		// resent while the broker still holds the first, and 0x92 (packet
		// identifier not found, only in a PUBCOMP) a PUBREL for an exchange
		// the broker had completed: it has the message either way, and
		// this attempt does not tell.
		unknown := resp != nil && (resp.ReasonCode == 0x91 || resp.ReasonCode == 0x92)
		if resp != nil && resp.ReasonCode >= 0x80 && !unknown {
			// PUBACK or PUBREC with an error reason code: the broker did
			// not take it (paho.golang returns no error for a PUBREC's).
			err = fmt.Errorf("%w: the broker answered reason code 0x%02x", brokers.ErrRefused, resp.ReasonCode)
		} else if unknown {
			err = fmt.Errorf("the broker answered reason code 0x%02x (packet identifier in use or not found: an earlier send of this message is or was in its hands): outcome unknown", resp.ReasonCode)
		}
		if err == nil {
			p.d.confirm()
			if p.d.pubQoS > 0 {
				defer p.d.confirmedIntent(m.Intent)
			}
		}
		if err == nil && p.d.pubQoS == 0 {
			p.d.qos0Seen()
			err = brokers.ErrUnconfirmed
		}
		if err != nil && pctx.Err() != nil {
			err = errProducerClosed
		}
		done(err)
	})
}

// stuckAfter is how long a publish may wait, once the client instance it
// went out on has gone, before the current instance is made to reconnect.
// A reconnect that resends it takes a few milliseconds on loopback; at 2 s,
// seed 3 of mqtt-client-qos2 waited out eight of these (17 s for a 2 s
// run), now 3 s, with the same counts for paho.golang.
const stuckAfter = 250 * time.Millisecond

// publish publishes m on the current client instance. A publish the
// session refused for want of a connection (the instance was going down:
// nothing stored, nothing sent) goes out again on the next instance; it is
// not a retry of the application's. A publish that went out on an instance
// already replaced is in the session but was written to a dead connection,
// and the session resends only at a connect: if it is still waiting
// stuckAfter after its instance went, the current instance is made to
// reconnect, so the session resends it. Without these, one fault breaking
// the connection right after another (seed 3 of mqtt-client-qos2) ended
// 277 publishes with "no connection available" in 3 ms and left the last
// one waiting until the run's deadline.
func (p *v5Producer) publish(ctx context.Context, m brokers.Message) (*pahov5.PublishResponse, error) {
	for {
		cl, err := p.current(ctx)
		if err != nil {
			return nil, err
		}
		finished := make(chan struct{})
		go p.unstick(cl, finished)
		resp, err := cl.Publish(ctx, &pahov5.Publish{QoS: p.d.pubQoS, Retain: p.d.retain, Topic: p.d.topicOf(m.Intent), Payload: m.Body})
		close(finished)
		if !errors.Is(err, session.ErrNoConnection) || ctx.Err() != nil {
			return resp, err
		}
		select {
		case <-cl.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(stuckAfter):
			_ = cl.Disconnect(&pahov5.Disconnect{ReasonCode: 0})
		}
	}
}

// unstick makes the current instance reconnect when a publish that went
// out on cl is still waiting stuckAfter after cl went.
func (p *v5Producer) unstick(cl *pahov5.Client, finished <-chan struct{}) {
	select {
	case <-cl.Done():
	case <-finished:
		return
	}
	select {
	case <-time.After(stuckAfter):
	case <-finished:
		return
	}
	p.mu.Lock()
	cur, up := p.cl, p.up
	p.mu.Unlock()
	select {
	case <-up:
		if cur != cl {
			_ = cur.Disconnect(&pahov5.Disconnect{ReasonCode: 0})
		}
	default: // a reconnect is under way: it resends
	}
}

func (p *v5Producer) Close(ctx context.Context) {
	all := make(chan struct{})
	go func() { p.wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-ctx.Done():
	}
	p.once.Do(func() { close(p.closing) })
	<-all
	p.loop.Wait()
	p.mu.Lock()
	cl := p.cl
	p.mu.Unlock()
	_ = cl.Disconnect(&pahov5.Disconnect{ReasonCode: 0})
}

func (pahoGolang) consumer(ctx context.Context, d *dest, s *subSession) (brokers.Consumer, error) {
	c := &v5Consumer{d: d, s: s, in: newInbox(d, s)}
	cl, present, err := d.dialV5Session(ctx, s.id, s.v5, pahov5.ClientConfig{
		EnableManualAcknowledgment: true,
		SendAcksInterval:           time.Millisecond,
		OnPublishReceived:          []func(pahov5.PublishReceived) (bool, error){c.receive},
		OnClientError:              func(error) { c.in.markLost() },
		OnServerDisconnect:         func(*pahov5.Disconnect) { c.in.markLost() },
	})
	if err != nil {
		return nil, err
	}
	c.cl = cl
	go func() {
		<-cl.Done()
		c.in.markLost()
	}()
	// A session the broker kept has the subscription (subscribing again
	// would also collide in mochi-mqtt, which checks a SUBSCRIBE's packet
	// id against the ids of its own PUBLISHes in flight).
	if !present {
		if _, err := cl.Subscribe(ctx, &pahov5.Subscribe{Subscriptions: []pahov5.SubscribeOptions{{Topic: d.filter, QoS: d.subQoS}}}); err != nil {
			_ = cl.Disconnect(&pahov5.Disconnect{ReasonCode: 0})
			return nil, fmt.Errorf("subscribe to %s: %w", d.filter, err)
		}
	}
	d.markSubscribed(s)
	return c, nil
}

// v5Consumer is one consumer instance on one of the variant's sessions.
type v5Consumer struct {
	d      *dest
	s      *subSession
	cl     *pahov5.Client
	in     *inbox
	behind unsynced
}

var (
	_ brokers.Consumer = (*v5Consumer)(nil)
	_ brokers.Powered  = (*v5Consumer)(nil)
)

func (c *v5Consumer) receive(pr pahov5.PublishReceived) (bool, error) {
	p := pr.Packet
	intent, err := c.d.intentOf(p.Topic)
	if err != nil {
		c.in.fail(err)
		return true, nil
	}
	c.in.push(received{intent: intent, body: p.Payload, qos: p.QoS, dup: p.Duplicate(), retained: p.Retain, pid: p.PacketID, handle: p})
	return true, nil
}

func (c *v5Consumer) Next(ctx context.Context) (brokers.Delivery, error) { return c.in.next(ctx) }

// Ack sends the PUBACK (QoS 1) or PUBREC (QoS 2) and returns once the
// broker has processed it and, at QoS 2, once the PUBREL, PUBCOMP exchange
// has ended or the connection is lost: the client hands over the next
// message only then (OneInFlight). On a quiet embedded destination at QoS
// 1 it returns once the ack is handed to the client, as with paho (see
// pahoConsumer.Ack).
func (c *v5Consumer) Ack(ctx context.Context, del brokers.Delivery) error {
	p := del.Handle.(*pahov5.Publish)
	if p.QoS == 0 {
		return nil
	}
	var processed, completed chan struct{}
	fast := false
	if c.d.state != nil {
		processed = c.d.state.awaitAck(c.s, p.PacketID)
		if p.QoS == 2 {
			completed = c.d.state.awaitComplete(c.s, p.PacketID)
		} else {
			fast = c.d.state.quiet()
		}
	}
	err := c.cl.Ack(p)
	if errors.Is(err, pahov5.ErrPacketNotFound) {
		// paho.golang v0.23.0's Connect starts reading before it resets
		// its manual-ack tracker: a message the broker resends right at
		// the connect can be wiped from the tracker, and its Ack fails.
		// The ack then goes through the session state, as the tracker
		// would have sent it (one message in flight: no order to keep).
		// Without this, about one run in 150 on a loaded machine crashed
		// the consumer there and the broker delivered the message again.
		err = c.s.v5.Ack(p.Packet())
	}
	if err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	if fast {
		c.behind.last = processed
		c.d.state.lag(c.s, processed)
		return nil
	}
	if processed == nil {
		// paho.golang sends manual acks in batches; a round trip after
		// the next batch says the broker has it.
		time.Sleep(2 * time.Millisecond)
		if err := c.barrier(ctx); err != nil {
			return err
		}
		c.d.ackedCopy(del.Position)
		if p.QoS == 2 {
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
func (c *v5Consumer) Apply(ctx context.Context, p brokers.Power) error {
	if _, ok := p.(brokers.SyncAcks); ok {
		return c.behind.sync(ctx, c.in.lost)
	}
	return brokers.NoPower(p)
}

func (c *v5Consumer) barrier(ctx context.Context) error {
	ua, err := c.cl.Unsubscribe(ctx, &pahov5.Unsubscribe{Topics: []string{c.d.topic + "ack-barrier"}})
	if ua != nil {
		// An UNSUBACK came back: the round trip is made, whatever its
		// reason code (mochi-mqtt 2.7.9 answers 0x91, packet identifier
		// in use, when the id is also one of its own in flight to the
		// client, which paho.golang then returns as an error).
		return nil
	}
	return err
}

// OneInFlight: like paho.golang's router with auto ack, the consumer hands
// over one message at a time.
func (c *v5Consumer) OneInFlight() bool { return true }

var errAbandoned = errors.New("consumer abandoned")

// Abandon drops the connection without acking anything more; the session
// (expiry > 0) is kept, as after a crash.
func (c *v5Consumer) Abandon() {
	_ = c.behind.sync(context.Background(), c.in.lost) // what it acked stays acked
	c.in.fail(errAbandoned)
	_ = c.cl.Disconnect(&pahov5.Disconnect{ReasonCode: 0x04}) // disconnect with will message: as a crash
	<-c.cl.Done()
	c.d.release(c.s)
}

func (c *v5Consumer) Close(ctx context.Context) {
	c.in.markLost()
	_ = c.cl.Disconnect(&pahov5.Disconnect{ReasonCode: 0})
	select {
	case <-c.cl.Done():
	case <-ctx.Done():
	}
	c.d.release(c.s)
}

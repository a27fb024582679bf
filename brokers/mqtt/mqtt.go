// Package mqtt runs dqbench against MQTT 3.1.1: mochi-mqtt in-process
// (mode embedded), with eclipse/paho.mqtt.golang (client: paho) or
// eclipse/paho.golang (client: paho.golang, MQTT 5) as the client.
//
// Each variant gets its own topic prefix, dqbench/NAME/, and publishes
// intent i to dqbench/NAME/i, so the topic carries the message key. The
// consumer is one persistent session (client id dqb-NAME-s) subscribed to
// dqbench/NAME/+, or with consumer.instances N > 1 (embedded broker) N
// sessions in a shared subscription (shared.go); the destination creates
// them when it opens, so the broker keeps QoS 1 and 2 messages for them
// from the first publish on. The publisher is the session dqb-NAME-p.
package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/paho/session/state"
	pahomqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/netfault"
	nfmqtt "github.com/dqbench/dqbench/netfault/mqtt"
)

// Broker is an embedded MQTT broker (mochi-mqtt), or the managed
// Mosquittos (one per variant).
type Broker struct {
	url      string // tcp://host:port of the embedded broker
	settings catalog.MQTTSettings
	embedded *embedded // nil when managed
	managed  bool
	layer    *netfault.Layer // external: the in-process toxiproxy
	// sec is how an external broker's clients speak TLS and log in (the
	// zero value elsewhere).
	sec secure

	mu    sync.Mutex
	procs map[*mosquitto]bool // managed brokers still running
}

var _ brokers.Broker = (*Broker)(nil)

// Open starts the broker the scenario describes.
func Open(ctx context.Context, cfg brokers.Config) (brokers.Broker, error) {
	settings := new(catalog.MQTTSettings)
	if s, ok := cfg.Settings.(*catalog.MQTTSettings); ok && s != nil {
		*settings = *s
	}
	settings.Defaults()
	switch cfg.Mode {
	case catalog.External:
		return connectExternal(ctx, cfg.Addresses, *settings)
	case catalog.Managed:
		if _, err := mosquittoBinary(); err != nil {
			return nil, err
		}
		return &Broker{settings: *settings, managed: true, procs: map[*mosquitto]bool{}}, nil
	}
	e, err := startEmbedded()
	if err != nil {
		return nil, err
	}
	return &Broker{url: "tcp://" + e.addr, settings: *settings, embedded: e}, nil
}

// Name says which broker this is.
func (b *Broker) Name() string {
	switch {
	case b.embedded != nil:
		return "mqtt (embedded mochi-mqtt)"
	case b.managed:
		return "mqtt (managed mosquitto, one per variant)"
	}
	return "mqtt " + catalog.MaskURL(b.url)
}

// ServerVersion is the managed Mosquitto's version (mosquitto -h), or
// empty: an embedded broker's is in the run's clients, an external one
// is not asked.
func (b *Broker) ServerVersion() string {
	if !b.managed {
		return ""
	}
	bin, err := mosquittoBinary()
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "-h").CombinedOutput() // exits 3 after printing its usage
	first, _, _ := strings.Cut(string(out), "\n")
	if strings.HasPrefix(first, "mosquitto version ") {
		return "Mosquitto " + strings.TrimPrefix(strings.TrimSpace(first), "mosquitto version ")
	}
	return ""
}

// connectExternal uses the first of addrs that answers an MQTT CONNECT.
func connectExternal(ctx context.Context, addrs []string, settings catalog.MQTTSettings) (*Broker, error) {
	var errs []error
	var reasons []string
	hint := "start one with \"docker compose up -d mosquitto\" or \"apt-get install mosquitto\", or use mode: embedded"
	for _, a := range addrs {
		sec, err := newSecure(a, settings.Security)
		if err != nil {
			return nil, err
		}
		err = probe(ctx, a, sec)
		if err == nil {
			layer, err := netfault.Start()
			if err != nil {
				return nil, err
			}
			return &Broker{url: a, settings: settings, layer: layer, sec: sec}, nil
		}
		if errors.Is(err, errAnswered) {
			return nil, err // it answered: no "start one"
		}
		errs = append(errs, err)
		reasons = append(reasons, err.Error())
		if errors.Is(err, errNoAnswer) {
			hint = "check that the address is an MQTT broker's port (tcp://HOST:PORT) and that the broker is not overloaded"
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, &connectError{fmt.Sprintf("cannot reach an MQTT broker: %s; %s", strings.Join(reasons, "; "), hint), errs}
}

// Close stops an embedded broker, and any managed one a destination left
// running.
func (b *Broker) Close() error {
	if b.embedded != nil {
		return b.embedded.close()
	}
	if b.layer != nil {
		return b.layer.Close()
	}
	b.mu.Lock()
	procs := b.procs
	b.procs = nil
	b.mu.Unlock()
	var errs []error
	for m := range procs {
		errs = append(errs, m.stop())
	}
	return errors.Join(errs...)
}

// Open creates the variant's persistent subscription.
func (b *Broker) Open(ctx context.Context, spec brokers.DestinationSpec) (brokers.Destination, error) {
	settings := b.settings
	if s, ok := spec.Settings.(*catalog.MQTTSettings); ok && s != nil {
		settings = *s
		settings.Defaults()
	}
	d := &dest{
		b: b, spec: spec, name: spec.Name,
		topic: "dqbench/" + spec.Name + "/", pubID: "dqb-" + spec.Name + "-p",
		pubQoS: byte(*settings.QoS), subQoS: byte(*settings.SubscriptionQoS), clean: *settings.CleanSession, retain: settings.Retains(),
		client: settings.Client, pubStore: newSessionStore(), v5pub: state.NewInMemory(),
		subscribed: make(chan struct{}), acked: map[string]bool{},
	}
	if settings.SessionExpiry != nil {
		d.expiry = settings.SessionExpiry.D()
	}
	d.sessions(spec.Instances)
	d.subID = d.subs[0].id
	switch {
	case b.embedded != nil:
		d.url = b.url
		d.state = b.embedded.hook.add(d)
	case !b.managed && b.sec.tls != nil:
		// dqbench's MQTT filters cannot read TLS: its clients connect
		// straight to the broker (validation refuses the faults that
		// would need the filters).
		d.url = b.url
	case !b.managed:
		d.url = b.url
		if err := d.proxy(b.layer); err != nil {
			d.closeFailed(ctx)
			return nil, err
		}
	case b.managed:
		m, err := startMosquitto(ctx, settings)
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.procs[m] = true
		b.mu.Unlock()
		d.mosq, d.url = m, "tcp://"+m.addr
	}
	if !d.clean && d.legQoS(catalog.SubscriberLeg) > 0 {
		// The persistent sessions exist before the first publish, so the
		// broker keeps every QoS 1 and 2 message for the consumers.
		for _, s := range d.subs {
			if err := d.lib().subscribe(ctx, d, s); err != nil {
				d.closeFailed(ctx)
				return nil, err
			}
			d.markSubscribed(s)
		}
	}
	switch {
	case b.embedded != nil:
		return embeddedDest{d}, nil
	case b.managed:
		return managedDest{d}, nil
	}
	return externalDest{d}, nil
}

// closeFailed closes a destination that could not open, past ctx's end
// but for at most cleanupTimeout.
func (d *dest) closeFailed(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	d.Close(cctx)
}

// cleanupTimeout bounds closing a destination that could not open.
const cleanupTimeout = 2 * time.Second

// dest is one variant's topic and sessions.
type dest struct {
	b   *Broker
	url string // tcp://host:port of the destination's broker
	// pubURL and subURL, when set, are where the publisher and the
	// consumer connect instead (toxiproxy proxies in front of url).
	pubURL, subURL string
	proxies        []*netfault.Proxy
	rules          map[catalog.Leg][]*nfmqtt.Rule
	mosq           *mosquitto // the managed broker, or nil
	spec           brokers.DestinationSpec
	name           string
	topic          string // prefix; intent i is published to topic + i
	filter         string // what each consumer session subscribes to
	pubID          string
	// subs are the consumer sessions (shared.go); subID is the first's
	// client id, the only one where a variant has one.
	subs   []*subSession
	subID  string
	pubQoS byte
	subQoS byte
	clean  bool
	retain bool // publish with the RETAIN flag
	// expiry is the consumer sessions' MQTT 5 session expiry (0: the
	// longest).
	expiry time.Duration
	client catalog.MQTTClient
	// pubStore is the client side of the publisher's session (paho);
	// v5pub is paho.golang's.
	pubStore *sessionStore
	v5pub    *state.State
	state    *destState

	subscribedOnce sync.Once
	subscribed     chan struct{} // closed once the broker keeps messages for every consumer session

	mu     sync.Mutex // guards copies and the sessions' client-side fields
	copies int

	// qos0Queued counts QoS 0 deliveries a consumer has received and not
	// yet handled; qos0Last is when a QoS 0 message was last seen on its
	// way (unix nanoseconds).
	qos0Queued atomic.Int64
	qos0Last   atomic.Int64
	// confirmed counts QoS 1 and 2 publishes the broker confirmed, for
	// a consumer that gets them at QoS 1 or 2; ackedCopies the copies the
	// consumer acked (each once; acked holds their positions).
	confirmed   atomic.Int64
	ackedCopies atomic.Int64
	acked       map[string]bool
	// activity is when a publish was last confirmed or a copy acked (unix
	// nanoseconds).
	activity atomic.Int64

	// silent is set once the broker accepted a connection and never
	// answered its CONNECT.
	silent atomic.Bool
	// consumerErr is why a consumer last failed to connect (an error).
	consumerErr atomic.Pointer[error] // an atomic.Value would panic on errors of another type

	restart   *rule // broker-restart on a managed broker
	restartMu sync.Mutex

	// out is the relay of a process variant's consumer (outside.go).
	out *outside
}

// confirm counts a confirmed publish that the consumer must ack.
func (d *dest) confirm() {
	d.activity.Store(time.Now().UnixNano())
	if d.pubQoS > 0 && d.legQoS(catalog.SubscriberLeg) > 0 {
		d.confirmed.Add(1)
	}
}

// ackedCopy counts the copy at pos acked, once.
func (d *dest) ackedCopy(pos string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.activity.Store(time.Now().UnixNano())
	if !d.acked[pos] {
		d.acked[pos] = true
		d.ackedCopies.Add(1)
	}
}

// ackedPID counts as acked the copy the consumer's packet id pid carries
// (QoS 2: the broker sent PUBREL for it), on the variant's only session
// (an external broker's).
func (d *dest) ackedPID(pid uint16) {
	d.mu.Lock()
	c, ok := d.subs[0].positions[pid]
	if ok && !d.acked[c.pos] {
		d.acked[c.pos] = true
		d.ackedCopies.Add(1)
		d.activity.Store(time.Now().UnixNano())
	}
	d.mu.Unlock()
}

func (d *dest) qos0Seen() { d.qos0Last.Store(time.Now().UnixNano()) }

// qos0Backlog is what may still be on its way at QoS 0: the deliveries a
// consumer holds, and one while QoS 0 traffic has not settled.
func (d *dest) qos0Backlog() int64 {
	n := d.qos0Queued.Load()
	if time.Since(time.Unix(0, d.qos0Last.Load())) < qos0Settle {
		n++
	}
	return n
}

var _ brokers.Destination = (*dest)(nil)

// legQoS is the QoS of the handshake on a leg: the publish QoS from the
// publisher to the broker, min(publish, subscription) from the broker to
// the subscriber.
func (d *dest) legQoS(leg catalog.Leg) byte {
	if leg == catalog.SubscriberLeg {
		return min(d.pubQoS, d.subQoS)
	}
	return d.pubQoS
}

// urlFor is where the client id connects.
func (d *dest) urlFor(id string) string {
	switch {
	case id == d.pubID && d.pubURL != "":
		return d.pubURL
	case id == d.subID && d.subURL != "":
		return d.subURL
	}
	return d.url
}

func (d *dest) topicOf(intent int) string { return d.topic + brokers.Key(intent) }

// intentOf reads the intent from a topic of this destination.
func (d *dest) intentOf(topic string) (int, error) {
	key, ok := strings.CutPrefix(topic, d.topic)
	if !ok {
		return 0, fmt.Errorf("message on topic %q, outside %s+", topic, d.topic)
	}
	return brokers.ParseKey(key)
}

// position names the stored copy a delivery carries. A QoS 1 or 2 copy
// keeps its packet id until the subscriber completes it, and the broker
// resends it with the DUP flag: a DUP delivery of the same intent with the
// packet id it had before is the same copy again; anything else is a new
// copy. (mochi-mqtt also sets DUP on the first send of a message it queued
// for an offline session, and reuses packet ids once completed, so neither
// DUP nor the packet id alone says redelivered.) QoS 0 deliveries are each
// their own copy. Packet ids are per session: in a shared subscription the
// position starts with the session's number (s2/c17/5: session 2, copy
// 17, packet id 5).
func (d *dest) position(s *subSession, intent int, qos byte, dup bool, pid uint16) (pos string, redelivered bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if qos > 0 && dup {
		if c, ok := s.positions[pid]; ok && c.intent == intent {
			return c.pos, true
		}
	}
	d.copies++
	pos = "c" + strconv.Itoa(d.copies)
	if s.n > 0 {
		pos = "s" + strconv.Itoa(s.n) + "/" + pos
	}
	if qos > 0 {
		pos += "/" + strconv.Itoa(int(pid))
		s.positions[pid] = copyRef{intent: intent, pos: pos}
	}
	return pos, false
}

// copyRef is the copy a subscriber packet id last carried.
type copyRef struct {
	intent int
	pos    string
}

// lib is the client library of this destination.
func (d *dest) lib() clientLib {
	if d.client == catalog.PahoGolang {
		return pahoGolang{}
	}
	return paho{}
}

// clientLib is one MQTT client library.
type clientLib interface {
	// subscribe creates the consumer session s with its subscription,
	// then disconnects.
	subscribe(ctx context.Context, d *dest, s *subSession) error
	producer(ctx context.Context, d *dest) (brokers.Producer, error)
	// consumer connects a consumer instance on session s.
	consumer(ctx context.Context, d *dest, s *subSession) (brokers.Consumer, error)
}

// Producer starts the publisher session once the broker keeps messages
// for the consumer: at once with a persistent session and QoS 1 or 2 to
// the consumer, else once a consumer is connected (the broker drops QoS 0
// messages for an offline session, and everything without a session).
func (d *dest) Producer(ctx context.Context) (brokers.Producer, error) {
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	select {
	case <-d.subscribed:
	case <-wait.Done():
		if err := d.consumerErr.Load(); err != nil {
			return nil, fmt.Errorf("mqtt: no consumer subscribed to %s within 10s; its last connect: %w", d.filter, *err)
		}
		return nil, fmt.Errorf("mqtt: no consumer subscribed to %s within 10s", d.filter)
	}
	return d.lib().producer(ctx, d)
}

// Consumer connects a consumer instance on a session no other instance
// holds (claim), retrying for a while a broker that does not answer (a
// managed broker restarting).
func (d *dest) Consumer(ctx context.Context, gen int) (_ brokers.Consumer, err error) {
	s := d.claim(gen)
	defer func() {
		if err != nil {
			d.release(s)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := d.lib().consumer(ctx, d, s)
		if err != nil {
			d.consumerErr.Store(&err)
		}
		if err == nil || !errors.Is(err, brokers.ErrUnreachable) || time.Now().After(deadline) {
			return c, err
		}
		select {
		case <-ctx.Done():
			// Say why the last attempt failed, not only that time ran out.
			if errors.Is(err, ctx.Err()) {
				return nil, err
			}
			return nil, fmt.Errorf("%w; stopped retrying: %w", err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Backlog counts, on the embedded broker, the publishes it is routing
// and the messages in the consumer session not acknowledged yet; on a
// managed Mosquitto, the messages it stores (from $SYS, once a count newer
// than the last confirm or ack has come).
func (d *dest) Backlog(ctx context.Context) (int64, error) {
	switch {
	case d.state != nil:
		n, err := d.b.embedded.backlog(ctx, d)
		return n + d.qos0Backlog(), err
	default:
		// Counted on the clients: every confirmed QoS 1 or 2 publish is
		// one stored message (the variant's broker serves nothing else),
		// until the consumer acks its copy or the broker drops it past
		// its limits ($SYS, up to a second late: high for a moment).
		n := d.confirmed.Load() - d.ackedCopies.Load()
		if d.mosq == nil {
			// An external broker: what it dropped is not known.
			return max(n, 0) + d.qos0Backlog(), nil
		}
		n -= d.mosq.dropped.Load()
		if n > 0 && d.mosq.restarts.Load() > 0 {
			// A restart may have lost what the clients count as held:
			// believe the broker once its counts have settled at nothing.
			if held, settled := d.mosq.held(time.Unix(0, d.activity.Load())); settled && held == 0 {
				n = 0
			}
		}
		return max(n, 0) + d.qos0Backlog(), nil
	}
}

// Close forgets the destination; the embedded broker goes away with the
// run.
func (d *dest) Close(ctx context.Context) error {
	rerr := d.closeOutside()
	if d.state != nil {
		d.b.embedded.hook.remove(d)
	}
	err := d.v5pub.Close()
	for _, s := range d.subs {
		err = errors.Join(err, s.v5.Close())
	}
	for _, p := range d.proxies {
		err = errors.Join(err, p.Close(ctx))
	}
	switch {
	case d.state == nil && d.mosq == nil && d.silent.Load():
		// Ending them would wait on the broker again.
		err = errors.Join(err, fmt.Errorf("%w on %s: sessions %s and %s may remain on the broker, which %v", brokers.ErrCleanup, catalog.MaskURL(d.url), d.subID, d.pubID, errNoAnswer))
	case d.state == nil && d.mosq == nil:
		// An external broker keeps persistent sessions: end both.
		for _, id := range []string{d.subID, d.pubID} {
			if cerr := endSession(ctx, d.url, d.b.sec, id); cerr != nil {
				err = errors.Join(err, fmt.Errorf("%w on %s: end session %s: %v", brokers.ErrCleanup, catalog.MaskURL(d.url), id, cerr))
			}
		}
	}
	if d.mosq != nil {
		d.b.mu.Lock()
		delete(d.b.procs, d.mosq)
		d.b.mu.Unlock()
		err = errors.Join(err, d.mosq.stop())
	}
	return errors.Join(rerr, err)
}

// managedDest is a destination on its own managed Mosquitto, which says
// its limits.
type managedDest struct{ *dest }

var (
	_ brokers.Destination   = managedDest{}
	_ brokers.LimitReporter = managedDest{}
	_ brokers.Powered       = managedDest{}
)

// Apply injects the managed broker's one fault power: it restarts the
// variant's Mosquitto once the chosen intents are confirmed.
func (d managedDest) Apply(_ context.Context, p brokers.Power) error {
	r, ok := p.(brokers.RestartAfter)
	if !ok {
		return brokers.NoPower(p)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.restart = &rule{fires: r.Fires, fired: r.Restarted, seen: map[int]int{}}
	return nil
}

// confirmedIntent is called once the broker confirmed intent's publish; it
// restarts a managed broker where a broker-restart fault says so.
func (d *dest) confirmedIntent(intent int) {
	d.mu.Lock()
	r := d.restart
	hit := false
	if r != nil {
		r.seen[intent]++
		hit = r.fires(intent, r.seen[intent])
	}
	d.mu.Unlock()
	if !hit {
		return
	}
	d.restartMu.Lock()
	defer d.restartMu.Unlock()
	r.fired(intent)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = d.mosq.restart(ctx) // a broker that does not come back shows as a stuck drain
}

// Limits names the managed Mosquitto's queue limits.
func (d managedDest) Limits() string { return "Mosquitto " + d.mosq.limits }

func (d *dest) pubSession() *state.State { return d.v5pub }

// hostPort is the host:port of an MQTT URL.
func hostPort(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Host
}

// endSession connects as id with a clean session, which ends the session
// the broker kept for id.
func endSession(ctx context.Context, url string, sec secure, id string) error {
	cl, _, err := pahoConnect(ctx, url, sec, pahomqtt.NewClientOptions().AddBroker(url).SetClientID(id).
		SetCleanSession(true).SetAutoReconnect(false))
	if err != nil {
		return err
	}
	cl.Disconnect(50)
	return nil
}

// dial checks that something listens at u (TCP only).
func dial(ctx context.Context, u string) error {
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "tcp", hostPort(u))
	if err != nil {
		return err
	}
	return c.Close()
}

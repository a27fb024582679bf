// Package rabbitmq runs dqbench against a running RabbitMQ (mode external)
// with github.com/rabbitmq/amqp091-go: a durable queue per variant,
// persistent messages, publisher confirms and manual acks.
//
// Every producer and consumer connection goes through toxiproxy (package
// netfault; an in-process server unless the settings name an external
// one), one proxy per connection, so that network faults can hit one
// client; the admin connection (declares, backlog, deletes) goes direct.
package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/tlsprobe"
	"github.com/dqbench/dqbench/leftover"
	"github.com/dqbench/dqbench/netfault"
)

// dialTimeout bounds the TCP connect and the AMQP handshake.
const dialTimeout = 5 * time.Second

// copyHeader names the stored copy a message is: the publish that made it
// (see Delivery.Position).
const copyHeader = "dqbench-copy"

// RabbitMQ is a running broker reached at one AMQP URL.
type RabbitMQ struct {
	url string // with the password: only for dialling
	// throwaway: a cluster started for this run, whose queues go with it:
	// not noted in the leftover ledger.
	throwaway bool
	masked    string // for every message
	queueType catalog.QueueType
	// addrs are every address the broker has (a managed cluster's nodes),
	// url first: a client whose node died reconnects to the next.
	addrs  []string
	connMu sync.Mutex
	conn   *amqp.Connection // admin: declares, backlog, deletes
	net    *netfault.Layer  // the toxiproxy every client connects through
	// sec is how every connection speaks TLS and logs in (broker tls
	// and auth, external only).
	sec secure

	seq atomic.Int64 // numbers producers, for the copy header
	// down is closed while a broker-restart has the node down: clients
	// wait for it to open before they connect.
	down gate
}

// gate holds clients back while a managed node restarts.
type gate struct {
	mu sync.Mutex
	up chan struct{} // nil: the node runs; else closed when it runs again
}

// wait returns once the node runs (at once when no restart is under way).
func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	up := g.up
	g.mu.Unlock()
	if up == nil {
		return nil
	}
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close holds clients back from now on.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.up == nil {
		g.up = make(chan struct{})
	}
}

// open lets the clients waiting go.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.up != nil {
		close(g.up)
		g.up = nil
	}
}

// closed reports whether a restart is under way.
func (g *gate) closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.up != nil
}

var _ brokers.Broker = (*RabbitMQ)(nil)

// Open connects to the first of cfg.Addresses that answers.
func Open(ctx context.Context, cfg brokers.Config) (brokers.Broker, error) {
	settings, _ := cfg.Settings.(*catalog.RabbitMQSettings)
	if settings == nil {
		settings = new(catalog.RabbitMQSettings)
		settings.Defaults()
	}
	if cfg.Mode == catalog.Managed {
		return openManaged(ctx, cfg, settings)
	}
	addrs := cfg.Addresses
	if len(addrs) == 0 {
		b, _ := catalog.LookupBroker(catalog.RabbitMQ)
		addrs = []string{b.DefaultAddress}
	}
	sec, err := newSecure(settings.Security)
	if err != nil {
		return nil, err
	}
	var errs []string
	answered := false // a broker answered and refused the login or vhost, or its TLS
	for _, a := range addrs {
		conn, err := dial(ctx, a, "", nil, sec)
		if err != nil {
			errs = append(errs, err.Error())
			answered = answered || errors.Is(err, errRefused) || errors.Is(err, errTLS)
			continue
		}
		r := &RabbitMQ{url: a, masked: catalog.MaskURL(a), queueType: settings.QueueType, addrs: addrs, conn: conn, sec: sec}
		if settings.Toxiproxy != "" {
			r.net, err = netfault.Connect(settings.Toxiproxy)
		} else {
			r.net, err = netfault.Start()
		}
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("%w: %v", brokers.ErrUnreachable, err)
		}
		return r, nil
	}
	if answered {
		return nil, errors.New(strings.Join(errs, "; ")) // it answered: no "start one"
	}
	return nil, fmt.Errorf("%w: %s; start one with \"docker compose up -d rabbitmq\" (or \"service rabbitmq-server start\" where it is installed)",
		brokers.ErrUnreachable, strings.Join(errs, "; "))
}

// errRefused marks a RabbitMQ that answered but refused the connection:
// a wrong user or password, or a virtual host that is not there.
var errRefused = errors.New("refused")

// refusal says what a broker that answered but refused the connection
// means, and what to do; ok is false for any other error.
func refusal(err error, masked, url string, sec secure) (error, bool) {
	var ae *amqp.Error
	if !errors.As(err, &ae) {
		return nil, false
	}
	u, _ := amqp.ParseURI(url)
	if sec.user != "" {
		u.Username = sec.user
	}
	switch ae.Code {
	case amqp.AccessRefused:
		return fmt.Errorf("RabbitMQ at %s %w the login of user %q (403 ACCESS_REFUSED: a wrong user name or password, or a user that may not connect from here); fix the user name and password in broker auth or the URL",
			masked, errRefused, u.Username), true
	case amqp.NotAllowed:
		return fmt.Errorf("RabbitMQ at %s %w virtual host %q to user %q (%s); fix the URL's path, or create it: rabbitmqctl add_vhost %s && rabbitmqctl set_permissions -p %s %s '.*' '.*' '.*'",
			masked, errRefused, u.Vhost, u.Username, ae.Reason, u.Vhost, u.Vhost, u.Username), true
	}
	return nil, false
}

// dial opens a connection to url, through the proxy at via when given;
// wrap, when given, wraps the connection (the consumers count the frames
// they read through it); sec says how it speaks TLS and logs in.
func dial(ctx context.Context, url, via string, wrap func(net.Conn) net.Conn, sec secure) (*amqp.Connection, error) {
	masked := catalog.MaskURL(url)
	hide := func(msg string) string {
		if u, perr := amqp.ParseURI(url); perr == nil && u.Password != "" {
			msg = strings.ReplaceAll(msg, u.Password, "***")
		}
		if sec.pass != "" {
			msg = strings.ReplaceAll(msg, sec.pass, "***")
		}
		return msg
	}
	fail := func(err error) error {
		return fmt.Errorf("cannot reach RabbitMQ at %s: %s", masked, hide(err.Error()))
	}
	// Parsed with the password masked first: amqp091's error would quote
	// the URL, or a piece of the password as a port.
	if _, err := catalog.ParseURL(url); err != nil {
		return nil, fmt.Errorf("RabbitMQ URL %s: %v", masked, err)
	}
	target, tlsCfg, err := sec.target(url)
	if err != nil {
		return nil, fmt.Errorf("RabbitMQ URL %s: does not parse", masked)
	}
	deadline := time.Now().Add(dialTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var handshake error // the TLS handshake's failure
	cfg := amqp.Config{
		Heartbeat: 10 * time.Second,
		Locale:    "en_US",
		SASL:      sec.sasl(),
		Dial: func(network, addr string) (net.Conn, error) {
			var d net.Dialer
			dctx, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			if via != "" {
				addr = via
			}
			c, err := d.DialContext(dctx, network, addr)
			if err != nil {
				return nil, err
			}
			// The handshake too; amqp091 clears it once the connection is
			// open.
			if err := c.SetDeadline(deadline); err != nil {
				c.Close()
				return nil, err
			}
			if tlsCfg != nil {
				tc := tls.Client(c, tlsCfg)
				if err := tc.HandshakeContext(dctx); err != nil {
					c.Close()
					handshake = err
					return nil, err
				}
				c = tc
			}
			if wrap != nil {
				c = wrap(c)
			}
			return c, nil
		},
	}
	conn, err := amqp.DialConfig(target, cfg)
	if err != nil {
		if r, ok := refusal(err, masked, url, sec); ok {
			return nil, r
		}
		if handshake == nil && tlsCfg != nil {
			// TLS 1.3: a client certificate the server refuses fails the
			// first read, which amqp091 may report as a closed connection.
			handshake = err
			if u, perr := amqp.ParseURI(target); perr == nil && brokers.TLSFailure(err) == "" {
				if rerr := tlsprobe.Refusal(ctx, net.JoinHostPort(u.Host, strconv.Itoa(u.Port)), tlsCfg); rerr != nil {
					handshake = rerr
				}
			}
		}
		if why := brokers.TLSFailure(handshake); handshake != nil && why != "" {
			return nil, fmt.Errorf("RabbitMQ at %s: %w: %s", masked, errTLS, why)
		}
		if tlsCfg == nil && !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) && !isDialError(err) {
			if u, perr := amqp.ParseURI(target); perr == nil && tlsprobe.SpeaksTLS(ctx, net.JoinHostPort(u.Host, strconv.Itoa(u.Port))) {
				return nil, fmt.Errorf("RabbitMQ at %s: %w: the port speaks TLS only, and dqbench connected without (an amqp:// URL); use amqps:// with the server's CA in broker tls.ca", masked, errTLS)
			}
		}
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			err = fmt.Errorf("no answer in time (%v)", err)
		}
		return nil, fail(err)
	}
	return conn, nil
}

// isDialError says whether err is the TCP connect's own failure (refused,
// no route): nothing answered, so nothing to ask about TLS.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Name says which RabbitMQ this is, password masked.
func (r *RabbitMQ) Name() string { return "rabbitmq " + r.masked }

// ServerVersion is what the server says it is in its connection
// properties: "RabbitMQ 3.10.8".
func (r *RabbitMQ) ServerVersion() string {
	r.connMu.Lock()
	defer r.connMu.Unlock()
	if r.conn == nil {
		return ""
	}
	product, _ := r.conn.Properties["product"].(string)
	version, _ := r.conn.Properties["version"].(string)
	return strings.TrimSpace(product + " " + version)
}

// Close closes the admin connection and stops an in-process toxiproxy.
func (r *RabbitMQ) Close() error {
	r.connMu.Lock()
	defer r.connMu.Unlock()
	var errs []error
	if err := r.conn.Close(); err != nil && !errors.Is(err, amqp.ErrClosed) {
		errs = append(errs, fmt.Errorf("close connection to %s: %w", r.masked, err))
	}
	if err := r.net.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop the %s: %w", r.net.Name(), err))
	}
	return errors.Join(errs...)
}

// majorVersion is the broker's major version, from the server properties
// of the connection (0 when it does not say).
func (r *RabbitMQ) majorVersion() int {
	r.connMu.Lock()
	v, _ := r.conn.Properties["version"].(string)
	r.connMu.Unlock()
	major, _, _ := strings.Cut(v, ".")
	n, _ := strconv.Atoi(major)
	return n
}

// proxy puts a new toxiproxy proxy in front of the broker at url for one
// client connection.
func (r *RabbitMQ) proxy(name, url string) (*netfault.Proxy, error) {
	u, err := amqp.ParseURI(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", catalog.MaskURL(url), err)
	}
	p, err := r.net.Proxy(name, net.JoinHostPort(u.Host, fmt.Sprint(u.Port)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", brokers.ErrUnreachable, err)
	}
	return p, nil
}

// Open declares the variant's durable queue.
func (r *RabbitMQ) Open(ctx context.Context, spec brokers.DestinationSpec) (brokers.Destination, error) {
	d := &queueDest{r: r, spec: spec, queue: queuePrefix + spec.Name, queueType: r.queueType}
	var settings catalog.RabbitMQSettings // the variant's: queue type, bounds, delivery limit
	if s, ok := spec.Settings.(*catalog.RabbitMQSettings); ok && s != nil {
		settings = *s
	}
	if settings.QueueType != "" {
		d.queueType = settings.QueueType // the variant's override
	}
	d.durable = settings.IsDurable()
	d.persistent = settings.IsPersistent()
	d.confirms = settings.HasConfirms()
	ch, err := d.admin()
	if err != nil {
		return nil, err
	}
	args := amqp.Table{amqp.QueueTypeArg: string(d.queueType)}
	switch {
	case settings.OnFailure == catalog.FailRetryQueue:
		// The retry-queue pattern: what the consumer rejects goes
		// through the default exchange to the wait queue, whose TTL
		// expires it back, through the default exchange again, to this
		// queue (unless the settings leave the wait queue out).
		wait := d.queue + "-wait"
		if settings.HasDeadLetterQueue() {
			wargs := deadLetterTarget(settings.RabbitMQConsumer)
			wargs["x-message-ttl"] = settings.Delay().D().Milliseconds()
			wargs["x-dead-letter-exchange"] = ""
			wargs["x-dead-letter-routing-key"] = d.queue
			if d.wait, err = r.declareTarget(ch, spec.Name+"-wait", wait, wargs); err != nil {
				return nil, err
			}
		}
		args["x-dead-letter-exchange"] = ""
		args["x-dead-letter-routing-key"] = wait
	case spec.DeadLetter:
		// Dead-lettered through the default exchange, straight to the
		// variant's own dead-letter queue (unless the settings leave it
		// out: then the broker routes dead letters to no queue).
		dead := d.queue + "-dead"
		if settings.HasDeadLetterQueue() {
			if d.dead, err = r.declareTarget(ch, spec.Name+"-dead", dead, deadLetterTarget(settings.RabbitMQConsumer)); err != nil {
				return nil, err
			}
			d.dead.spec.Prefetch = spec.Prefetch
		}
		args["x-dead-letter-exchange"] = ""
		args["x-dead-letter-routing-key"] = dead
	}
	if settings.MaxLength > 0 {
		args[amqp.QueueMaxLenArg] = settings.MaxLength
		overflow := settings.Overflow
		if overflow == "" {
			overflow = catalog.DropHead
		}
		args[amqp.QueueOverflowArg] = string(overflow)
	}
	switch {
	case settings.DeliveryLimit > 0:
		args["x-delivery-limit"] = settings.DeliveryLimit
	case d.queueType == catalog.QuorumQueue && r.majorVersion() >= 4:
		// RabbitMQ 4 gives quorum queues a delivery limit of 20 unless
		// told otherwise; -1 is its "no limit", as before 4.0.
		args["x-delivery-limit"] = -1
	}
	d.args = args
	if err := d.declare(ch); err != nil {
		return nil, err
	}
	r.note(d.queue)
	return d, nil
}

// declareTarget declares a queue the variant's dead-letter exchange routes
// to (the dead-letter queue, or the wait queue of a retry-queue), with
// args.
func (r *RabbitMQ) declareTarget(ch *amqp.Channel, name, queue string, args amqp.Table) (*queueDest, error) {
	t := &queueDest{r: r, spec: brokers.DestinationSpec{Name: name}, queue: queue}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, args); err != nil {
		return nil, fmt.Errorf("declare queue %s on %s: %w", queue, r.masked, err)
	}
	r.note(queue)
	return t, nil
}

// deadLetterTarget is the arguments of the queue the dead-letter exchange
// routes to: a classic queue, bounded by dead_letter_max_length.
func deadLetterTarget(c catalog.RabbitMQConsumer) amqp.Table {
	args := amqp.Table{amqp.QueueTypeArg: string(catalog.ClassicQueue)}
	if c.DeadLetterMaxLength > 0 {
		args[amqp.QueueMaxLenArg] = c.DeadLetterMaxLength
		overflow := c.DeadLetterOverflow
		if overflow == "" {
			overflow = catalog.DropHead
		}
		args[amqp.QueueOverflowArg] = string(overflow)
	}
	return args
}

// declare declares the variant's queue (durable unless the settings say
// otherwise) on ch.
func (d *queueDest) declare(ch *amqp.Channel) error {
	if _, err := ch.QueueDeclare(d.queue, d.durable, false, false, false, d.args); err != nil {
		return fmt.Errorf("declare queue %s on %s: %w", d.queue, d.r.masked, err)
	}
	return nil
}

// redeclare declares the queue again on the admin channel, as a client
// library's topology recovery does after a reconnect: a transient queue
// that a restart deleted comes back empty.
func (d *queueDest) redeclare() error {
	d.adminMu.Lock()
	defer d.adminMu.Unlock()
	ch, err := d.admin()
	if err != nil {
		return err
	}
	return d.declare(ch)
}

// note records a queue this run declared in the leftover ledger, so that a
// killed run's queue is found and deleted later (dqbench clean).
func (r *RabbitMQ) note(queue string) {
	if !r.throwaway {
		leftover.Note(leftover.Entry{Kind: leftover.Queue, Where: r.url, Name: queue})
	}
}

// queuePrefix starts the name of every queue dqbench declares; no other
// queue is ever deleted by a sweep.
const queuePrefix = "dqbench-"

// DeleteQueue deletes queue on the RabbitMQ at url: what dqbench clean does
// with a queue a killed run left. A name without queuePrefix is refused.
func DeleteQueue(ctx context.Context, url, queue string) error {
	if !strings.HasPrefix(queue, queuePrefix) {
		return fmt.Errorf("queue %q: not one dqbench makes (%s*), so it is left alone", queue, queuePrefix)
	}
	conn, err := dial(ctx, url, "", nil, secure{})
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	_, err = ch.QueueDelete(queue, false, false, false)
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return nil // gone already
	}
	return err
}

// queueDest is one variant's queue.
type queueDest struct {
	r         *RabbitMQ
	spec      brokers.DestinationSpec
	queue     string
	queueType catalog.QueueType // the broker's, or the variant's override
	// The queue's durability and arguments, and how the producer
	// publishes (persistent messages, publisher confirms).
	durable, persistent, confirms bool
	args                          amqp.Table
	// onPublish, when armed (broker-restart on a managed node), is asked
	// before each publish, with a way to wait for the producer's
	// outstanding confirms; when it returns a function, the producer calls
	// it once the publish is written.
	onPublish func(ctx context.Context, intent, attempt int, awaitConfirms func(context.Context)) func()

	adminMu sync.Mutex
	adminCh *amqp.Channel // this destination's own: a failed call closes a channel

	// The network faults armed on this queue's clients (nil: none).
	ackLost, confirmLost *lose
	producerCuts         []*cut
	// dead is the dead-letter queue, when spec.DeadLetter; wait is the
	// wait queue of on_failure: retry-queue. Either is nil when the
	// settings leave it out (dead_letter_queue: false).
	dead, wait *queueDest
	// out is the relay of a process variant's consumers (outside.go).
	out *outside

	mu       sync.Mutex
	live     map[*consumer]bool // started and not closed or abandoned
	departed []*consumer        // closed or abandoned, maybe still registered at the broker
	changes  int                // counts joins and departures, for Backlog
}

var _ brokers.Destination = (*queueDest)(nil)

// admin returns the destination's admin channel, opening a fresh one when
// the last call closed it.
func (d *queueDest) admin() (*amqp.Channel, error) {
	if d.adminCh != nil && !d.adminCh.IsClosed() {
		return d.adminCh, nil
	}
	ch, err := d.r.channel()
	if err != nil {
		return nil, fmt.Errorf("%w: channel on %s: %v", brokers.ErrUnreachable, d.r.masked, err)
	}
	d.adminCh = ch
	return ch, nil
}

// inspect is a passive declare: the queue's ready messages and consumers.
func (d *queueDest) inspect() (amqp.Queue, error) {
	d.adminMu.Lock()
	defer d.adminMu.Unlock()
	ch, err := d.admin()
	if err != nil {
		return amqp.Queue{}, err
	}
	q, err := ch.QueueDeclarePassive(d.queue, true, false, false, false, nil)
	if err != nil {
		return amqp.Queue{}, fmt.Errorf("inspect queue %s on %s: %w", d.queue, d.r.masked, err)
	}
	return q, nil
}

// Backlog counts the queue's messages that are ready plus those delivered
// and not acked. AMQP reports only the ready ones (queue.declare-ok), so
// the unacked are counted here, from the consumers this destination
// started:
//
//   - a live consumer (from before its basic.consume) holds what it read
//     off its socket (basic.deliver frames, counted by frameCounter) less
//     what it acked; a round trip on its channel after the declare makes
//     sure every delivery the broker had taken out of the ready count by
//     then has been read;
//   - a consumer that closed or was abandoned gives its unacked back: the
//     broker requeues them (ready again) in the step that removes the
//     consumer. Until the declare shows no more consumers than the live
//     ones whose consume-ok came, they are counted as held (at least one,
//     for deliveries that were on the wire when the connection died).
//
// So the count can be high for a moment, never low: a low one would end
// the drain early and count undelivered intents as lost. The dead-letter
// queue's and the wait queue's messages count too: a retry waiting in the
// wait queue is still to be delivered.
func (d *queueDest) Backlog(ctx context.Context) (int64, error) {
	n, err := d.backlog()
	for _, t := range []*queueDest{d.dead, d.wait} {
		if err != nil || t == nil {
			continue
		}
		var more int64
		more, err = t.backlog()
		n += more
	}
	return n, err
}

// backlog is Backlog for this queue alone.
func (d *queueDest) backlog() (int64, error) {
	if d.out != nil {
		return d.outsideBacklog()
	}
	d.mu.Lock()
	before := d.changes
	d.mu.Unlock()
	q, err := d.inspect()
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	live := make([]*consumer, 0, len(d.live))
	consuming := 0
	for c := range d.live {
		live = append(live, c)
		if c.consuming {
			consuming++
		}
	}
	departed := d.departed
	stable := d.changes == before
	d.mu.Unlock()

	n := int64(q.Messages)
	for _, c := range live {
		_ = c.flush()
		n += c.held()
	}
	if !stable || q.Consumers > consuming {
		for _, c := range departed {
			n += max(c.held(), 1)
		}
		return n, nil
	}
	// Every consumer that departed before the declare is gone from the
	// broker, and what it held is in q.Messages.
	d.mu.Lock()
	if d.changes == before {
		d.departed = d.departed[len(departed):]
	}
	d.mu.Unlock()
	return n, nil
}

// Close deletes the queue (and its dead-letter or wait queue).
func (d *queueDest) Close(ctx context.Context) error {
	rerr := d.closeOutside()
	d.adminMu.Lock()
	defer d.adminMu.Unlock()
	ch, err := d.admin()
	if err == nil {
		_, err = ch.QueueDelete(d.queue, false, false, false)
		ch.Close()
	}
	if err == nil {
		leftover.Forget(leftover.Entry{Kind: leftover.Queue, Where: d.r.url, Name: d.queue})
	}
	if err != nil {
		err = fmt.Errorf("%w on %s: delete queue %s: %v", brokers.ErrCleanup, d.r.Name(), d.queue, err)
	}
	for _, t := range []*queueDest{d.dead, d.wait} {
		if t != nil {
			err = errors.Join(err, t.Close(ctx))
		}
	}
	return errors.Join(rerr, err)
}

var (
	_ brokers.DeadLetterer = (*queueDest)(nil)
	_ brokers.Nacker       = (*consumer)(nil)
)

// DeadLetters starts a consumer on the dead-letter queue.
func (d *queueDest) DeadLetters(ctx context.Context) (brokers.Consumer, error) {
	if d.dead == nil && d.spec.DeadLetter {
		return nil, brokers.ErrNowhere // dead_letter_queue: false: nothing to read
	}
	if d.dead == nil {
		return nil, fmt.Errorf("queue %s has no dead-letter queue", d.queue)
	}
	return d.dead.Consumer(ctx, 1)
}

func (d *queueDest) join(c *consumer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.live == nil {
		d.live = map[*consumer]bool{}
	}
	d.live[c] = true
	d.changes++
}

// registered notes that the broker confirmed c's basic.consume.
func (d *queueDest) registered(c *consumer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c.consuming = true
	d.changes++
}

func (d *queueDest) leave(c *consumer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.live[c] {
		return
	}
	delete(d.live, c)
	if !c.autoAck {
		d.departed = append(d.departed, c)
	}
	d.changes++
}

// Package nats runs dqbench against NATS JetStream with nats.go's
// jetstream client: nats-server in-process (mode embedded, the real server
// as a library, JetStream on a temporary store directory) or a running
// server with JetStream (mode external).
//
// Each variant gets its own stream, dqbench-NAME, capturing the subjects
// dqbench.NAME.>, and one durable pull consumer on it. Intent i is
// published to dqbench.NAME.i (the subject carries the message key), with
// the Nats-Msg-Id header the settings' msg_id says; the stream's sequence
// number is the delivery's position. A consumer acks with AckSync (the
// server confirms the ack: ack: sync, the default), so the backlog is exact
// once Ack returns, or with a plain Ack (ack: plain; the backlog may be
// high for a moment); with ack: auto the consumer has the AckNone policy
// (at-most-once).
package nats

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/leftover"
	"github.com/dqbench/dqbench/netfault"
)

// dialTimeout bounds the TCP connect and the NATS handshake: an
// unreachable server fails the run within 2 s.
const dialTimeout = 1500 * time.Millisecond

// startHint says how to get a NATS with JetStream.
const startHint = `start one with "nats-server -js" (Debian: apt-get install nats-server), or use mode: embedded`

// Broker is a NATS server with JetStream: embedded or external.
type Broker struct {
	url      string // nats://host:port
	settings catalog.NATSSettings
	srv      *server.Server // embedded only
	storeDir string         // embedded only: removed on Close
	// throwaway: a managed cluster started for this run, which takes its
	// streams with it when it stops: none is noted in the leftover ledger.
	throwaway bool
	nc        *nats.Conn // admin: streams, consumers, backlog
	// sec are the options of the broker's tls and auth (external only),
	// which every client connection gets.
	sec []nats.Option
	js  jetstream.JetStream

	// net is the in-process toxiproxy producers connect through when a
	// fault needs it (confirm-lost), started on first use.
	netMu sync.Mutex
	net   *netfault.Layer
}

var _ brokers.Broker = (*Broker)(nil)

// Open starts the embedded server, or connects to the first of
// cfg.Addresses that answers with JetStream.
func Open(ctx context.Context, cfg brokers.Config) (brokers.Broker, error) {
	settings := new(catalog.NATSSettings)
	if s, ok := cfg.Settings.(*catalog.NATSSettings); ok && s != nil {
		*settings = *s
	}
	settings.Defaults()
	switch cfg.Mode {
	case catalog.External:
		return connectExternal(ctx, cfg.Addresses, *settings)
	case catalog.Managed:
		return openManaged(ctx, *settings)
	}
	return startEmbedded(*settings)
}

// startEmbedded runs nats-server in-process on a loopback port of its own
// choosing, with JetStream on a fresh temporary directory.
func startEmbedded(settings catalog.NATSSettings) (*Broker, error) {
	dir, err := leftover.MkdirTemp("dqbench-nats-")
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: store directory: %w", err)
	}
	fail := func() {
		if os.RemoveAll(dir) == nil {
			leftover.Forget(leftover.Entry{Kind: leftover.Dir, Name: dir})
		}
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "dqbench-embedded",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		fail()
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		fail()
		return nil, errors.New("embedded NATS: the server did not start within 10s")
	}
	b := &Broker{url: srv.ClientURL(), settings: settings, srv: srv, storeDir: dir}
	if b.nc, b.js, err = connect(context.Background(), b.url, "dqbench-admin", true); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// connectExternal uses the first of addrs that answers with JetStream.
func connectExternal(ctx context.Context, addrs []string, settings catalog.NATSSettings) (*Broker, error) {
	if len(addrs) == 0 {
		k, _ := catalog.LookupBroker(catalog.NATS)
		addrs = []string{k.DefaultAddress}
	}
	sec, err := secureOptions(settings.Security)
	if err != nil {
		return nil, err
	}
	var errs []string
	hint := startHint
	for _, a := range addrs {
		nc, js, err := connect(ctx, a, "dqbench-admin", true, sec...)
		if err == nil {
			return &Broker{url: a, settings: settings, nc: nc, js: js, sec: sec}, nil
		}
		if errors.Is(err, errTLS) && settings.TLS == nil && !catalog.UsesTLS(nil, []string{a}) {
			// nats.go turns to TLS by itself when the server requires it.
			return nil, fmt.Errorf("%w (the server requires TLS, which a nats:// address without broker tls gets with the system's CAs; add broker tls with the server's CA in tls.ca)", err)
		}
		if errors.Is(err, errNoJetStream) || errors.Is(err, errRefusedLogin) || errors.Is(err, errTLS) {
			return nil, err // it answered: no "start one"
		}
		errs = append(errs, err.Error())
		if strings.HasSuffix(err.Error(), silent) {
			hint = "check that the address is a NATS server's client port (nats://HOST:PORT) and that the server is not overloaded"
		}
	}
	return nil, fmt.Errorf("%w: %s; %s", brokers.ErrUnreachable, strings.Join(errs, "; "), hint)
}

// errNoJetStream marks a NATS server that answers without JetStream,
// errRefusedLogin one that refused the login, and errTLS one whose TLS
// did not match dqbench's (not trusted, or TLS on one side only).
var (
	errNoJetStream  = errors.New("JetStream is not enabled")
	errRefusedLogin = errors.New("refused")
	errTLS          = errors.New("TLS failed")
)

// connect opens a connection named name to url and checks that JetStream
// answers. reconnect: the client reconnects after a broken connection (the
// producer and the admin connection); a consumer's connection does not, so
// a broken one ends the consumer instance as a crash would.
func connect(ctx context.Context, url, name string, reconnect bool, extra ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	masked := catalog.MaskURLs(url) // a list of URLs, each masked
	// Parsed with the password masked first: nats.go's error would quote
	// the URL, or a piece of the password as a port.
	for _, u := range strings.Split(url, ",") {
		if _, err := catalog.ParseURL(u); err != nil {
			return nil, nil, fmt.Errorf("NATS URL %s: %v", catalog.MaskURL(u), err)
		}
	}
	opts := append([]nats.Option{nats.Name(name), nats.Timeout(dialTimeout)}, extra...)
	if strings.Contains(url, ",") {
		// A managed cluster's URLs, the node leading every stream first:
		// each client connects to it, and a client whose node dies
		// reconnects to the next, not to a random one (the counts do not
		// depend on a pick).
		opts = append(opts, nats.DontRandomize())
	}
	if !reconnect {
		opts = append(opts, nats.NoReconnect())
	} else {
		opts = append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	}
	nc, err := nats.Connect(url, opts...)
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
		return nil, nil, fmt.Errorf("%w: NATS at %s %w the login (%v): wrong user, password, token or nkey; fix broker auth (or the URL's user and password)", brokers.ErrUnreachable, masked, errRefusedLogin, err)
	}
	if why := tlsWhy(err); why != "" {
		return nil, nil, fmt.Errorf("%w: NATS at %s: %w: %s", brokers.ErrUnreachable, masked, errTLS, why)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach NATS at %s: %s", masked, why(url, err))
	}
	js, err := jetstream.New(nc)
	if err == nil {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = js.AccountInfo(actx)
		cancel()
	}
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		nc.Close()
		return nil, nil, fmt.Errorf("NATS at %s answers, but %w (%v); restart it with -js, or add jetstream {} to its config", masked, errNoJetStream, err)
	case err != nil:
		nc.Close()
		return nil, nil, fmt.Errorf("NATS at %s: JetStream did not answer: %w", masked, err)
	}
	return nc, js, nil
}

// tlsWhy says why a connect failed in TLS, or "": TLS on one side only
// (nats.go asks for it, or the server does), a certificate not trusted.
func tlsWhy(err error) string {
	switch {
	case errors.Is(err, nats.ErrSecureConnRequired):
		return "the server requires TLS and dqbench connected without it; use a tls:// address or add broker tls (with the CA in tls.ca)"
	case errors.Is(err, nats.ErrSecureConnWanted):
		return "dqbench asked for TLS (a tls:// address or broker tls) and the server does not offer it on this port; use a nats:// address and leave out broker tls, or give the server's TLS port"
	}
	return brokers.TLSFailure(err)
}

// why says why a connect to url failed: nats.go reports only "no servers
// available" when every dial failed, so a short dial says which way
// (refused, no route) or that the port answered and the handshake did not.
func why(url string, err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "read" && op.Timeout() {
		return silent
	}
	if !errors.Is(err, nats.ErrNoServers) {
		return err.Error()
	}
	u, perr := neturl.Parse(url)
	if perr != nil {
		return err.Error()
	}
	c, derr := net.DialTimeout("tcp", u.Host, 300*time.Millisecond)
	if derr != nil {
		if errors.As(derr, &op) && op.Err != nil {
			return op.Err.Error()
		}
		return derr.Error()
	}
	c.Close()
	return silent
}

// silent is why a connect failed to a port that accepts and never speaks
// NATS.
const silent = "the port accepted the TCP connection but nothing answered the NATS handshake in time"

// Name says which NATS this is.
func (b *Broker) Name() string {
	if b.srv != nil {
		return "nats (embedded nats-server " + server.VERSION + ")"
	}
	return "nats " + catalog.MaskURL(b.url)
}

// ServerVersion is what the server says it is.
func (b *Broker) ServerVersion() string {
	if b.nc == nil {
		return ""
	}
	return "nats-server " + b.nc.ConnectedServerVersion()
}

// Close closes the admin connection, stops the in-process toxiproxy if
// one was started, and stops an embedded server, removing its store
// directory.
func (b *Broker) Close() error {
	if b.nc != nil {
		b.nc.Close()
	}
	b.netMu.Lock()
	if b.net != nil {
		_ = b.net.Close()
		b.net = nil
	}
	b.netMu.Unlock()
	if b.srv == nil {
		return nil
	}
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
	if err := os.RemoveAll(b.storeDir); err != nil {
		return fmt.Errorf("embedded NATS: remove %s: %w", b.storeDir, err)
	}
	leftover.Forget(leftover.Entry{Kind: leftover.Dir, Name: b.storeDir})
	return nil
}

// note records a stream this run created on an external server in the
// leftover ledger, so that a killed run's stream is found and deleted
// later (dqbench clean); forget removes it once deleted.
func (b *Broker) note(stream string) {
	if b.srv == nil && !b.throwaway {
		leftover.Note(leftover.Entry{Kind: leftover.Stream, Where: b.url, Name: stream})
	}
}

func (b *Broker) forget(stream string) {
	if b.srv == nil && !b.throwaway {
		leftover.Forget(leftover.Entry{Kind: leftover.Stream, Where: b.url, Name: stream})
	}
}

// streamPrefix starts the name of every stream dqbench creates; no other
// stream is ever deleted by a sweep.
const streamPrefix = "dqbench-"

// DeleteStream deletes stream on the NATS server at url: what dqbench
// clean does with a stream a killed run left. A name without streamPrefix
// is refused.
func DeleteStream(ctx context.Context, url, stream string) error {
	if !strings.HasPrefix(stream, streamPrefix) {
		return fmt.Errorf("stream %q: not one dqbench makes (%s*), so it is left alone", stream, streamPrefix)
	}
	nc, js, err := connect(ctx, url, "dqbench-clean", false)
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := js.DeleteStream(ctx, stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	return nil // deleted, or gone already
}

// safe maps a destination name to the characters stream names and subject
// tokens allow.
func safe(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '-'
	}, name)
}

// durable is the name of each variant's pull consumer (one per stream).
const durable = "dqbench"

// Open creates the variant's stream and its durable pull consumer.
func (b *Broker) Open(ctx context.Context, spec brokers.DestinationSpec) (brokers.Destination, error) {
	settings := b.settings
	if s, ok := spec.Settings.(*catalog.NATSSettings); ok && s != nil {
		settings = *s
		settings.Defaults()
	}
	name := safe(spec.Name)
	d := &dest{
		b: b, spec: spec, settings: settings,
		stream: streamPrefix + name, prefix: "dqbench." + name + ".",
		ackNone: spec.AutoAck,
	}
	storage := jetstream.FileStorage
	if settings.Storage == catalog.MemoryStorage {
		storage = jetstream.MemoryStorage
	}
	if _, err := b.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       d.stream,
		Subjects:   []string{d.prefix + ">"},
		Storage:    storage,
		Replicas:   settings.Replicas,
		Duplicates: settings.DuplicateWindow.D(),
	}); err != nil {
		return nil, fmt.Errorf("create stream %s on %s: %w", d.stream, b.Name(), err)
	}
	b.note(d.stream)
	cc := jetstream.ConsumerConfig{
		Durable:       durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       settings.AckWait.D(),
		MaxDeliver:    settings.MaxDeliver,
		MaxAckPending: settings.MaxAckPending,
	}
	if d.ackNone {
		cc.AckPolicy = jetstream.AckNonePolicy
	}
	cons, err := b.js.CreateConsumer(ctx, d.stream, cc)
	if err != nil {
		err = fmt.Errorf("create consumer on stream %s on %s: %w", d.stream, b.Name(), err)
		return nil, errors.Join(err, d.Close(ctx))
	}
	d.cons = cons
	if spec.DeadLetter {
		if err := d.watchGiveUps(); err != nil {
			return nil, errors.Join(err, d.Close(ctx))
		}
	}
	return d, nil
}

// subject is where intent key is published.
func (d *dest) subject(key string) string { return d.prefix + key }

// intentOf reads the intent back from a delivery's subject.
func (d *dest) intentOf(subject string) (int, error) {
	key, ok := strings.CutPrefix(subject, d.prefix)
	if !ok {
		return 0, fmt.Errorf("subject %q is not under %s", subject, d.prefix)
	}
	return brokers.ParseKey(key)
}

// msgID is the Nats-Msg-Id of one send of m ("" for none).
func (d *dest) msgID(m brokers.Message) string {
	switch d.settings.MsgID {
	case catalog.NoMsgID:
		return ""
	case catalog.PerSendMsgID:
		return m.Key + "." + strconv.Itoa(m.Attempt)
	}
	return m.Key
}

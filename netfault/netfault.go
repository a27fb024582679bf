// Package netfault is dqbench's network fault layer: toxiproxy in front of
// a broker client's connections. By default it runs an in-process
// toxiproxy server (github.com/Shopify/toxiproxy/v2), so nothing extra is
// installed; Connect drives an external one (docker compose) instead. Both
// are driven through toxiproxy's HTTP client, by the same code.
//
// Toxiproxy's own toxics (latency, reset_peer, timeout, bandwidth) work on
// bytes, and its toxicity is an unseeded coin. A fault that must hit one
// chosen message needs a toxic that understands the broker's protocol:
// AddFilter installs a protocol-aware toxic, a Filter that sees one
// direction of a connection as a byte stream and decides, frame by frame,
// what reaches the other side (packages netfault/amqp, netfault/mqtt and
// netfault/nats have AMQP 0-9-1's, MQTT's and NATS's).
// Such toxics run inside this process, so only the in-process server has
// them.
//
// The layer knows no broker: an adapter asks for a proxy in front of an
// upstream address, dials the proxy's address instead, and installs toxics.
package netfault

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	tpclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/dqbench/dqbench/catalog"
	"github.com/rs/zerolog"
)

// ErrNeedsEmbedded: a protocol-aware toxic runs inside this process, so an
// external toxiproxy cannot run it.
var ErrNeedsEmbedded = errors.New("a protocol-aware toxic runs only in dqbench's in-process toxiproxy (not with --toxiproxy)")

// Layer is one toxiproxy server and the proxies made on it.
type Layer struct {
	client   *tpclient.Client
	url      string               // the API's URL
	endpoint string               // for messages
	api      *toxiproxy.ApiServer // the in-process server, nil for an external one
	server   *http.Server
	stopped  chan struct{} // closed when server's Serve returned
	host     string        // where the proxies listen
	seq      atomic.Int64  // numbers proxies
}

// Start runs an in-process toxiproxy server on a free local port.
func Start() (*Layer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the in-process toxiproxy: %w", err)
	}
	registerToxics()
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	l := &Layer{
		endpoint: "in-process toxiproxy",
		server:   &http.Server{Handler: api.Routes(), ReadHeaderTimeout: 10 * time.Second},
		stopped:  make(chan struct{}),
		host:     "127.0.0.1",
	}
	go func() {
		defer close(l.stopped)
		_ = l.server.Serve(ln)
	}()
	l.url = "http://" + ln.Addr().String()
	l.client = tpclient.NewClient(l.url)
	l.api = api
	return l, nil
}

// Connect drives the external toxiproxy whose API is at url
// (http://HOST:8474); its proxies listen on HOST, which must be reachable
// from here, and reach the upstream addresses as they are given.
func Connect(url string) (*Layer, error) {
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	masked := catalog.MaskURL(url)
	u, err := catalog.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("toxiproxy URL %s: %v", masked, err)
	}
	c := tpclient.NewClient(url)
	if _, err := c.Version(); err != nil {
		return nil, fmt.Errorf("cannot reach toxiproxy at %s: %s; start one with \"docker compose up -d toxiproxy\", or leave --toxiproxy out to use the in-process one", masked, catalog.MaskURLs(err.Error()))
	}
	return &Layer{client: c, url: url, endpoint: "toxiproxy at " + masked, host: u.Hostname()}, nil
}

// Embedded reports whether the server runs in this process (and so has the
// protocol-aware toxics).
func (l *Layer) Embedded() bool { return l.server != nil }

// URL is the toxiproxy's API URL.
func (l *Layer) URL() string { return l.url }

// Name says which toxiproxy this is.
func (l *Layer) Name() string { return l.endpoint }

// Close stops an in-process server (closing every proxied connection) or
// forgets an external one (its proxies are deleted by their owners).
func (l *Layer) Close() error {
	if l.server == nil {
		return nil
	}
	l.api.Collection.Clear()
	err := l.server.Close()
	<-l.stopped
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Proxy is one toxiproxy proxy: clients dial Addr instead of the upstream.
type Proxy struct {
	l     *Layer
	p     *tpclient.Proxy
	Addr  string // host:port to dial
	names []string
}

// Proxy creates a proxy in front of upstream (host:port), named from name
// and a number so that names never collide.
func (l *Layer) Proxy(name, upstream string) (*Proxy, error) {
	full := fmt.Sprintf("dqbench-%s-%d", name, l.seq.Add(1))
	p, err := l.client.CreateProxy(full, net.JoinHostPort(l.host, "0"), upstream)
	if err != nil {
		return nil, fmt.Errorf("%s: create proxy %s to %s: %w", l.endpoint, full, upstream, err)
	}
	addr := p.Listen
	if h, port, err := net.SplitHostPort(addr); err == nil && (h == "" || h == "0.0.0.0" || h == "::") {
		addr = net.JoinHostPort(l.host, port)
	}
	return &Proxy{l: l, p: p, Addr: addr}, nil
}

// Stream is the direction a toxic acts on.
type Stream string

// Directions, as toxiproxy names them.
const (
	Upstream   Stream = "upstream"   // client to server
	Downstream Stream = "downstream" // server to client
)

// Toxic is one of toxiproxy's own toxics: its type ("latency",
// "reset_peer", "timeout", "bandwidth", ...) and attributes, as in
// toxiproxy's README. It always acts (toxicity 1): when it acts is decided
// by whoever adds and removes it.
type Toxic struct {
	Name       string
	Type       string
	Stream     Stream
	Attributes map[string]any
}

// Add installs t on the proxy.
func (p *Proxy) Add(t Toxic) error {
	if _, err := p.p.AddToxic(t.Name, t.Type, string(t.Stream), 1, tpclient.Attributes(t.Attributes)); err != nil {
		return fmt.Errorf("%s: add toxic %s to proxy %s: %w", p.l.endpoint, t.Name, p.p.Name, err)
	}
	return nil
}

// Remove removes the toxic named name.
func (p *Proxy) Remove(name string) error {
	if err := p.p.RemoveToxic(name); err != nil {
		return fmt.Errorf("%s: remove toxic %s from proxy %s: %w", p.l.endpoint, name, p.p.Name, err)
	}
	return nil
}

// Disable closes every connection through the proxy and refuses new ones
// until Enable (a partition of this one client).
func (p *Proxy) Disable() error { return p.p.Disable() }

// Enable lets connections through again.
func (p *Proxy) Enable() error { return p.p.Enable() }

// AddFilter installs a protocol-aware toxic on one direction of the proxy:
// every connection through it gets its own Filter from newFilter. Only the
// in-process server has these toxics (ErrNeedsEmbedded otherwise).
func (p *Proxy) AddFilter(name string, s Stream, newFilter NewFilter) error {
	if !p.l.Embedded() {
		return fmt.Errorf("%s: %w", name, ErrNeedsEmbedded)
	}
	id := filters.add(newFilter)
	p.names = append(p.names, id)
	return p.Add(Toxic{Name: name, Type: filterToxicType, Stream: s, Attributes: map[string]any{"filter": id}})
}

// Close deletes the proxy, closing the connections through it, and
// forgets its filters.
func (p *Proxy) Close(ctx context.Context) error {
	for _, id := range p.names {
		filters.remove(id)
	}
	p.names = nil
	errc := make(chan error, 1)
	go func() { errc <- p.p.Delete() }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("%s: delete proxy %s: %w", p.l.endpoint, p.p.Name, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: delete proxy %s: %w", p.l.endpoint, p.p.Name, ctx.Err())
	}
}

// StuckInToxiproxy names the functions where toxiproxy v2.12.0 can leave
// a goroutine blocked for the life of the process, for tests that check
// for leaks (goleak.IgnoreTopFunction). When a proxied connection's writer
// fails (the peer went away first, as when a client is killed), the link
// stops reading its last channel, and a toxic with a chunk in hand blocks
// sending it: toxiproxy's toxics do not select on the link's end while
// sending (toxics/noop.go). One goroutine per such connection, holding one
// chunk; nothing outside the process stays.
var StuckInToxiproxy = []string{
	"github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe",
	"github.com/Shopify/toxiproxy/v2/stream.(*ChanWriter).Write",
	"github.com/dqbench/dqbench/netfault.(*filterToxic).Pipe",
}

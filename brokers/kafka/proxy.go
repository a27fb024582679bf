package kafka

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/netfault"
	nfkafka "github.com/dqbench/dqbench/netfault/kafka"
)

// route is the way a group of dqbench's clients reaches a real Kafka
// (managed or external): a relay in this process in front of each broker,
// made when a client is first told of it, each connection through the
// Kafka protocol filter (netfault/kafka). The filter rewrites the broker
// addresses in the cluster's answers (Metadata, FindCoordinator, ...) to
// the relays', so the clients never dial a broker themselves, and the
// cluster needs no change to its advertised listeners; and it acts on the
// chosen requests and responses of the faults that need the wire (a lost
// produce response, a producer killed with a request unanswered).
//
// Each variant's producer has a route of its own, so a filter set sees
// only the requests of the clients it is for; the consumers of a variant
// share one.
type route struct {
	fs *nfkafka.Filters

	mu     sync.Mutex
	relays map[string]*netfault.Relay // the broker's host:port → its relay
	closed bool
	// watch, when set, is told of every connection of the route's
	// clients as it opens and once it ended.
	watch *connWatch
	// The network faults on, for a relay started meanwhile: until when
	// the route is dark or slow, and how slow.
	darkUntil, slowUntil time.Time
	latency              time.Duration
}

// newRoute makes a route whose connections go through fs (which it gives
// its address rewriting).
func newRoute(fs *nfkafka.Filters) *route {
	if fs == nil {
		fs = new(nfkafka.Filters)
	}
	r := &route{fs: fs, relays: map[string]*netfault.Relay{}}
	fs.Rewrite = r.rewrite
	return r
}

// seeds returns the relays' addresses for the brokers at upstream: what
// the clients of the route are given as seeds.
func (r *route) seeds(upstream []string) ([]string, error) {
	out := make([]string, len(upstream))
	for i, u := range upstream {
		a, err := r.relay(u)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// relay returns the address of the relay in front of the broker at
// upstream, starting it when it is the first client told of the broker.
func (r *route) relay(upstream string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", errRouteClosed
	}
	if rl, ok := r.relays[upstream]; ok {
		return rl.Addr, nil
	}
	rl, err := netfault.NewRelay(upstream, r.conn)
	if err != nil {
		return "", err
	}
	r.relays[upstream] = rl
	if d := time.Until(r.darkUntil); d > 0 {
		rl.Blackhole(d)
	}
	if d := time.Until(r.slowUntil); d > 0 {
		rl.Slow(r.latency, d)
	}
	return rl.Addr, nil
}

// blackhole drops everything between the route's clients and the cluster,
// both ways, for d; then closes every connection (netfault.Relay.Blackhole):
// a partition of the clients of the route.
func (r *route) blackhole(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.darkUntil = time.Now().Add(d)
	for _, rl := range r.relays {
		rl.Blackhole(d)
	}
}

// slow delays every piece of data between the route's clients and the
// cluster by latency, both ways, for d.
func (r *route) slow(latency, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latency, r.slowUntil = latency, time.Now().Add(d)
	for _, rl := range r.relays {
		rl.Slow(latency, d)
	}
}

// reset resets every connection of the route's clients.
func (r *route) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rl := range r.relays {
		rl.Reset()
	}
}

// conn makes the filters of one client connection (netfault.ConnFilters),
// telling the watch of it.
func (r *route) conn(remote net.Addr) (up, down netfault.Filter, closed func()) {
	up, down, closed = r.fs.Conn(remote)
	if w := r.watch; w != nil {
		w.opened(remote)
		inner := closed
		closed = func() {
			if inner != nil {
				inner()
			}
			w.ended(remote)
		}
	}
	return up, down, closed
}

// connWatch is told of a route's connections.
type connWatch struct {
	opened, ended func(remote net.Addr)
}

var errRouteClosed = errors.New("kafka: the run's relays are closed")

// rewrite is the filter's Rewrite: a broker's advertised address becomes
// its relay's. Should no relay start (the route closing), the client is
// told the broker's own address, and its connection goes around the
// faults rather than nowhere.
func (r *route) rewrite(_ int32, host string, port int32) (string, int32) {
	a, err := r.relay(net.JoinHostPort(host, strconv.Itoa(int(port))))
	if err != nil {
		return host, port
	}
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return host, port
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return host, port
	}
	return h, int32(n)
}

// Close closes every relay of the route and the connections through them.
func (r *route) Close() error {
	r.mu.Lock()
	r.closed = true
	relays := r.relays
	r.relays = nil
	r.mu.Unlock()
	var errs []error
	for _, rl := range relays {
		errs = append(errs, rl.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return errors.Join(brokers.ErrCleanup, err)
	}
	return nil
}

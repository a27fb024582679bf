// Package kafka is the protocol-aware filter for the Kafka wire protocol
// (every frame a big-endian int32 size and a body; a request's header
// names its API key, version, correlation id and client id, a response's
// only the correlation id). In front of a broker's connections it
//   - rewrites the broker addresses responses hand the client (Metadata,
//     FindCoordinator, DescribeCluster, and the new-leader hints of
//     Produce, Fetch, ShareFetch and ShareAcknowledge), so that a client
//     given one proxy address reaches every broker through its proxy while
//     the cluster advertises its own listeners (Filters.Rewrite);
//   - loses the responses of chosen produce requests (LoseProduce);
//   - drops, cuts after or delays chosen requests and responses by API
//     key (Rule);
//   - shows every frame to an observer (Filters.Observe).
//
// A response can only be read knowing its request's key and version, so
// the two directions of a connection share a table: correlation id → the
// request and what is to become of its response. That is why the filters
// run in a netfault.Relay, whose ConnFilters (Filters.Conn) makes both
// directions of a connection at once. Toxiproxy makes each direction's
// filter on its own (a NewFilter called in each direction's goroutine) and
// tells it nothing of the connection: pairing the two by the order they
// are made races when clients connect at once, and pairing them by
// correlation id collides, since a client numbers its requests from 0 on
// every connection. Renumbering requests to ids unique to the proxy would
// pair them, but then a direction that gave up understanding the stream
// (below) would leave the other's ids unmapped and break the connection,
// and a filter must never break a working connection on its own.
//
// A filter that meets what it cannot make sense of (a size field below
// zero or above 64 MiB, a header too short or with negative fields) passes
// the connection's bytes on unread from there, in both directions; so it
// does after a SaslHandshake v0, which raw SASL tokens follow. A response
// whose request the filter has not seen passes as it is.
package kafka

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dqbench/dqbench/netfault"
)

// Filters is the filter set of the connections of one or more relays:
// what they rewrite, lose, drop and delay, and who watches. Set the fields
// before the first connection and leave them; the callbacks are called
// from the connections' goroutines, at once.
type Filters struct {
	// Rewrite, when set, gives each broker entry of a response that names
	// brokers (but one naming no broker, node -1) the address the client
	// is to dial instead. The response is re-encoded at its version, its
	// header kept; one whose entries Rewrite leaves as they were passes
	// byte for byte. (Produce and Fetch responses are read whole for their
	// new-leader hints, which are usually absent.)
	Rewrite func(nodeID int32, host string, port int32) (newHost string, newPort int32)
	// LoseProduce, when set, loses the responses of chosen produce
	// requests.
	LoseProduce *LoseProduce
	// Rules act on requests and responses by API key. A request is offered
	// to the rules of its key in order until one picks it; a produce
	// request whose response LoseProduce loses is offered to none.
	Rules []Rule
	// Response, when set, is shown each response to a request the filter
	// saw (the frame whole, size field included; h is its request's
	// header) before it goes on; false withholds it and cuts the
	// connection. It may block: nothing more reaches the client
	// meanwhile.
	Response func(remote net.Addr, h Header, frame []byte) bool
	// Observe, when set, is shown every frame that passes or is withheld,
	// as it leaves (or would have): requests, and the responses to
	// requests the filter saw.
	Observe func(Event)

	sightings Sightings // LoseProduce's when it has none

	mu   sync.Mutex
	seen map[kmsg.Key]int // requests with a rule, by key
}

var _ netfault.ConnFilters = (*Filters)(nil).Conn

// Conn makes the two filters of one client connection: up on the
// client-to-broker bytes, down on the broker-to-client ones. It is the
// netfault.ConnFilters of a relay in front of a broker (one Filters may
// serve the relays of every broker of a cluster).
func (fs *Filters) Conn(remote net.Addr) (up, down netfault.Filter, closed func()) {
	c := &conn{fs: fs, remote: remote, pending: map[int32]pending{}}
	return &upFilter{c: c}, &downFilter{c: c, stop: make(chan struct{})}, nil
}

// conn is one client connection: the requests awaiting their responses.
type conn struct {
	fs     *Filters
	remote net.Addr
	// lost: one direction met a stream it cannot read; both pass
	// everything from then on.
	lost atomic.Bool

	mu      sync.Mutex
	pending map[int32]pending // by correlation id
}

// pending is a request awaiting its response, and what becomes of it.
type pending struct {
	h     Header
	drop  bool
	delay time.Duration
	// lost: the intents of a produce request whose response LoseProduce
	// loses, for its Lost when the response comes.
	lost []int
	// quiet: drop is the cut after the request (CutAfterRequest), which
	// the trace showed already.
	quiet bool
}

func (c *conn) put(p pending) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[p.h.CorrelationID] = p
}

func (c *conn) take(correlationID int32) (pending, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[correlationID]
	delete(c.pending, correlationID)
	return p, ok
}

// verdict says how a direction goes on after a frame.
type verdict int

const (
	next   verdict = iota
	cut            // nothing more passes: the connection ends
	giveUp         // the stream is not understood any more: the rest passes unread
)

// run passes b through s, handing each complete frame to frame, which
// appends what of it to forward to out and gives its verdict.
func (c *conn) run(s *Splitter, b []byte, frame func(out, f []byte) ([]byte, verdict)) (out []byte, cutNow bool) {
	if c.lost.Load() {
		return s.Rest(b), false
	}
	v := next
	ok := s.Split(b, func(f []byte) bool {
		out, v = frame(out, f)
		return v == next
	})
	switch {
	case v == cut:
		return out, true
	case v == giveUp || !ok:
		c.lost.Store(true)
		return append(out, s.Rest(nil)...), false
	}
	return out, false
}

type upFilter struct {
	s Splitter
	c *conn
}

// Filter passes the client's requests, noting each one that will be
// answered, and acts on those a fault picks.
func (u *upFilter) Filter(b []byte) ([]byte, bool) { return u.c.run(&u.s, b, u.c.request) }

func (c *conn) request(out, f []byte) ([]byte, verdict) {
	h, body, ok := readRequest(f)
	if !ok {
		return append(out, f...), giveUp
	}
	act, p, answered := c.fs.judge(c.remote, h, body)
	ev := Event{Header: h, Remote: c.remote, Size: len(f)}
	if act == DropRequest {
		ev.Fate = Dropped
		c.fs.observe(ev)
		return out, cut
	}
	if act == CutAfterRequest {
		// Its answer must not get through should the broker send it
		// before the relay has closed the connection: it, and what
		// follows, is withheld (unseen: the connection was cut).
		p.drop, p.quiet = true, true
	}
	if answered {
		c.put(p)
	}
	out = append(out, f...)
	if act == CutAfterRequest {
		ev.Fate = CutAfter
		c.fs.observe(ev)
		return out, cut
	}
	c.fs.observe(ev)
	if h.Key == kmsg.SASLHandshake && h.Version == 0 {
		return out, giveUp
	}
	return out, next
}

// judge decides what becomes of a request (act: DropRequest,
// CutAfterRequest, or 0 to forward it) and of its response (p); answered
// is false when no response will come.
func (fs *Filters) judge(remote net.Addr, h Header, body []byte) (act Action, p pending, answered bool) {
	p.h, answered = h, true
	ruled := fs.ruled(h.Key)
	if !ruled && h.Key != kmsg.Produce {
		return 0, p, true
	}
	seen := 0
	if ruled {
		seen = fs.count(h.Key)
	}
	req := decode(h, body)
	if pr, ok := req.(*kmsg.ProduceRequest); ok {
		answered = pr.Acks != 0
		if fs.LoseProduce != nil {
			if hit, intents := fs.LoseProduce.judge(pr, answered, &fs.sightings); hit {
				p.drop, p.lost = true, intents
				return 0, p, answered
			}
		}
	}
	for _, r := range fs.Rules {
		if r.Key != h.Key {
			continue
		}
		onResponse := r.Action == DropResponse || r.Action == DelayResponse
		if onResponse && !answered {
			continue
		}
		if r.When != nil && !r.When(Request{Header: h, Remote: remote, Body: req, Seen: seen}) {
			continue
		}
		switch r.Action {
		case DropResponse:
			p.drop = true
		case DelayResponse:
			p.delay = r.Delay
		default:
			act = r.Action
		}
		return act, p, answered
	}
	return 0, p, answered
}

// ruled says whether a rule names key.
func (fs *Filters) ruled(key kmsg.Key) bool {
	for _, r := range fs.Rules {
		if r.Key == key {
			return true
		}
	}
	return false
}

// count counts one more request of key and returns the count.
func (fs *Filters) count(key kmsg.Key) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.seen == nil {
		fs.seen = map[kmsg.Key]int{}
	}
	fs.seen[key]++
	return fs.seen[key]
}

func (fs *Filters) observe(ev Event) {
	if fs.Observe != nil {
		fs.Observe(ev)
	}
}

// downFilter is paced (netfault.PacedFilter) only so that a delay can send
// the responses before the delayed one first, and end with the connection.
type downFilter struct {
	s    Splitter
	c    *conn
	dst  io.Writer // the client, once the relay started the filter
	stop chan struct{}
	once sync.Once
}

var _ netfault.PacedFilter = (*downFilter)(nil)

func (d *downFilter) Start(dst io.Writer) { d.dst = dst }

func (d *downFilter) Stop() { d.once.Do(func() { close(d.stop) }) }

// Filter passes the broker's responses, rewriting the broker addresses in
// them, and acts on those a fault picked when their request passed.
func (d *downFilter) Filter(b []byte) ([]byte, bool) { return d.c.run(&d.s, b, d.response) }

func (d *downFilter) response(out, f []byte) ([]byte, verdict) {
	id, ok := correlationID(f)
	if !ok {
		return append(out, f...), giveUp
	}
	p, ok := d.c.take(id)
	if !ok {
		return append(out, f...), next
	}
	if p.quiet {
		return out, cut
	}
	ev := Event{Header: p.h, Remote: d.c.remote, Response: true, Size: len(f)}
	if !p.drop && d.c.fs.Response != nil && !d.c.fs.Response(d.c.remote, p.h, f) {
		p.drop = true // withheld by the watcher
	}
	if p.drop {
		if p.lost != nil {
			d.c.fs.LoseProduce.Lost(p.lost)
		}
		ev.Fate = Dropped
		d.c.fs.observe(ev)
		return out, cut
	}
	if p.delay > 0 {
		if out, ok = d.wait(out, p.delay); !ok {
			return out, cut
		}
		ev.Fate = Delayed
	}
	if g, ok := d.c.fs.rewrite(p.h, f); ok {
		f = g
		if ev.Fate == Passed {
			ev.Fate = Rewritten
		}
	}
	d.c.fs.observe(ev)
	return append(out, f...), next
}

// wait holds the stream back for delay. What came before goes out first
// when the relay gave the filter the client to write to; the wait ends
// early (false) when the connection does.
func (d *downFilter) wait(out []byte, delay time.Duration) ([]byte, bool) {
	if d.dst != nil && len(out) > 0 {
		if _, err := d.dst.Write(out); err != nil {
			return nil, false
		}
		out = nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return out, true
	case <-d.stop:
		return out, false
	}
}

package netfault

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Relay is a plain TCP relay in front of one upstream address, run in this
// process, whose filters know which client connection they act on: what a
// process variant needs to tell which consumer process a delivery or an
// ack belongs to (the client's address names its socket). A toxiproxy
// toxic sees a connection's bytes but not the connection, so the
// per-client faults of dqbench's own clients use toxiproxy (one proxy per
// client), and a consumer outside dqbench, which opens what connections it
// likes, comes through a Relay.
type Relay struct {
	// Addr is the host:port the clients dial.
	Addr string

	upstream string
	filters  ConnFilters
	// hold keeps the relay's port bound while its listener is closed
	// (the upstream is down), so that no other socket takes it.
	hold io.Closer

	mu     sync.Mutex
	ln     net.Listener // nil while the upstream is down
	conns  map[net.Conn]bool
	closed bool
	done   chan struct{} // closed by Close: a probe stops
	wg     sync.WaitGroup

	// The network faults on the relay's connections (Blackhole, Slow):
	// until when each lasts, and the timer that ends a blackhole.
	net struct {
		sync.Mutex
		darkUntil, slowUntil time.Time
		latency              time.Duration
		lightUp              *time.Timer
	}
}

// ConnFilters makes the two filters of one client connection, from the
// client's address: up acts on the client-to-server bytes, down on the
// server-to-client ones (nil: pass everything). closed is called once
// both directions ended.
type ConnFilters func(remote net.Addr) (up, down Filter, closed func())

// PacedFilter is a Filter a relay hands the connection's other end to
// (Start), so that it writes each frame itself, as soon as it passes, and
// may hold the next one back (a flow-control window); and tells when the
// connection ends (Stop), so that one held back gives up. Its Filter then
// returns only what it did not write itself.
type PacedFilter interface {
	Filter
	Start(dst io.Writer)
	Stop()
}

// upstreamDialTimeout bounds a relay's dial to its upstream.
const upstreamDialTimeout = 5 * time.Second

// probeEvery is how often a relay whose upstream is down dials it, to
// listen again once it answers.
const probeEvery = 50 * time.Millisecond

// NewRelay listens on a free local port and relays every connection to
// upstream through the filters newFilters makes for it.
func NewRelay(upstream string, newFilters ConnFilters) (*Relay, error) {
	ln, err := listen("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start a relay to %s: %w", upstream, err)
	}
	r := &Relay{Addr: ln.Addr().String(), ln: ln, upstream: upstream, filters: newFilters, conns: map[net.Conn]bool{}, done: make(chan struct{})}
	if r.hold, err = holdPort(ln.Addr()); err != nil {
		ln.Close()
		return nil, fmt.Errorf("start a relay to %s: %w", upstream, err)
	}
	r.wg.Add(1)
	go r.accept(ln)
	return r, nil
}

func (r *Relay) accept(ln net.Listener) {
	defer r.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !r.track(c) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go r.serve(c)
	}
}

// track notes an open connection; false once the relay is closed.
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = true
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.conns, c)
}

// serve relays one client connection until either side ends or a filter
// cuts it.
func (r *Relay) serve(client net.Conn) {
	defer r.wg.Done()
	defer r.untrack(client)
	defer client.Close()
	up, down, closed := r.filters(client.RemoteAddr())
	if closed != nil {
		defer closed()
	}
	server, err := net.DialTimeout("tcp", r.upstream, upstreamDialTimeout)
	if err != nil {
		// The upstream is down. This client's dial was taken already: it
		// sees its connection reset rather than closed as by a server
		// that read nothing (kgo takes an EOF before the first answer
		// for missing TLS or SASL, and gives up). The next dials are
		// refused, as a dial to the dead server is (down).
		if tc, ok := client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		r.down()
		return
	}
	if !r.track(server) {
		server.Close()
		return
	}
	defer r.untrack(server)
	defer server.Close()
	for _, f := range []struct {
		f   Filter
		dst io.Writer
	}{{up, server}, {down, client}} {
		if p, ok := f.f.(PacedFilter); ok {
			p.Start(f.dst)
		}
	}
	done := make(chan struct{}, 2)
	go func() { r.pipe(server, client, up); done <- struct{}{} }()
	go func() { r.pipe(client, server, down); done <- struct{}{} }()
	<-done
	// One side ended or was cut: end both, as a proxy does.
	for _, f := range []Filter{up, down} {
		if p, ok := f.(PacedFilter); ok {
			p.Stop()
		}
	}
	client.Close()
	server.Close()
	<-done
}

// pipe copies from src to dst through f until src ends, a write fails or
// f cuts the stream. While the relay is dark (Blackhole) what is read is
// dropped, and a cut waits for the blackhole's end, which closes the
// connection; while it is slow (Slow) each piece waits its latency.
func (r *Relay) pipe(dst io.Writer, src io.Reader, f Filter) {
	buf := make([]byte, 32<<10)
	muted := false // cut in the dark: the rest is dropped until the close
	for {
		n, err := src.Read(buf)
		if n > 0 && !muted && !r.dark() {
			out, cut := buf[:n], false
			if f != nil {
				out, cut = f.Filter(buf[:n])
			}
			if r.dark() { // the filter's own fault turned the lights off
				muted, out, cut = cut, nil, false
			}
			if d := r.delay(); d > 0 && len(out) > 0 {
				time.Sleep(d)
			}
			if len(out) > 0 {
				if _, werr := dst.Write(out); werr != nil {
					return
				}
			}
			if cut {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// down closes the relay's listener, its upstream having refused a dial,
// so that the clients' dials are refused too until the upstream answers
// again (probe). Through a relay that took every dial, a client saw
// connections reset after they were made, where a dial to the dead
// server is refused: kgo forgets a dead group coordinator only on a
// failed dial, and went on sending to it, a consumer that never joined
// its group again after a node was killed.
func (r *Relay) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.ln == nil {
		return
	}
	r.ln.Close()
	r.ln = nil
	r.wg.Add(1)
	go r.probe()
}

// probe dials the upstream until it answers, then listens again on the
// relay's address.
func (r *Relay) probe() {
	defer r.wg.Done()
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-tick.C:
		}
		c, err := net.DialTimeout("tcp", r.upstream, probeEvery)
		if err != nil {
			continue
		}
		c.Close()
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		ln, err := listen(r.Addr)
		if err != nil {
			r.mu.Unlock()
			continue // the port held by another listener a moment longer
		}
		r.ln = ln
		r.wg.Add(1)
		go r.accept(ln)
		r.mu.Unlock()
		return
	}
}

// dark says whether a blackhole is on.
func (r *Relay) dark() bool {
	r.net.Lock()
	defer r.net.Unlock()
	return time.Now().Before(r.net.darkUntil)
}

// delay is the latency each piece of data waits now (0: none).
func (r *Relay) delay() time.Duration {
	r.net.Lock()
	defer r.net.Unlock()
	if time.Now().Before(r.net.slowUntil) {
		return r.net.latency
	}
	return 0
}

// Blackhole drops everything on every connection through the relay, both
// ways, those opened meanwhile included, for d; then it closes them all,
// as a client's TCP gives up on a silent peer (a partition). The relay
// goes on accepting, and connections made after that pass again. A
// blackhole on already lasts d from now.
func (r *Relay) Blackhole(d time.Duration) {
	r.net.Lock()
	defer r.net.Unlock()
	r.net.darkUntil = time.Now().Add(d)
	if r.net.lightUp != nil {
		r.net.lightUp.Reset(d)
		return
	}
	r.net.lightUp = time.AfterFunc(d, func() {
		r.net.Lock()
		r.net.lightUp = nil
		r.net.Unlock()
		r.closeConns(false)
	})
}

// Slow delays every piece of data through the relay, both ways, by
// latency, for d from now.
func (r *Relay) Slow(latency, d time.Duration) {
	r.net.Lock()
	defer r.net.Unlock()
	r.net.latency, r.net.slowUntil = latency, time.Now().Add(d)
}

// Reset resets every connection through the relay, both ends (a TCP RST
// rather than a FIN); the relay goes on accepting.
func (r *Relay) Reset() { r.closeConns(true) }

// closeConns closes every connection through the relay, reset: with an
// RST.
func (r *Relay) closeConns(reset bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reset {
		// Every connection first, then the closes: a relayed pair whose
		// one side is closed first ends the other at once (serve), which
		// would otherwise close it cleanly before its turn here.
		for c := range r.conns {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
		}
	}
	for c := range r.conns {
		c.Close()
	}
}

// Close stops accepting, closes every relayed connection and waits until
// each is done.
func (r *Relay) Close() error {
	r.net.Lock()
	if r.net.lightUp != nil {
		r.net.lightUp.Stop()
	}
	r.net.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.done)
	for c := range r.conns {
		c.Close()
	}
	var err error
	if r.ln != nil {
		err = r.ln.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return errors.Join(err, r.hold.Close())
}

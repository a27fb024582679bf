package netfault

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
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

	ln       net.Listener
	upstream string
	filters  ConnFilters

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
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

// NewRelay listens on a free local port and relays every connection to
// upstream through the filters newFilters makes for it.
func NewRelay(upstream string, newFilters ConnFilters) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start a relay to %s: %w", upstream, err)
	}
	r := &Relay{Addr: ln.Addr().String(), ln: ln, upstream: upstream, filters: newFilters, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
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
	server, err := net.Dial("tcp", r.upstream)
	if err != nil {
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
	go func() { pipe(server, client, up); done <- struct{}{} }()
	go func() { pipe(client, server, down); done <- struct{}{} }()
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
// f cuts the stream.
func pipe(dst io.Writer, src io.Reader, f Filter) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			out, cut := buf[:n], false
			if f != nil {
				out, cut = f.Filter(buf[:n])
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

// Close stops accepting, closes every relayed connection and waits until
// each is done.
func (r *Relay) Close() error {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	err := r.ln.Close()
	r.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

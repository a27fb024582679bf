package amqp

import (
	"encoding/binary"
	"net"
	"slices"
	"sync"

	"github.com/dqbench/dqbench/netfault"
)

// Watcher follows the consumers of connections it does not own (a process
// variant's program, through a netfault.Relay): each delivery the broker
// sends (basic.deliver or basic.get-ok with its content), before it goes on
// to the client, and each basic.ack the client sends, before it goes on to
// the broker; either can be withheld, which cuts the connection. It also
// keeps what the clients hold (delivered, not yet acked), which AMQP's
// queue.declare-ok does not count.
type Watcher struct {
	// Delivered is called with each complete delivery before its frames
	// leave for the client at remote; an error withholds them and cuts the
	// connection.
	Delivered func(remote net.Addr, d Delivery) error
	// Acked is called with the deliveries a basic.ack from the client at
	// remote settles (several with the multiple bit), in tag order,
	// before it leaves for the broker; an error drops the ack and cuts the
	// connection (the broker requeues what the connection held).
	Acked func(remote net.Addr, ds []Delivery) error
	// CopyHeader names a message header whose string value is returned as
	// the delivery's Copy.
	CopyHeader string

	mu       sync.Mutex
	conns    map[*watchedConn]bool
	departed []*watchedConn // closed, their consumers maybe still at the broker
	changes  int            // counts opens, closes and consumer (un)registrations
}

// Delivery is one delivery a Watcher saw.
type Delivery struct {
	MessageID   string
	Copy        string // the CopyHeader's value
	Redelivered bool
	Tag         uint64
}

// watchedConn is one client connection.
type watchedConn struct {
	remote net.Addr
	chans  map[uint16]*watchedChan // under Watcher.mu
}

type watchedChan struct {
	noAck     bool
	consumers int
	tags      map[uint64]Delivery // delivered, not yet settled
}

// Filters is the netfault.ConnFilters of a relay in front of the broker.
func (w *Watcher) Filters(remote net.Addr) (up, down netfault.Filter, closed func()) {
	c := &watchedConn{remote: remote, chans: map[uint16]*watchedChan{}}
	w.mu.Lock()
	if w.conns == nil {
		w.conns = map[*watchedConn]bool{}
	}
	w.conns[c] = true
	w.changes++
	w.mu.Unlock()
	closed = func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.conns, c)
		w.departed = append(w.departed, c)
		w.changes++
	}
	return &upFilter{w: w, c: c}, &downFilter{w: w, c: c}, closed
}

// ch is channel n's state, made on first use; under w.mu.
func (c *watchedConn) ch(n uint16) *watchedChan {
	ch := c.chans[n]
	if ch == nil {
		ch = &watchedChan{tags: map[uint64]Delivery{}}
		c.chans[n] = ch
	}
	return ch
}

// held counts the deliveries c holds unacked, and its consumers.
func (c *watchedConn) held() (held, consumers int) {
	for _, ch := range c.chans {
		held += len(ch.tags)
		consumers += ch.consumers
	}
	return held, consumers
}

// Backlog is the queue's backlog as the broker's passive declare (ready
// messages and consumers) plus what the watched clients hold: a live
// connection's unacked deliveries; and a closed connection's, until the
// declare shows no more consumers than the live connections registered
// (RabbitMQ requeues a consumer's unacked messages in the step that
// removes it), counting at least one for each (deliveries on the wire when
// it closed). The count can be high for a moment, never low.
func (w *Watcher) Backlog(declare func() (ready, consumers int, err error)) (int64, error) {
	w.mu.Lock()
	before := w.changes
	w.mu.Unlock()
	ready, queueConsumers, err := declare()
	if err != nil {
		return 0, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n := int64(ready)
	consuming := 0
	for c := range w.conns {
		h, k := c.held()
		n += int64(h)
		consuming += k
	}
	if w.changes != before || queueConsumers > consuming {
		for _, c := range w.departed {
			h, _ := c.held()
			n += int64(max(h, 1))
		}
		return n, nil
	}
	w.departed = nil
	return n, nil
}

// Consumers counts the consumers the live watched connections registered
// (basic.consume-ok, less basic.cancel-ok).
func (w *Watcher) Consumers() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for c := range w.conns {
		_, k := c.held()
		n += k
	}
	return n
}

// downFilter reads the broker-to-client direction: deliveries (held back
// until their content is complete, and with them every frame after, to
// keep the order), consume-ok and cancel-ok, channel closes.
type downFilter struct {
	w *Watcher
	c *watchedConn
	s Splitter

	pending map[uint16]*content // deliveries whose content is incomplete
	hold    []byte              // frames held back while one is
}

// content is a delivery being read: its method, then its header and body.
type content struct {
	d          Delivery
	noAck      bool
	header     bool
	size, read uint64
}

// The methods the watcher reads (class, method).
const (
	classConnection = 10
	classChannel    = 20
	methodClose     = 40
	methodCloseOk   = 41

	methodConsume   = 20
	methodConsumeOk = 21
	methodCancelOk  = 31
	methodDeliver   = 60
	methodGetOk     = 71
	methodReject    = 90

	frameHeader = 2
	frameBody   = 3
)

func (f *downFilter) Filter(b []byte) (out []byte, cut bool) {
	f.s.Split(b, func(fr []byte) {
		if cut {
			return
		}
		var emit bool
		emit, cut = f.frame(fr)
		switch {
		case cut:
		case len(f.pending) > 0 || !emit:
			f.hold = append(f.hold, fr...)
		default:
			out = append(out, f.hold...)
			out = append(out, fr...)
			f.hold = f.hold[:0]
		}
	})
	if cut {
		return nil, true
	}
	return out, false
}

// frame reads one frame; emit is false while it belongs to an incomplete
// delivery.
func (f *downFilter) frame(fr []byte) (emit, cut bool) {
	if len(fr) < headerBytes+1 {
		return true, false
	}
	chn := channelOf(fr)
	switch fr[0] {
	case frameMethod:
		class, id, args, ok := method(fr)
		if !ok {
			return true, false
		}
		switch {
		case class == classBasic && (id == methodDeliver || id == methodGetOk):
			d, ok := deliverArgs(id, args)
			if !ok {
				return true, false
			}
			f.w.mu.Lock()
			noAck := f.c.ch(chn).noAck
			f.w.mu.Unlock()
			if f.pending == nil {
				f.pending = map[uint16]*content{}
			}
			f.pending[chn] = &content{d: d, noAck: noAck}
			return false, false
		case class == classBasic && id == methodConsumeOk:
			f.w.mu.Lock()
			f.c.ch(chn).consumers++
			f.w.changes++
			f.w.mu.Unlock()
		case class == classBasic && id == methodCancelOk:
			f.w.mu.Lock()
			if ch := f.c.ch(chn); ch.consumers > 0 {
				ch.consumers--
			}
			f.w.changes++
			f.w.mu.Unlock()
		case class == classChannel && (id == methodClose || id == methodCloseOk):
			f.w.closeChannel(f.c, chn)
		}
		return true, false
	case frameHeader, frameBody:
		p := f.pending[chn]
		if p == nil {
			return true, false
		}
		payload := fr[headerBytes : len(fr)-1]
		if fr[0] == frameHeader {
			p.header = true
			p.size, p.d.MessageID, p.d.Copy = contentHeader(payload, f.w.CopyHeader)
		} else {
			p.read += uint64(len(payload))
		}
		if !p.header || p.read < p.size {
			return false, false
		}
		delete(f.pending, chn)
		if f.w.Delivered != nil {
			if err := f.w.Delivered(f.c.remote, p.d); err != nil {
				return false, true
			}
		}
		if !p.noAck {
			f.w.mu.Lock()
			f.c.ch(chn).tags[p.d.Tag] = p.d
			f.w.mu.Unlock()
		}
		return true, false
	}
	return true, false
}

// closeChannel forgets a closed channel: the broker requeues what it held.
func (w *Watcher) closeChannel(c *watchedConn, chn uint16) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(c.chans, chn)
	w.changes++
}

// upFilter reads the client-to-broker direction: basic.consume (no-ack or
// not), acks, nacks and rejects, channel closes.
type upFilter struct {
	w *Watcher
	c *watchedConn
	s Splitter
}

func (f *upFilter) Filter(b []byte) (out []byte, cut bool) {
	f.s.Split(b, func(fr []byte) {
		if cut {
			return
		}
		if f.frame(fr) {
			cut = true
			return
		}
		out = append(out, fr...)
	})
	return out, cut
}

// frame reads one frame; cut says to drop it and cut the connection.
func (f *upFilter) frame(fr []byte) (cut bool) {
	class, id, args, ok := method(fr)
	if !ok {
		return false
	}
	chn := channelOf(fr)
	switch {
	case class == classBasic && id == methodConsume:
		if noAck, ok := consumeNoAck(args); ok && noAck {
			f.w.mu.Lock()
			f.c.ch(chn).noAck = true
			f.w.mu.Unlock()
		}
	case class == classBasic && (id == methodAck || id == methodNack || id == methodReject):
		if len(args) < 9 {
			return false
		}
		tag, multiple := binary.BigEndian.Uint64(args[0:8]), args[8]&1 != 0 && id != methodReject
		ds := f.w.settled(f.c, chn, tag, multiple)
		if id == methodAck && len(ds) > 0 && f.w.Acked != nil {
			if err := f.w.Acked(f.c.remote, ds); err != nil {
				return true
			}
		}
		f.w.settle(f.c, chn, ds)
	case class == classChannel && (id == methodClose || id == methodCloseOk):
		f.w.closeChannel(f.c, chn)
	}
	return false
}

// settled lists the deliveries an ack, nack or reject of tag settles on
// channel chn, in tag order: tag, or every one up to tag with multiple
// (all of them for tag 0).
func (w *Watcher) settled(c *watchedConn, chn uint16, tag uint64, multiple bool) []Delivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := c.chans[chn]
	if ch == nil {
		return nil
	}
	var ds []Delivery
	for t, d := range ch.tags {
		if t == tag || multiple && (tag == 0 || t <= tag) {
			ds = append(ds, d)
		}
	}
	slices.SortFunc(ds, func(a, b Delivery) int { return int(a.Tag) - int(b.Tag) })
	return ds
}

func (w *Watcher) settle(c *watchedConn, chn uint16, ds []Delivery) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch := c.chans[chn]; ch != nil {
		for _, d := range ds {
			delete(ch.tags, d.Tag)
		}
	}
}

// deliverArgs reads basic.deliver's (consumer tag, delivery tag,
// redelivered) or basic.get-ok's (delivery tag, redelivered) arguments.
func deliverArgs(id uint16, args []byte) (Delivery, bool) {
	if id == methodDeliver {
		var ok bool
		if _, args, ok = shortstr(args); !ok {
			return Delivery{}, false
		}
	}
	if len(args) < 9 {
		return Delivery{}, false
	}
	return Delivery{Tag: binary.BigEndian.Uint64(args[0:8]), Redelivered: args[8]&1 != 0}, true
}

// consumeNoAck reads basic.consume's no-ack bit.
func consumeNoAck(args []byte) (noAck, ok bool) {
	if len(args) < 2 {
		return false, false
	}
	args = args[2:] // reserved
	for range 2 {   // queue, consumer tag
		if _, args, ok = shortstr(args); !ok {
			return false, false
		}
	}
	if len(args) < 1 {
		return false, false
	}
	return args[0]&2 != 0, true
}

// contentHeader reads a content header's body size, message-id property
// and the string value of header copy (section 4.2.6.1 and basic's
// property list: content-type, content-encoding, headers, delivery-mode,
// priority, correlation-id, reply-to, expiration, message-id, ...).
func contentHeader(p []byte, copyHeader string) (size uint64, messageID, copyValue string) {
	if len(p) < 14 {
		return 0, "", ""
	}
	size = binary.BigEndian.Uint64(p[4:12])
	flags := binary.BigEndian.Uint16(p[12:14])
	rest := p[14:]
	for flags&1 != 0 && len(rest) >= 2 { // continued flag words
		flags = binary.BigEndian.Uint16(rest)
		rest = rest[2:]
	}
	flags = binary.BigEndian.Uint16(p[12:14])
	var ok bool
	for bit := 15; bit >= 7; bit-- {
		if flags&(1<<bit) == 0 {
			continue
		}
		switch bit {
		case 15, 14, 10, 9, 8: // shortstr
			if _, rest, ok = shortstr(rest); !ok {
				return size, "", ""
			}
		case 13: // headers: a field table
			if len(rest) < 4 {
				return size, "", ""
			}
			n := binary.BigEndian.Uint32(rest)
			if uint64(len(rest)-4) < uint64(n) {
				return size, "", ""
			}
			copyValue = tableString(rest[4:4+n], copyHeader)
			rest = rest[4+n:]
		case 12, 11: // octet
			if len(rest) < 1 {
				return size, "", ""
			}
			rest = rest[1:]
		case 7:
			messageID, _, _ = shortstr(rest)
		}
	}
	return size, messageID, copyValue
}

// tableString finds key in a field table and returns its value if it is a
// long string ('S'). It reads the entries before it only as far as it
// knows their types, which covers what dqbench's producer sends.
func tableString(t []byte, key string) string {
	for len(t) > 0 {
		name, rest, ok := shortstr(t)
		if !ok || len(rest) < 1 {
			return ""
		}
		typ := rest[0]
		rest = rest[1:]
		if typ != 'S' || len(rest) < 4 {
			return "" // a type this reader does not skip
		}
		n := binary.BigEndian.Uint32(rest)
		if uint64(len(rest)-4) < uint64(n) {
			return ""
		}
		if name == key {
			return string(rest[4 : 4+n])
		}
		t = rest[4+n:]
	}
	return ""
}

func shortstr(b []byte) (string, []byte, bool) {
	if len(b) < 1 || len(b) < 1+int(b[0]) {
		return "", nil, false
	}
	n := int(b[0])
	return string(b[1 : 1+n]), b[1+n:], true
}

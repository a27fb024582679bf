package mqtt

import (
	"io"
	"net"
	"sync"

	"github.com/dqbench/dqbench/netfault"
)

// Watcher follows a subscriber connection it does not own (a process
// variant's program, through a netfault.Relay): each PUBLISH the broker
// sends it, before it goes on, and each PUBACK (QoS 1) or PUBREC (QoS 2)
// it sends back, before that goes on to the broker. Either can be
// withheld, which cuts the connection.
//
// It passes one unacknowledged QoS 1 or 2 PUBLISH of a watched topic at a
// time: the next waits in the relay until the client acknowledges the
// last, as with an MQTT 5 Receive Maximum of 1. Brokers send a session's
// queued messages all at once on reconnect (MQTT 3.1.1 has no flow
// control), so without it, what a kill finds applied and not yet
// acknowledged besides the chosen intent would depend on timing, and so
// would the duplicates. The cost: a consumer's own concurrency is not
// exercised.
type Watcher struct {
	// Intent reads an intent from a PUBLISH topic (false: not watched).
	Intent func(topic string) (int, bool)
	// Delivered is called with each PUBLISH of a watched topic before it
	// leaves for the client at remote; an error withholds it and cuts the
	// connection.
	Delivered func(remote net.Addr, d Delivery) error
	// Acked is called with the delivery a PUBACK or PUBREC from the client
	// at remote acknowledges, before it leaves for the broker; an error
	// drops it and cuts the connection.
	Acked func(remote net.Addr, d Delivery) error
}

// Delivery is one PUBLISH to a watched client.
type Delivery struct {
	Intent   int
	QoS      byte
	Dup      bool
	PacketID uint16
}

// Filters is the netfault.ConnFilters of a relay in front of the broker.
func (w *Watcher) Filters(remote net.Addr) (up, down netfault.Filter, closed func()) {
	c := &watchedConn{w: w, remote: remote, ids: map[uint16]Delivery{}}
	c.room = sync.NewCond(&c.mu)
	return &packets{each: c.up, stop: c.stop}, &packets{each: c.down, stop: c.stop}, nil
}

// watchedConn is one client connection: the packet ids of the PUBLISHes
// sent to it and not yet acknowledged.
type watchedConn struct {
	w      *Watcher
	remote net.Addr
	mu     sync.Mutex
	ids    map[uint16]Delivery
	// unacked counts the QoS 1 and 2 PUBLISHes passed and not yet
	// acknowledged; room is signalled when it drops or the connection
	// ends (stopped).
	unacked int
	room    *sync.Cond
	stopped bool
}

func (c *watchedConn) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.room.Broadcast()
}

// down reads one packet from the broker; true drops it and cuts.
func (c *watchedConn) down(pk []byte) bool {
	if pk[0]>>4 != Publish {
		return false
	}
	_, body := header(pk)
	qos := (pk[0] >> 1) & 3
	if len(body) < 2 {
		return false
	}
	tl := int(body[0])<<8 | int(body[1])
	if len(body) < 2+tl {
		return false
	}
	intent, ok := c.w.Intent(string(body[2 : 2+tl]))
	if !ok {
		return false
	}
	d := Delivery{Intent: intent, QoS: qos, Dup: pk[0]&8 != 0}
	if qos > 0 {
		if len(body) < 2+tl+2 {
			return false
		}
		d.PacketID = uint16(body[2+tl])<<8 | uint16(body[3+tl])
	}
	if qos > 0 {
		c.mu.Lock()
		for c.unacked > 0 && !c.stopped {
			c.room.Wait()
		}
		stopped := c.stopped
		c.mu.Unlock()
		if stopped {
			return true
		}
	}
	if c.w.Delivered != nil {
		if err := c.w.Delivered(c.remote, d); err != nil {
			return true
		}
	}
	if qos > 0 {
		c.mu.Lock()
		c.ids[d.PacketID] = d
		c.unacked++
		c.mu.Unlock()
	}
	return false
}

// up reads one packet from the client; true drops it and cuts.
func (c *watchedConn) up(pk []byte) bool {
	t := pk[0] >> 4
	if t != Puback && t != Pubrec && t != Pubcomp {
		return false
	}
	_, body := header(pk)
	if len(body) < 2 {
		return false
	}
	id := uint16(body[0])<<8 | uint16(body[1])
	c.mu.Lock()
	d, ok := c.ids[id]
	if ok && t != Pubrec {
		delete(c.ids, id)
	}
	c.mu.Unlock()
	if !ok || t == Pubcomp {
		return false
	}
	if c.w.Acked != nil && c.w.Acked(c.remote, d) != nil {
		return true
	}
	// Sent on: the next PUBLISH may pass once this one is written.
	defer func() {
		c.mu.Lock()
		if c.unacked > 0 {
			c.unacked--
		}
		c.mu.Unlock()
		c.room.Broadcast()
	}()
	return false
}

// packets cuts a byte stream into MQTT packets and asks each of them
// whether to drop it and cut the connection; it writes each packet it
// passes at once (a netfault.PacedFilter), since the next may wait.
type packets struct {
	buf  []byte
	each func(pk []byte) (cut bool)
	stop func()
	dst  io.Writer
}

var _ netfault.PacedFilter = (*packets)(nil)

func (p *packets) Start(dst io.Writer) { p.dst = dst }
func (p *packets) Stop()               { p.stop() }

func (p *packets) Filter(b []byte) ([]byte, bool) {
	p.buf = append(p.buf, b...)
	for {
		n, ok := packetLen(p.buf)
		if !ok || len(p.buf) < n {
			return nil, false
		}
		if p.each(p.buf[:n]) {
			p.buf = nil
			return nil, true
		}
		if _, err := p.dst.Write(p.buf[:n]); err != nil {
			p.buf = nil
			return nil, true
		}
		p.buf = p.buf[n:]
	}
}

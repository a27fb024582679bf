package nats

import (
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/dqbench/dqbench/netfault"
)

// Watcher follows the JetStream consumers of connections it does not own
// (a process variant's program, through a netfault.Relay): each delivery
// the server sends (a MSG or HMSG of a watched subject whose reply subject
// is a $JS.ACK one), before it goes on to the client, and each ack the
// client sends (a PUB or HPUB of +ACK, or of nothing, to a delivery's
// reply subject), before it goes on to the server.
//
// It does not pace deliveries: a pull consumer asks for the batch it
// wants, so a consumer that fetches one message at a time holds one at a
// time, and what a kill finds besides the chosen intent does not depend
// on timing.
type Watcher struct {
	// Intent reads an intent from a delivery's subject (false: not
	// watched).
	Intent func(subject string) (int, bool)
	// Delivered is called with each delivery of a watched subject before
	// it leaves for the client at remote; an error withholds it and cuts
	// the connection.
	Delivered func(remote net.Addr, d Delivery) error
	// Acked is called with the delivery an ack from the client at remote
	// acknowledges (its first ack only), before it leaves for the server;
	// drop drops the ack and the connection stays up (the server delivers
	// the message again once ack_wait has passed); an error drops it and
	// cuts the connection.
	Acked func(remote net.Addr, d Delivery) (drop bool, err error)
}

// Delivery is one JetStream delivery to a watched client.
type Delivery struct {
	Intent int
	// AckSubject is the delivery's reply subject ($JS.ACK.…).
	AckSubject string
	// StreamSeq is the message's stream sequence; Delivered counts the
	// server's deliveries of it to this consumer, from 1.
	StreamSeq uint64
	Delivered int
}

// Filters is the netfault.ConnFilters of a relay in front of the server.
func (w *Watcher) Filters(remote net.Addr) (up, down netfault.Filter, closed func()) {
	c := &watchedConn{w: w, remote: remote, acks: map[string]Delivery{}}
	return &upWatch{c: c}, &downWatch{c: c}, nil
}

// watchedConn is one client connection: its deliveries not yet acked, by
// ack subject.
type watchedConn struct {
	w      *Watcher
	remote net.Addr
	mu     sync.Mutex
	acks   map[string]Delivery
}

type downWatch struct {
	s Splitter
	c *watchedConn
}

// Filter passes the server's messages, showing each delivery to the
// watcher first; a delivery withheld cuts the connection.
func (f *downWatch) Filter(b []byte) ([]byte, bool) {
	var out []byte
	cut := false
	f.s.Split(b, func(m Message) {
		if cut {
			return
		}
		if (m.Op == "MSG" || m.Op == "HMSG") && strings.HasPrefix(m.Reply, "$JS.ACK.") {
			if in, ok := f.c.w.Intent(m.Subject); ok {
				d := Delivery{Intent: in, AckSubject: m.Reply}
				d.StreamSeq, d.Delivered = ackMeta(m.Reply)
				if f.c.w.Delivered != nil && f.c.w.Delivered(f.c.remote, d) != nil {
					cut = true
					return
				}
				f.c.mu.Lock()
				f.c.acks[m.Reply] = d
				f.c.mu.Unlock()
			}
		}
		out = append(out, m.Raw...)
	})
	return out, cut
}

type upWatch struct {
	s Splitter
	c *watchedConn
}

// Filter passes the client's messages, showing each first ack of a
// watched delivery to the watcher first. A nak or term settles the
// delivery without an ack (the server sends it again, or never).
func (f *upWatch) Filter(b []byte) ([]byte, bool) {
	var out []byte
	cut := false
	f.s.Split(b, func(m Message) {
		if cut {
			return
		}
		if m.Op == "PUB" || m.Op == "HPUB" {
			f.c.mu.Lock()
			d, ok := f.c.acks[m.Subject]
			settles := ok && (isAck(m.Body()) || isNakOrTerm(m.Body()))
			if settles {
				delete(f.c.acks, m.Subject)
			}
			f.c.mu.Unlock()
			if settles && isAck(m.Body()) && f.c.w.Acked != nil {
				drop, err := f.c.w.Acked(f.c.remote, d)
				if err != nil {
					cut = true
					return
				}
				if drop {
					return
				}
			}
		}
		out = append(out, m.Raw...)
	})
	return out, cut
}

// isNakOrTerm: -NAK (with or without a delay) or +TERM (with or without
// a reason).
func isNakOrTerm(body []byte) bool {
	s := strings.TrimSpace(string(body))
	return strings.HasPrefix(s, "-NAK") || strings.HasPrefix(s, "+TERM")
}

// ackMeta reads the stream sequence and delivery count from a JetStream
// ack subject: $JS.ACK.<stream>.<consumer>.<delivered>.<stream
// seq>.<consumer seq>.<timestamp>.<pending>, or the newer form with
// <domain>.<account hash> after ACK and a random token at the end. Zeros
// when it is neither.
func ackMeta(subject string) (streamSeq uint64, delivered int) {
	t := strings.Split(subject, ".")
	off := 0
	switch {
	case len(t) == 9:
		off = 2
	case len(t) >= 11:
		off = 4
	default:
		return 0, 0
	}
	delivered, _ = strconv.Atoi(t[off+2])
	streamSeq, _ = strconv.ParseUint(t[off+3], 10, 64)
	return streamSeq, delivered
}

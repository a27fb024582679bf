// Package mqtt is the protocol-aware toxic for MQTT (3.1.1 and 5): a
// netfault.Filter that cuts one direction of a proxied MQTT connection into
// packets, learns from PUBLISH packets which intent each packet id carries,
// and loses a chosen acknowledgement (PUBACK, PUBREC, PUBREL, PUBCOMP): the
// packet is dropped and the connection cut, so the sender resends on
// reconnect.
package mqtt

import (
	"sync"

	"github.com/dqbench/dqbench/netfault"
)

// Packet types (the high nibble of the first byte).
const (
	Publish byte = 3
	Puback  byte = 4
	Pubrec  byte = 5
	Pubrel  byte = 6
	Pubcomp byte = 7
)

// Table maps the packet ids of one leg's PUBLISH packets to intents: the
// filter on the PUBLISH direction fills it, the filter on the ack
// direction reads it. One table per leg (per proxied client).
type Table struct {
	mu  sync.Mutex
	ids map[uint16]int
}

// NewTable makes an empty table.
func NewTable() *Table { return &Table{ids: map[uint16]int{}} }

func (t *Table) put(id uint16, intent int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ids[id] = intent
}

func (t *Table) get(id uint16) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	in, ok := t.ids[id]
	return in, ok
}

// Rule says which acknowledgement to lose: the packet type, and fires,
// asked with the intent and how many times that packet passed for it.
type Rule struct {
	Type  byte
	Fires func(intent, attempt int) bool
	// Lost is called when a packet is lost.
	Lost func(intent int)

	mu   sync.Mutex
	seen map[int]int
}

func (r *Rule) hit(intent int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[int]int{}
	}
	r.seen[intent]++
	return r.Fires(intent, r.seen[intent])
}

// Config is one direction of one leg's connections.
type Config struct {
	// Intent reads an intent from a PUBLISH topic (false: not the
	// variant's).
	Intent func(topic string) (int, bool)
	// Table is the leg's packet id table.
	Table *Table
	// Rules are the acknowledgements to lose in this direction.
	Rules func() []*Rule
	// Sent, when set, is told of each acknowledgement of the variant's
	// packet ids that the sending side wrote, lost or not.
	Sent func(t byte, id uint16)
}

// NewFilter returns the filter factory for one direction.
func NewFilter(c Config) netfault.NewFilter {
	return func() netfault.Filter { return &filter{c: c} }
}

// filter cuts a byte stream into MQTT packets.
type filter struct {
	c   Config
	buf []byte
}

func (f *filter) Filter(b []byte) ([]byte, bool) {
	f.buf = append(f.buf, b...)
	var out []byte
	for {
		n, ok := packetLen(f.buf)
		if !ok || len(f.buf) < n {
			return out, false
		}
		pk := f.buf[:n]
		if f.lose(pk) {
			f.buf = nil
			return out, true
		}
		out = append(out, pk...)
		f.buf = f.buf[n:]
	}
}

// packetLen is the length of the packet at the start of b (fixed header
// and remaining length), if b holds its header.
func packetLen(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	rem, mult := 0, 1
	for i := 1; i < 5; i++ {
		if i >= len(b) {
			return 0, false
		}
		rem += int(b[i]&0x7f) * mult
		if b[i]&0x80 == 0 {
			return 1 + i + rem, true
		}
		mult *= 128
	}
	return 1 + 5 + rem, true // malformed; let it through in one piece
}

// lose learns from pk, and reports whether to drop it and cut.
func (f *filter) lose(pk []byte) bool {
	t := pk[0] >> 4
	_, body := header(pk)
	switch t {
	case Publish:
		qos := (pk[0] >> 1) & 3
		if qos == 0 || len(body) < 2 {
			return false
		}
		tl := int(body[0])<<8 | int(body[1])
		if len(body) < 2+tl+2 {
			return false
		}
		topic := string(body[2 : 2+tl])
		id := uint16(body[2+tl])<<8 | uint16(body[3+tl])
		if in, ok := f.c.Intent(topic); ok {
			f.c.Table.put(id, in)
		}
	case Puback, Pubrec, Pubrel, Pubcomp:
		if len(body) < 2 || f.c.Rules == nil {
			return false
		}
		id := uint16(body[0])<<8 | uint16(body[1])
		in, ok := f.c.Table.get(id)
		if !ok {
			return false
		}
		if f.c.Sent != nil {
			f.c.Sent(t, id)
		}
		for _, r := range f.c.Rules() {
			if r.Type == t && r.hit(in) {
				r.Lost(in)
				return true
			}
		}
	}
	return false
}

// header splits a packet into its fixed header and body.
func header(pk []byte) (fixed, body []byte) {
	for i := 1; i < 5 && i < len(pk); i++ {
		if pk[i]&0x80 == 0 {
			return pk[:i+1], pk[i+1:]
		}
	}
	return pk, nil
}

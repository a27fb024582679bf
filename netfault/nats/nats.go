// Package nats is the protocol-aware toxic for the NATS client protocol
// (text: a control line ending in CRLF, and for PUB, HPUB, MSG and HMSG a
// payload of the byte count the line ends with, then CRLF). It loses
// JetStream publish acks: a filter on a producer connection's
// client-to-server direction learns which intent, and which send of it,
// each PUB carries, by the PUB's reply subject; a filter on the
// server-to-client direction drops the chosen PubAck, the MSG on that
// reply subject, while the connection stays up, so the publisher never
// hears that the stream stored the message.
//
// The reply subject maps a PubAck to its publish: nats.go's asynchronous
// JetStream publish gives every publish its own reply subject (a token
// under the connection's response inbox) and the server answers on it, in
// whatever order it stores them. The Nats-Msg-Id header would not do (it
// is absent with msg_id: none and the same on every send with msg_id:
// business), nor would the order of publishes (an answer that never comes,
// such as a lost publish, would shift every later one).
package nats

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/dqbench/dqbench/netfault"
)

// Fires says whether the fault hits this send (attempt, from 1) of intent
// (a faults.Schedule); Lost is called once for each PubAck lost.
type (
	Fires func(intent, attempt int) bool
	Lost  func(intent, attempt int)
)

// Sent is what one publish carries.
type Sent struct {
	Intent, Attempt int
}

// Table maps the reply subjects of one producer's publishes to the intent
// and send they carry: the filter on the publish direction fills it, the
// filter on the ack direction takes entries out. One table per producer
// (every connection of its proxy); it numbers each intent's sends as they
// pass, since nats.go never resends a publish on its own.
type Table struct {
	mu    sync.Mutex
	reply map[string]Sent
	sends map[int]int
}

// NewTable makes an empty table.
func NewTable() *Table { return &Table{reply: map[string]Sent{}, sends: map[int]int{}} }

func (t *Table) put(reply string, intent int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sends[intent]++
	t.reply[reply] = Sent{Intent: intent, Attempt: t.sends[intent]}
}

func (t *Table) take(reply string) (Sent, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.reply[reply]
	delete(t.reply, reply)
	return s, ok
}

// LearnPublishes is the filter for a producer connection's client-to-server
// direction: it passes everything and puts each PUB or HPUB with a reply
// subject whose subject intent reads (false: not the variant's) into table.
func LearnPublishes(table *Table, intent func(subject string) (int, bool)) netfault.NewFilter {
	return func() netfault.Filter {
		return &learner{table: table, intent: intent}
	}
}

type learner struct {
	s      Splitter
	table  *Table
	intent func(string) (int, bool)
}

func (l *learner) Filter(b []byte) ([]byte, bool) {
	var out []byte
	l.s.Split(b, func(m Message) {
		if (m.Op == "PUB" || m.Op == "HPUB") && m.Reply != "" {
			if in, ok := l.intent(m.Subject); ok {
				l.table.put(m.Reply, in)
			}
		}
		out = append(out, m.Raw...)
	})
	return out, false
}

// LosePubAcks is the filter for a producer connection's server-to-client
// direction: the PubAck (a MSG or HMSG on a reply subject in table whose
// payload is a JetStream publish ack, not an error) of a send fires says
// to hit is dropped, and lost is called; everything else passes, and the
// connection stays up.
func LosePubAcks(table *Table, fires Fires, lost Lost) netfault.NewFilter {
	return func() netfault.Filter {
		return &ackLoser{table: table, fires: fires, lost: lost}
	}
}

type ackLoser struct {
	s     Splitter
	table *Table
	fires Fires
	lost  Lost
}

func (a *ackLoser) Filter(b []byte) ([]byte, bool) {
	var out []byte
	a.s.Split(b, func(m Message) {
		if m.Op == "MSG" || m.Op == "HMSG" {
			if s, ok := a.table.take(m.Subject); ok && IsPubAck(m.Body()) && a.fires(s.Intent, s.Attempt) {
				a.lost(s.Intent, s.Attempt)
				return
			}
		}
		out = append(out, m.Raw...)
	})
	return out, false
}

// IsPubAck reports whether payload is a JetStream publish ack
// ({"stream":..,"seq":..}), not an API error.
func IsPubAck(payload []byte) bool {
	var ack struct {
		Stream string          `json:"stream"`
		Error  json.RawMessage `json:"error"`
	}
	return json.Unmarshal(payload, &ack) == nil && ack.Stream != "" && ack.Error == nil
}

// Message is one protocol message: its operation (upper case), and for
// PUB, HPUB, MSG and HMSG the subject, the reply subject ("" for none)
// and the payload (headers, HeaderLen bytes of it with HPUB and HMSG, and
// body). Raw is its bytes as read.
type Message struct {
	Op        string
	Subject   string
	Reply     string
	HeaderLen int
	Payload   []byte
	Raw       []byte
}

// Body is the payload less the headers.
func (m Message) Body() []byte {
	if m.HeaderLen > len(m.Payload) {
		return nil
	}
	return m.Payload[m.HeaderLen:]
}

// Splitter cuts a byte stream, read in pieces of any size, into protocol
// messages, holding back a message's start until its end arrives.
type Splitter struct {
	buf []byte
}

// Split adds b and calls each for every message it completes. A line
// that cannot be parsed passes as it is (the server will say what is
// wrong with it).
func (s *Splitter) Split(b []byte, each func(Message)) {
	s.buf = append(s.buf, b...)
	for {
		eol := bytes.Index(s.buf, []byte("\r\n"))
		if eol < 0 {
			return
		}
		m, n := parse(s.buf[:eol])
		if n >= 0 {
			total := eol + 2 + n + 2
			if len(s.buf) < total {
				return
			}
			m.Payload = s.buf[eol+2 : eol+2+n]
			m.Raw = s.buf[:total]
		} else {
			m.Raw = s.buf[:eol+2]
		}
		each(m)
		s.buf = s.buf[len(m.Raw):]
		if len(s.buf) == 0 {
			s.buf = nil // let the next read's bytes be a fresh array
		}
	}
}

// parse reads a control line; n is the payload's length for the messages
// that have one, -1 otherwise.
func parse(line []byte) (Message, int) {
	f := strings.Fields(string(line))
	if len(f) == 0 {
		return Message{}, -1
	}
	m := Message{Op: strings.ToUpper(f[0])}
	var args []string // subject [sid] [reply] then the counts
	counts := 1
	switch m.Op {
	case "PUB":
		args = f[1:]
	case "HPUB":
		args, counts = f[1:], 2
	case "MSG":
		if len(f) > 2 {
			args = append([]string{f[1]}, f[3:]...) // drop the sid
		}
	case "HMSG":
		if len(f) > 2 {
			args, counts = append([]string{f[1]}, f[3:]...), 2
		}
	default:
		return m, -1
	}
	if len(args) != 1+counts && len(args) != 2+counts {
		return m, -1
	}
	n, err := strconv.Atoi(args[len(args)-1])
	if err != nil || n < 0 {
		return m, -1
	}
	if counts == 2 {
		h, err := strconv.Atoi(args[len(args)-2])
		if err != nil || h < 0 || h > n {
			return m, -1
		}
		m.HeaderLen = h
	}
	m.Subject = args[0]
	if len(args) == 2+counts {
		m.Reply = args[1]
	}
	return m, n
}

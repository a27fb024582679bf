package nats

import (
	"bytes"
	"sync"

	"github.com/dqbench/dqbench/netfault"
)

// Acks maps the ack subjects of one consumer's deliveries (each
// JetStream delivery's reply subject, $JS.ACK.…) to the intent and
// delivery attempt they carry: the consumer puts each one in just before
// it acks, the filter takes it out when the ack passes.
type Acks struct {
	mu sync.Mutex
	m  map[string]Sent
}

// Put notes that an ack to subject acks attempt (delivery) of intent.
func (a *Acks) Put(subject string, intent, attempt int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]Sent{}
	}
	a.m[subject] = Sent{Intent: intent, Attempt: attempt}
}

func (a *Acks) take(subject string) (Sent, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.m[subject]
	delete(a.m, subject)
	return s, ok
}

// LoseAcks is the filter for a consumer connection's client-to-server
// direction: the first ack (a PUB or HPUB of +ACK, or of nothing, to a
// subject in acks) of a delivery whose intent and attempt fires says to
// hit is dropped, and lost is called; everything else passes, and the
// connection stays up, so the server never learns of the ack and delivers
// the message again once ack_wait has passed. Only the first: the
// subject leaves acks as its first ack passes, so an ack sent again (a
// double ack's consumer that heard no confirmation) gets through. Naks,
// terms and progress acks pass.
func LoseAcks(acks *Acks, fires Fires, lost Lost) netfault.NewFilter {
	return func() netfault.Filter { return &consumerAckLoser{acks: acks, fires: fires, lost: lost} }
}

type consumerAckLoser struct {
	s     Splitter
	acks  *Acks
	fires Fires
	lost  Lost
}

// ackBody is JetStream's positive ack; an empty payload acks too.
var ackBody = []byte("+ACK")

func (a *consumerAckLoser) Filter(b []byte) ([]byte, bool) {
	var out []byte
	a.s.Split(b, func(m Message) {
		if (m.Op == "PUB" || m.Op == "HPUB") && isAck(m.Body()) {
			if s, ok := a.acks.take(m.Subject); ok && a.fires(s.Intent, s.Attempt) {
				a.lost(s.Intent, s.Attempt)
				return
			}
		}
		out = append(out, m.Raw...)
	})
	return out, false
}

func isAck(body []byte) bool {
	body = bytes.TrimSpace(body)
	return len(body) == 0 || bytes.Equal(body, ackBody)
}

package amqp

import (
	"github.com/dqbench/dqbench/netfault"
)

// Fires says whether the fault hits this attempt of intent (a
// faults.Schedule); Lost is called once for each frame lost.
type (
	Fires func(intent, attempt int) bool
	Lost  func(intent, attempt int)
)

// LoseAcks is the filter for a consumer connection's client-to-broker
// direction: when the consumer's basic.ack for a delivery tag in tags
// carries an intent attempt that fires says to hit, the ack and everything
// after it are dropped and the connection is cut, as when the network
// loses an ack and the connection then breaks: the broker never learns of
// the ack and requeues the message. The consumer wrote its ack and goes on
// believing it done. Acks with the multiple bit are judged by their last
// tag (dqbench's consumers ack one tag at a time).
func LoseAcks(tags *Tags, fires Fires, lost Lost) netfault.NewFilter {
	return func() netfault.Filter { return &ackLoser{tags: tags, fires: fires, lost: lost} }
}

type ackLoser struct {
	s     Splitter
	tags  *Tags
	fires Fires
	lost  Lost
}

func (a *ackLoser) Filter(b []byte) (out []byte, cut bool) {
	a.s.Split(b, func(f []byte) {
		if cut {
			return
		}
		if class, id, args, ok := method(f); ok && class == classBasic && id == methodAck {
			if tag, _, ok := ackArgs(args); ok {
				if e, ok := a.tags.take(tag); ok && a.fires(e.Intent, e.Attempt) {
					a.lost(e.Intent, e.Attempt)
					cut = true
					return
				}
			}
		}
		out = append(out, f...)
	})
	return out, cut
}

// LoseConfirms is the filter for a producer connection's broker-to-client
// direction: the broker's basic.ack confirming a publish sequence number
// in tags whose intent attempt fires says to hit is withheld for good, so
// that publish is never confirmed while the connection stays up (the
// publisher times out and may republish). Every other confirm still
// arrives: an ack with the multiple bit that would cover a withheld
// sequence number is rewritten as one ack per number it covers, less the
// withheld ones. Nacks pass (covering no withheld number, as above).
func LoseConfirms(tags *Tags, fires Fires, lost Lost) netfault.NewFilter {
	return func() netfault.Filter { return &confirmLoser{tags: tags, fires: fires, lost: lost} }
}

type confirmLoser struct {
	s        Splitter
	tags     *Tags
	fires    Fires
	lost     Lost
	high     uint64          // the highest sequence number answered so far
	withheld map[uint64]bool // confirms lost, never to be sent
	lowest   uint64          // the lowest withheld number (0: none yet)
}

func (c *confirmLoser) Filter(b []byte) (out []byte, cut bool) {
	c.s.Split(b, func(f []byte) {
		out = append(out, c.frame(f)...)
	})
	return out, false
}

// frame returns what replaces one frame.
func (c *confirmLoser) frame(f []byte) []byte {
	class, id, args, ok := method(f)
	if !ok || class != classBasic || (id != methodAck && id != methodNack) {
		return f
	}
	tag, multiple, ok := ackArgs(args)
	if !ok {
		return f
	}
	from := tag // the numbers this frame answers: from..tag
	if multiple {
		from = c.high + 1
	}
	c.high = max(c.high, tag)
	hit := false
	for n := from; n <= tag; n++ {
		e, ok := c.tags.take(n)
		if ok && id == methodAck && c.fires(e.Intent, e.Attempt) {
			if c.withheld == nil {
				c.withheld = map[uint64]bool{}
			}
			c.withheld[n] = true
			if c.lowest == 0 || n < c.lowest {
				c.lowest = n
			}
			c.lost(e.Intent, e.Attempt)
			hit = true
		}
	}
	covers := c.lowest != 0 && c.lowest <= tag && (multiple || c.withheld[tag])
	if !hit && !covers {
		return f
	}
	bits := args[8] &^ 1
	var out []byte
	for n := from; n <= tag; n++ {
		if !c.withheld[n] {
			out = append(out, ackFrame(channelOf(f), id, n, bits)...)
		}
	}
	return out
}

package rabbitmq

import (
	"context"
	"time"

	"github.com/dqbench/dqbench/brokers"
)

// lose is a network fault that loses chosen frames: when it hits (fires)
// and what to record when it did (lost).
type lose struct {
	fires func(intent, attempt int) bool
	lost  func(intent, attempt int)
}

// cut is a network fault on the producer's connection, which breaks it
// when the broker's confirm of a chosen publish comes back (CutProducer):
// at once, or after a partition of after; or, with latency, slows it for
// after and lets the confirm through (SlowProducer).
type cut struct {
	after   time.Duration
	latency time.Duration
	fires   func(intent, attempt int) bool
	cut     func(intent, attempt int)
}

var _ brokers.Powered = (*queueDest)(nil)

// Apply injects a queue's fault powers, through dqbench's in-process
// toxiproxy: lost acks and lost confirms.
func (d *queueDest) Apply(_ context.Context, p brokers.Power) error {
	switch p := p.(type) {
	case brokers.LoseAcks:
		ok, err := d.loseAcks(p.Fires, p.Lost)
		if err == nil && !ok {
			err = brokers.ErrNowhere
		}
		return err
	case brokers.LoseConfirms:
		if !d.confirms {
			return brokers.ErrNowhere // confirms: false: no confirm to lose
		}
		return d.loseConfirms(p.Fires, p.Lost)
	case brokers.CutProducer:
		if !d.r.net.Embedded() {
			return d.needsEmbedded("a network fault on the producer's connection")
		}
		d.producerCuts = append(d.producerCuts, &cut{after: p.For, fires: p.Fires, cut: p.Cut})
		return nil
	case brokers.SlowProducer:
		if !d.r.net.Embedded() {
			return d.needsEmbedded("latency on the producer's connection")
		}
		d.producerCuts = append(d.producerCuts, &cut{after: p.For, latency: p.Latency, fires: p.Fires, cut: p.Slowed})
		return nil
	}
	return brokers.NoPower(p)
}

// loseAcks makes every consumer started afterwards go through a proxy that
// loses the basic.ack of the chosen deliveries and then breaks the
// connection (netfault/amqp.LoseAcks). With ack: auto there is no ack to
// lose.
func (d *queueDest) loseAcks(fires func(intent, attempt int) bool, lost func(intent, attempt int)) (bool, error) {
	if d.spec.AutoAck {
		return false, nil
	}
	if !d.r.net.Embedded() {
		return false, d.needsEmbedded("ack-lost")
	}
	d.ackLost = &lose{fires, lost}
	return true, nil
}

// loseConfirms makes every producer started afterwards go through a proxy
// that withholds the broker's confirm of the chosen publishes
// (netfault/amqp.LoseConfirms).
func (d *queueDest) loseConfirms(fires func(intent, attempt int) bool, lost func(intent, attempt int)) error {
	if !d.r.net.Embedded() {
		return d.needsEmbedded("confirm-lost")
	}
	d.confirmLost = &lose{fires, lost}
	return nil
}

func (d *queueDest) needsEmbedded(fault string) error {
	return &needsEmbedded{fault: fault, via: d.r.net.Name()}
}

type needsEmbedded struct{ fault, via string }

func (e *needsEmbedded) Error() string {
	return e.fault + " parses AMQP frames inside dqbench's in-process toxiproxy; the " + e.via + " runs only toxiproxy's own toxics: leave out --toxiproxy (and the broker's toxiproxy key)"
}

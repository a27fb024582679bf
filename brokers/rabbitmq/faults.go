package rabbitmq

import (
	"github.com/dqbench/dqbench/brokers"
)

// lose is a network fault that loses chosen frames: when it hits (fires)
// and what to record when it did (lost).
type lose struct {
	fires func(intent, attempt int) bool
	lost  func(intent, attempt int)
}

var (
	_ brokers.AckLoser     = (*queueDest)(nil)
	_ brokers.ConfirmLoser = (*queueDest)(nil)
)

// LoseAcks makes every consumer started afterwards go through a proxy that
// loses the basic.ack of the chosen deliveries and then breaks the
// connection (netfault/amqp.LoseAcks). With ack: auto there is no ack to
// lose.
func (d *queueDest) LoseAcks(fires func(intent, attempt int) bool, lost func(intent, attempt int)) (bool, error) {
	if d.spec.AutoAck {
		return false, nil
	}
	if !d.r.net.Embedded() {
		return false, d.needsEmbedded("ack-lost")
	}
	d.ackLost = &lose{fires, lost}
	return true, nil
}

// LoseConfirms makes every producer started afterwards go through a proxy
// that withholds the broker's confirm of the chosen publishes
// (netfault/amqp.LoseConfirms).
func (d *queueDest) LoseConfirms(fires func(intent, attempt int) bool, lost func(intent, attempt int)) error {
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

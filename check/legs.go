package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Legs says on which leg of a two-hop protocol (MQTT: publisher → broker,
// broker → subscriber) each duplicate and loss arose. It is reported for
// variants whose deliveries carry a QoS level (history.Event.QoS).
type Legs struct {
	// Publisher: the broker stored the intent more than once (the
	// publishing client resent a PUBLISH the broker had already taken, or
	// the application published it again). Its Lost is always 0: a loss
	// nobody confirmed is Unconfirmed, on neither leg for sure.
	Publisher LegCounts `json:"publisher"`
	// Subscriber: the broker delivered the same stored copy again (a
	// redelivery after a lost acknowledgement or a consumer restart, or a
	// retained message sent again to a new subscription), or
	// had the intent and it never took effect (never delivered, or
	// delivered and then lost by the consumer).
	Subscriber LegCounts `json:"subscriber"`
	// UnconfirmedLost: intents lost that nobody confirmed or delivered (QoS
	// 0): lost on the publisher leg or dropped by the broker, unseen.
	// Publisher.Lost + Subscriber.Lost + UnconfirmedLost = lost.
	UnconfirmedLost int `json:"unconfirmed_lost"`
}

// LegCounts counts intents per leg; an intent duplicated on both legs
// counts on both.
type LegCounts struct {
	Duplicates int `json:"duplicates"`
	Lost       int `json:"lost"`
}

// legs counts one variant's legs, or returns nil when no delivery carried
// a QoS level.
func (t *tally) legs() *Legs {
	if len(t.qos) == 0 {
		return nil
	}
	var l Legs
	t.each(func(_ int, f *facts) {
		redelivered := f.has(sameCopy) || f.has(flagged) || f.has(retainedAgain)
		switch {
		case !f.has(published) || f.applied < 2:
		case f.has(copies):
			l.Publisher.Duplicates++
			// More effects than two stored copies explain: a copy was
			// also redelivered and applied again.
			if redelivered && f.applied > 2 {
				l.Subscriber.Duplicates++
			}
		case redelivered:
			l.Subscriber.Duplicates++
		}
		// Where the totals count a loss, so the legs add up to lost.
		if cause, ok := t.lossCause(f); ok {
			if cause == LostUnconfirmed {
				l.UnconfirmedLost++
			} else {
				l.Subscriber.Lost++
			}
		}
	})
	return &l
}

// deliveredQoS is the number of deliveries per QoS level, or nil.
func (t *tally) deliveredQoS() map[string]int {
	if len(t.qos) == 0 {
		return nil
	}
	out := make(map[string]int, len(t.qos))
	for q, n := range t.qos {
		out[q] = n
	}
	return out
}

// QoSLevels lists the levels of a DeliveredQoS map in order.
func QoSLevels(m map[string]int) []string {
	var out []string
	for q := range m {
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return out
}

// LegsText says on which MQTT leg duplicates and losses arose, and the QoS
// levels deliveries arrived with; empty without legs.
func (v Variant) LegsText() string {
	if v.Legs == nil {
		return ""
	}
	l := v.Legs
	text := fmt.Sprintf("publisher→broker %d duplicated · broker→subscriber %d duplicated, %d lost",
		l.Publisher.Duplicates, l.Subscriber.Duplicates, l.Subscriber.Lost)
	if l.UnconfirmedLost > 0 {
		text += fmt.Sprintf(" · %d lost unconfirmed (before the broker or unseen in it)", l.UnconfirmedLost)
	}
	var qos []string
	for _, q := range QoSLevels(v.DeliveredQoS) {
		qos = append(qos, fmt.Sprintf("%d at QoS %s", v.DeliveredQoS[q], q))
	}
	if len(qos) > 0 {
		text += " · deliveries " + strings.Join(qos, ", ")
	}
	return text
}

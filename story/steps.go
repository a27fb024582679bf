package story

import (
	"fmt"
	"strings"
	"time"

	"github.com/dqbench/dqbench/history"
)

// Step is one event of a story as a person reads it.
type Step struct {
	T    time.Duration
	Lane string // see Lane
	Type history.Type
	Text string // what happened, in its lane: e.g. "redelivered (delivery 2) from 0@7"
}

// Steps tells the story one event at a time.
func (s *Story) Steps() []Step {
	out := make([]Step, 0, len(s.Events))
	applied, delivered := 0, 0
	// Since the last delivery: its consumer, whether it acked it, whether
	// that consumer went away, whether a fault hit it.
	var lastBy int
	acked, gone, faulted, pos := false, false, "", ""
	rejected := false // handed to the dead-letter exchange since the last delivery
	for _, e := range s.Events {
		var text string
		switch e.Type {
		case history.Publish:
			text = fmt.Sprintf("published (attempt %d)", max(e.Attempt, 1))
		case history.Written:
			text = "business row committed in the producer's store"
		case history.Confirm:
			text = "confirmed"
		case history.PubFailed:
			switch {
			case e.Refused:
				text = "refused by the broker: not stored"
			case e.FireAndForget:
				text = "sent, no confirm to wait for (fire and forget): outcome unknown"
				e.Reason = ""
			default:
				text = "publish failed: outcome unknown"
			}
			if e.Reason != "" {
				text += " (" + e.Reason + ")"
			}
		case history.Deliver:
			delivered++
			verb := "delivered"
			if delivered > 1 || e.Redelivered {
				verb = "redelivered"
			}
			text = verb
			if e.Attempt > 1 {
				text += fmt.Sprintf(" (delivery %d)", e.Attempt)
			}
			if e.Position != "" {
				text += " from " + e.Position
			}
			switch {
			case delivered > 1 && rejected:
				text += fmt.Sprintf(": back from the wait queue, whose TTL expired it and dead-lettered it back (x-death: dead-lettered %d times so far)", e.Deaths)
			case delivered > 1:
				text += ": " + redeliveryWhy(e, lastBy, acked, gone, faulted, pos)
			}
			lastBy, acked, gone, faulted, pos, rejected = e.Consumer, false, false, "", e.Position, false
		case history.Effect:
			switch {
			case e.Applied && applied > 0:
				applied++
				text = "effect applied again"
			case e.Applied:
				applied++
				text = "effect applied"
			default:
				text = "effect skipped"
				if e.Reason != "" {
					text += ": " + e.Reason
				}
			}
		case history.Ack:
			text = "acked"
			if e.Reason != "" {
				text += " (" + e.Reason + ")" // by the client's auto-commit
			}
			acked = true
		case history.Fault:
			faulted = e.Fault
			text = "fault " + e.Fault
			if e.Point != "" && e.Fault != e.Point && !strings.HasSuffix(e.Fault, "@"+e.Point) {
				text += " at " + e.Point
			}
			if e.Reason != "" {
				text += ": " + e.Reason
			}
		case history.Crash:
			gone = gone || e.Consumer == lastBy || e.Consumer == 0
			text = "crashed"
			if e.Reason != "" {
				text += ": " + e.Reason
			}
		case history.Start:
			text = "started"
		case history.AckUnconfirmed:
			text = "ack not confirmed by the broker in time; acks again"
		case history.Reject:
			rejected = true
			text = "rejected to the dead-letter exchange (basic.reject, confirmed to nobody)"
			if e.Reason != "" {
				text += ", which routes it to " + e.Reason
			}
		case history.DeadLetter:
			text = "dead-lettered"
			if e.Reason != "" {
				text += ": " + e.Reason
			}
		default:
			text = string(e.Type)
		}
		out = append(out, Step{T: e.T, Lane: Lane(e), Type: e.Type, Text: text})
	}
	return out
}

// redeliveryWhy says why e, a second or later delivery of the intent, came:
// from what happened since the one before (on consumer by, acked or not,
// the consumer gone, a fault, from position pos).
func redeliveryWhy(e history.Event, by int, acked, gone bool, fault, pos string) string {
	switch {
	case e.Position != "" && pos != "" && e.Position != pos:
		return "a second copy the broker stored (a publish stored twice)"
	case acked && fault != "":
		return fmt.Sprintf("it had been acked, but the ack never took effect at the broker (fault %s: lost on the way, or not yet applied when the connection went away), so the broker delivered it again", fault)
	case acked:
		return "it had been acked, but the broker had not applied the ack when the consumer's connection went away, so it delivered it again"
	case gone && fault != "":
		return fmt.Sprintf("consumer %d went away (fault %s) before acking it, so the broker delivered it again", by, fault)
	case gone:
		return fmt.Sprintf("consumer %d went away before acking it, so the broker delivered it again", by)
	case fault != "":
		return fmt.Sprintf("not acked when fault %s hit, so the broker delivered it again", fault)
	}
	return "the broker delivered it again before any ack of it reached it"
}

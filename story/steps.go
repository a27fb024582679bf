package story

import (
	"fmt"
	"strings"
	"time"

	"github.com/dqbench/dqbench/brokers"
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
	for _, e := range s.Events {
		var text string
		switch e.Type {
		case history.Publish:
			text = fmt.Sprintf("published (attempt %d)", max(e.Attempt, 1))
		case history.Confirm:
			text = "confirmed"
		case history.PubFailed:
			switch {
			case e.Refused:
				text = "refused by the broker: not stored"
			case strings.Contains(e.Reason, brokers.ErrUnconfirmed.Error()):
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
		case history.Fault:
			text = "fault " + e.Fault
			if e.Point != "" && e.Fault != e.Point && !strings.HasSuffix(e.Fault, "@"+e.Point) {
				text += " at " + e.Point
			}
			if e.Reason != "" {
				text += ": " + e.Reason
			}
		case history.Crash:
			text = "crashed"
			if e.Reason != "" {
				text += ": " + e.Reason
			}
		case history.Start:
			text = "started"
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

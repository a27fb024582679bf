// Package check judges a run: a pure function of the recorded history, the
// final audit of each variant's store and the scenario's expectations.
//
// Everything is counted per intent, never from totals, so a duplicate can
// never hide an equal number of losses.
package check

import (
	"errors"
	"fmt"
	"sort"

	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/store"
)

// The guarantees a variant can break, and the ways a run can be invalid.
var (
	ErrDuplicated      = errors.New("an intent's effect applied more than once")
	ErrLost            = errors.New("an acknowledged intent's effect never applied")
	ErrFaultNeverFired = errors.New("a configured fault never fired")
	ErrInconsistent    = errors.New("the store's balances disagree with its ledger")
)

// Counts are the per-variant numbers dqbench reports. All but Effects and
// FaultsInjected count intents.
type Counts struct {
	Attempted      int `json:"attempted"`       // intents the producer tried to publish
	Acknowledged   int `json:"acknowledged"`    // intents the broker confirmed
	Indeterminate  int `json:"indeterminate"`   // intents attempted but never confirmed: the outcome is unknown (timed out, connection closed)
	Delivered      int `json:"delivered"`       // intents delivered to a consumer at least once
	Redelivered    int `json:"redelivered"`     // intents delivered more than once (a redelivery, or a second copy in the log)
	Effects        int `json:"effects"`         // business effects applied, in total (ledger rows)
	Duplicates     int `json:"duplicates"`      // intents whose effect applied more than once
	Lost           int `json:"lost"`            // acknowledged intents whose effect never applied
	Unexpected     int `json:"unexpected"`      // intents with effects that were never published
	DeadLettered   int `json:"dead_lettered"`   // intents sent to a dead-letter queue at least once
	FaultsInjected int `json:"faults_injected"` // fault injections, in total
}

// Get returns the count named as in JSON (and in scenario expectations).
func (c Counts) Get(name string) (int, bool) {
	switch name {
	case "attempted":
		return c.Attempted, true
	case "acknowledged":
		return c.Acknowledged, true
	case "indeterminate":
		return c.Indeterminate, true
	case "delivered":
		return c.Delivered, true
	case "redelivered":
		return c.Redelivered, true
	case "effects":
		return c.Effects, true
	case "duplicates":
		return c.Duplicates, true
	case "lost":
		return c.Lost, true
	case "unexpected":
		return c.Unexpected, true
	case "dead_lettered":
		return c.DeadLettered, true
	case "faults_injected":
		return c.FaultsInjected, true
	}
	return 0, false
}

// intent is everything the history and audit say about one intent.
type intent struct {
	published, confirmed, failed bool
	deliveries                   int
	flagged                      bool // a delivery was flagged as redelivered
	positions                    map[[2]int64]bool
	skipped                      bool // the strategy skipped a delivery as a duplicate
	deadLettered                 bool
	applied                      int // from the audit
}

// Tally counts one variant's events (all for that variant) against its
// store audit. It also returns explanations of where duplicates and losses
// came from, for people reading the report.
func Tally(events []history.Event, audit store.Audit) (Counts, []string) {
	var c Counts
	intents := map[int]*intent{}
	get := func(id int) *intent {
		in := intents[id]
		if in == nil {
			in = &intent{}
			intents[id] = in
		}
		return in
	}
	crashes, drained, sawDrain := 0, false, false
	for _, e := range events {
		switch e.Type {
		case history.Publish:
			get(e.Intent).published = true
		case history.Confirm:
			get(e.Intent).confirmed = true
		case history.PubFailed:
			get(e.Intent).failed = true
		case history.Deliver:
			in := get(e.Intent)
			in.deliveries++
			in.flagged = in.flagged || e.Redelivered
			if in.positions == nil {
				in.positions = map[[2]int64]bool{}
			}
			in.positions[[2]int64{int64(e.Partition), e.Offset}] = true
		case history.Effect:
			if !e.Applied {
				get(e.Intent).skipped = true
			}
		case history.DeadLetter:
			get(e.Intent).deadLettered = true
		case history.Fault:
			c.FaultsInjected++
		case history.Crash:
			crashes++
		case history.Drain:
			sawDrain, drained = true, e.Drained
		}
	}
	for id, n := range audit.Applied {
		get(id).applied = n
	}

	var lostSkipped, lostUndelivered, lostUnprocessed, lostDeadLettered, logCopies int
	ids := make([]int, 0, len(intents))
	for id := range intents {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		in := intents[id]
		c.Effects += in.applied
		if in.deadLettered {
			c.DeadLettered++
		}
		if !in.published {
			if in.applied > 0 {
				c.Unexpected++
			}
			continue
		}
		c.Attempted++
		switch {
		case in.confirmed:
			c.Acknowledged++
		default:
			c.Indeterminate++
		}
		if in.deliveries > 0 {
			c.Delivered++
		}
		if in.deliveries > 1 || in.flagged {
			c.Redelivered++
		}
		if len(in.positions) > 1 {
			logCopies++
		}
		if in.applied > 1 {
			c.Duplicates++
		}
		if in.confirmed && in.applied == 0 {
			c.Lost++
			switch {
			case in.deadLettered:
				lostDeadLettered++
			case in.deliveries == 0:
				lostUndelivered++
			case in.skipped:
				lostSkipped++
			default:
				lostUnprocessed++
			}
		}
	}

	var notes []string
	if logCopies > 0 {
		notes = append(notes, fmt.Sprintf("%d intents were stored more than once by the broker (a producer retry after a lost response, without producer idempotence)", logCopies))
	}
	if crashes > 0 {
		notes = append(notes, fmt.Sprintf("%d consumer crashes, each followed by a replacement; the broker redelivers whatever a crashed consumer had not acked", crashes))
	}
	if c.Duplicates > 0 {
		notes = append(notes, fmt.Sprintf("%d intents had their effect applied more than once: the strategy did not recognise the redelivery", c.Duplicates))
	}
	if lostSkipped > 0 {
		notes = append(notes, fmt.Sprintf("%d intents were skipped as already processed but their effect never applied: the dedup marker was committed without the effect", lostSkipped))
	}
	if lostUnprocessed > 0 {
		notes = append(notes, fmt.Sprintf("%d intents were delivered but never processed and not redelivered: acked before processing, then the consumer died", lostUnprocessed))
	}
	if lostDeadLettered > 0 {
		notes = append(notes, fmt.Sprintf("%d intents went to the dead-letter queue without their effect applying", lostDeadLettered))
	}
	if lostUndelivered > 0 {
		notes = append(notes, fmt.Sprintf("%d acknowledged intents were never delivered", lostUndelivered))
	}
	if sawDrain && !drained {
		notes = append(notes, "the drain ended at its grace period with acknowledged intents still unconsumed")
	}
	if len(audit.BalanceMismatch) > 0 {
		notes = append(notes, fmt.Sprintf("%d accounts' balances disagree with their ledger rows", len(audit.BalanceMismatch)))
	}
	return c, notes
}

package check

import (
	"fmt"

	"github.com/dqbench/dqbench/history"
)

// producerRows marks what the producer application's store holds
// (producer.pattern dual-write or outbox): an intent whose business row it
// holds was handed over, and one never published is lost as unpublished.
// A saved run from before the producer audit has only the write events.
func (t *tally) producerRows(p *history.ProducerAudit) {
	if p == nil {
		t.each(func(_ int, f *facts) {
			if f.has(written) {
				f.flags |= stored
			}
		})
		return
	}
	for _, rows := range []struct {
		ids  []int
		flag uint32
	}{{p.Rows, stored}, {p.Outbox, outboxRow}, {p.Sent, sentMark}} {
		for _, id := range rows.ids {
			t.get(id).flags |= rows.flag
		}
	}
}

// producerDisagrees holds the producer application's store against the
// history: each business row has its write event and each write event its
// row; with the outbox, each business row has its outbox row (one
// transaction wrote both), a row marked sent was confirmed (the relay
// marks a row once the broker confirmed its publish), and after a complete
// drain every outbox row is marked sent (the producer is done only once
// the relay found no row unsent). Nil without a producer audit.
func (t *tally) producerDisagrees(p *history.ProducerAudit) []string {
	if p == nil {
		return nil
	}
	outbox := len(p.Outbox) > 0
	var problems []disagreement
	note := func(what string, id int) {
		for i := range problems {
			if problems[i].what == what {
				problems[i].add(id)
				return
			}
		}
		problems = append(problems, disagreement{what: what})
		problems[len(problems)-1].add(id)
	}
	t.each(func(id int, f *facts) {
		switch {
		case f.has(written) && !f.has(stored):
			note("a write event and no business row", id)
		case f.has(stored) && !f.has(written):
			note("a business row and no write event", id)
		}
		if outbox && f.has(stored) != f.has(outboxRow) {
			note("a business row without its outbox row, or the reverse", id)
		}
		if f.has(sentMark) && !f.has(confirmed) {
			note("an outbox row marked sent and no confirm", id)
		}
		if f.has(outboxRow) && !f.has(sentMark) && t.drained() {
			note("an outbox row never marked sent, yet the drain completed", id)
		}
	})
	var out []string
	for _, d := range problems {
		out = append(out, fmt.Sprintf("%v: %s", ErrProducerDisagree, d))
	}
	return out
}

// disagreement is one way the producer's store and the history disagree,
// with how many intents and the first few of them.
type disagreement struct {
	what    string
	n       int
	intents []int
}

func (d *disagreement) add(id int) {
	d.n++
	if len(d.intents) < 5 {
		d.intents = append(d.intents, id)
	}
}

func (d disagreement) String() string {
	return fmt.Sprintf("%d intents with %s (intents %v)", d.n, d.what, d.intents)
}

package check_test

import (
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
)

// TestProducerApp: what the producer application did (producer.pattern)
// is counted from the history alone. An intent written and never
// published is lost in the producer, even when the drain gave up (it never
// reached the broker); one the outbox relay published twice, both copies
// applied, is a duplicate with its own cause.
func TestProducerApp(t *testing.T) {
	crash := func(intent int, point string) history.Event {
		e := ev(history.Fault, intent)
		e.Fault, e.Point, e.Attempt = "producer-app-crash@"+point, point, 1
		return e
	}
	for _, drained := range []bool{true, false} {
		events := join(
			one(ev(history.Written, 1)), clean(1),
			// 2: written, the application died before the publish.
			one(ev(history.Written, 2), crash(2, "between-write-and-publish")),
			// 3: the relay died after the confirm; published again.
			one(ev(history.Written, 3)), published(3), one(crash(3, "after-publish-before-mark")), published(3),
			one(delivered(3, 3), effect(3, true), delivered(3, 4), effect(3, true)),
			// 4: a publish never confirmed nor delivered.
			one(ev(history.Written, 4), ev(history.Publish, 4)),
			one(history.Event{Variant: "v", Type: history.Drain, Drained: drained}),
		)
		plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
		in, err := check.Inspect(plan, check.Meta{}, history.Events(events), map[string]history.Audit{"v": applied(map[int]int{1: 1, 3: 2})})
		if err != nil {
			t.Fatal(err)
		}
		v := in.Variants[0]
		wantLost := map[bool]int{true: 2, false: 1}[drained] // 4 counts only after a complete drain
		if v.Attempted != 3 || v.Duplicates != 1 || v.Lost != wantLost || v.LostByCause["unpublished"] != 1 {
			t.Errorf("drained %v: attempted %d, duplicates %d, lost %d %v; want 3, 1, %d with 1 unpublished",
				drained, v.Attempted, v.Duplicates, v.Lost, v.LostByCause, wantLost)
		}
		if got := in.Intent("v", 2); got.Verdict != check.Lost || got.Cause != check.LostUnpublished {
			t.Errorf("drained %v: intent 2: %+v, want lost, unpublished", drained, got)
		}
		if got := in.Intent("v", 3); got.Verdict != check.Duplicate || got.Cause != check.DupRelayed {
			t.Errorf("drained %v: intent 3: %+v, want duplicate, relayed-again", drained, got)
		}
	}
}

// TestProducerAudit: the producer application's store (Audit.Producer) is
// held against the history. An unpublished loss is an intent whose
// business row the store holds and that was never published; a row
// without its write event, a write event without its row, a business row
// without its outbox row and a row marked sent that no confirm preceded
// each make the variant invalid, naming the intents. A saved run from
// before the producer audit (nil) counts from the write events alone.
func TestProducerAudit(t *testing.T) {
	drained := one(history.Event{Variant: "v", Type: history.Drain, Drained: true})
	// 1 written and published; 2 written and never published.
	dual := join(one(ev(history.Written, 1)), clean(1), one(ev(history.Written, 2)), drained)
	rows := func(p history.ProducerAudit) *history.ProducerAudit { return &p }
	for _, tc := range []struct {
		name     string
		events   []history.Event
		producer *history.ProducerAudit
		lost     int
		invalid  string // "" when valid, else what the line names
		both     bool   // intent 2's effect applied too
	}{
		{"agrees", dual, rows(history.ProducerAudit{Rows: []int{1, 2}}), 1, "", false},
		{"no producer audit", dual, nil, 1, "", false},
		{"row without its write", join(clean(1), one(ev(history.Written, 2)), drained),
			rows(history.ProducerAudit{Rows: []int{1, 2}}), 1, "1 intents with a business row and no write event (intents [1])", false},
		{"write without its row", dual,
			rows(history.ProducerAudit{Rows: []int{1}}), 0, "1 intents with a write event and no business row (intents [2])", false},
		{"a row of an intent never written nor published", join(one(ev(history.Written, 1)), clean(1), drained),
			rows(history.ProducerAudit{Rows: []int{1, 3}}), 1, "1 intents with a business row and no write event (intents [3])", false},
		{"outbox agrees", join(one(ev(history.Written, 1)), clean(1), drained),
			rows(history.ProducerAudit{Rows: []int{1}, Outbox: []int{1}, Sent: []int{1}}), 0, "", false},
		{"outbox row missing", join(one(ev(history.Written, 1), ev(history.Written, 2)), clean(1), clean(2), drained),
			rows(history.ProducerAudit{Rows: []int{1, 2}, Outbox: []int{1}, Sent: []int{1}}), 0, "1 intents with a business row without its outbox row, or the reverse (intents [2])", true},
		{"unsent after a complete drain", join(one(ev(history.Written, 1)), clean(1), drained),
			rows(history.ProducerAudit{Rows: []int{1}, Outbox: []int{1}}), 0, "1 intents with an outbox row never marked sent, yet the drain completed (intents [1])", false},
		{"sent without a confirm", join(one(ev(history.Written, 1), ev(history.Written, 2)), clean(1), drained),
			rows(history.ProducerAudit{Rows: []int{1, 2}, Outbox: []int{1, 2}, Sent: []int{1, 2}}), 1, "1 intents with an outbox row marked sent and no confirm (intents [2])", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
			audit := applied(map[int]int{1: 1})
			if tc.both {
				audit.Applied[2] = 1
			}
			audit.Producer = tc.producer
			in, err := check.Inspect(plan, check.Meta{}, history.Events(tc.events), map[string]history.Audit{"v": audit})
			if err != nil {
				t.Fatal(err)
			}
			v := in.Variants[0]
			if v.Lost != tc.lost || v.LostByCause["unpublished"] != tc.lost {
				t.Errorf("lost %d %v, want %d unpublished", v.Lost, v.LostByCause, tc.lost)
			}
			switch {
			case tc.invalid == "" && len(v.Invalid) > 0:
				t.Errorf("invalid: %q, want valid", v.Invalid)
			case tc.invalid != "" && (len(v.Invalid) != 1 || v.Invalid[0] != check.ErrProducerDisagree.Error()+": "+tc.invalid):
				t.Errorf("invalid: %q, want one line %q", v.Invalid, tc.invalid)
			}
		})
	}
}

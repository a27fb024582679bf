package check_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/check/checktest"
	"github.com/dqbench/dqbench/history"
)

// The helpers below build one variant's history by hand; every event is
// stamped with variant "v" unless the test changes it.

func ev(t history.Type, intent int) history.Event {
	return history.Event{Variant: "v", Type: t, Intent: intent}
}

// published: the producer sent intent and the broker confirmed it.
func published(intent int) []history.Event {
	return []history.Event{ev(history.Publish, intent), ev(history.Confirm, intent)}
}

// delivered: a delivery of intent at log position (partition 0, offset).
func delivered(intent int, offset int64) history.Event {
	e := ev(history.Deliver, intent)
	e.Position = fmt.Sprintf("0@%d", offset)
	return e
}

func effect(intent int, applied bool) history.Event {
	e := ev(history.Effect, intent)
	e.Applied = applied
	if !applied {
		e.Reason = "duplicate: message id already in the dedup table"
	}
	return e
}

func fault(name string) history.Event {
	e := ev(history.Fault, 0)
	e.Fault = name
	return e
}

// clean: published, confirmed, delivered once, applied once, acked.
func clean(intent int) []history.Event {
	return append(published(intent), delivered(intent, int64(intent)), effect(intent, true), ev(history.Ack, intent))
}

func join(parts ...[]history.Event) []history.Event {
	var out []history.Event
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(e ...history.Event) []history.Event { return e }

func applied(m map[int]int) history.Audit { return history.Audit{Applied: m} }

func TestTally(t *testing.T) {
	drainEnd := ev(history.Drain, 0)
	drainEnd.Drained = true
	drainCut := ev(history.Drain, 0)
	flagged := delivered(1, 1)
	flagged.Redelivered = true

	tests := []struct {
		name   string
		events []history.Event
		audit  history.Audit
		// want: the counts the case is about, by name in check.Table;
		// the others are not compared.
		want map[string]int
		// notes: one substring per expected note, in order; no other notes.
		notes []string
	}{
		{
			name:   "empty run",
			events: nil,
			audit:  applied(map[int]int{}),
			want:   map[string]int{"attempted": 0, "effects": 0, "duplicates": 0, "lost": 0, "faults_injected": 0},
		},
		{
			// Intents 1 and 17 update account 1, 2 account 2. 17 is
			// applied before 1, which was published earlier: 1 is out of
			// order. 2 comes after 17 too, but updates another account;
			// 1's second application (a duplicate) is not judged again.
			name: "an account's later update applied first",
			events: join(published(1), published(2), published(17),
				one(delivered(17, 3), effect(17, true), delivered(1, 1), effect(1, true), delivered(2, 2), effect(2, true),
					delivered(1, 1), effect(1, true), drainEnd)),
			audit: applied(map[int]int{1: 2, 2: 1, 17: 1}),
			want:  map[string]int{"out_of_order": 1, "duplicates": 1, "lost": 0},
			// Tally judges no plan: order is not its subject, one short line.
			notes: []string{"1 intents had their effect applied more than once", "1 intents applied out of publication order (out_of_order); this variant expects nothing of order"},
		},
		{
			// Publication order is the first publish's place in the
			// history, not the intent id; an intent skipped or never
			// applied has no place in the effect order.
			name: "effects in publication order, one skipped",
			events: join(published(33), published(17), published(1),
				one(delivered(33, 1), effect(33, true), delivered(17, 2), effect(17, false), delivered(1, 3), effect(1, true), drainEnd)),
			audit: applied(map[int]int{33: 1, 1: 1}),
			want:  map[string]int{"out_of_order": 0, "lost": 1},
			notes: []string{"1 intents lost in the consumer (skipped)"},
		},
		{
			name:   "clean run",
			events: join(clean(1), clean(2), clean(3), one(drainEnd)),
			audit:  applied(map[int]int{1: 1, 2: 1, 3: 1}),
			want:   map[string]int{"attempted": 3, "acknowledged": 3, "delivered": 3, "effects": 3, "duplicates": 0, "lost": 0},
		},
		{
			// Totals agree (2 effects for 2 acknowledged intents), yet one
			// intent applied twice and the other never: count per intent.
			name: "duplicate hiding a loss in totals",
			events: join(published(1), published(2),
				one(delivered(1, 1), effect(1, true), delivered(1, 1), effect(1, true), ev(history.Ack, 1), drainEnd)),
			audit: applied(map[int]int{1: 2}),
			want:  map[string]int{"attempted": 2, "acknowledged": 2, "delivered": 1, "redelivered": 1, "effects": 2, "duplicates": 1, "lost": 1},
			notes: []string{"1 intents had their effect applied more than once", "1 intents lost in the broker (undelivered)"},
		},
		{
			// At most once: handed to the producer, never confirmed, never
			// delivered after a complete drain.
			name:   "indeterminate publish, never applied, is lost before the broker",
			events: one(ev(history.Publish, 1), ev(history.PubFailed, 1), drainEnd),
			audit:  applied(map[int]int{}),
			want:   map[string]int{"attempted": 1, "indeterminate": 1, "lost": 1, "duplicates": 0},
			notes:  []string{"1 intents lost before the broker or unseen in it (unconfirmed): handed to the producer, never confirmed"},
		},
		{
			name:   "indeterminate publish, never applied, run ended before its drain: not counted",
			events: one(ev(history.Publish, 1), ev(history.PubFailed, 1)),
			audit:  applied(map[int]int{}),
			want:   map[string]int{"attempted": 1, "indeterminate": 1, "duplicates": 0, "lost": 0},
			notes:  []string{"1 unconfirmed intents had not been delivered when the run ended, before its drain: not counted as lost"},
		},
		{
			name:   "indeterminate publish, never applied, drain gave up: not counted",
			events: one(ev(history.Publish, 1), ev(history.PubFailed, 1), drainCut),
			audit:  applied(map[int]int{}),
			want:   map[string]int{"attempted": 1, "indeterminate": 1, "duplicates": 0, "lost": 0},
			notes:  []string{"1 unconfirmed intents had not been delivered when the drain gave up: not counted as lost"},
		},
		{
			// autoAck: the broker forgot 2 and 3 as it sent them; the
			// consumer died with them in its client's buffer (the crash
			// event lists them), never handed out: lost in the consumer,
			// not in the broker. 4 was never sent to it: undelivered.
			name: "received by the client, dropped with it at a crash: lost in the consumer",
			events: join(published(1), published(2), published(3), published(4),
				one(delivered(1, 1), history.Event{Variant: "v", Type: history.Crash, Consumer: 1, Intents: []int{2, 3}}, drainEnd)),
			audit: applied(map[int]int{}),
			want:  map[string]int{"delivered": 1, "lost": 4, "duplicates": 0},
			notes: []string{"1 consumer crashes, each followed by a replacement; the broker had forgotten what it sent them (acked as sent: autoAck), so 2 messages", "1 intents lost in the broker (undelivered)", "3 intents lost in the consumer (unprocessed)"},
		},
		{
			// The confirm of attempt 1 came, after the producer had given
			// the send up: it sent attempt 2, stored as a second copy.
			// Intent 3's confirm never came and no fault named it: the
			// same. Intent 2's retry followed a confirm a fault lost: no
			// such note for it.
			name: "sent again after a late confirm: the notes say so",
			events: one(
				history.Event{Variant: "v", Type: history.Publish, Intent: 1, Attempt: 1}, ev(history.Confirm, 1), ev(history.PubFailed, 1),
				history.Event{Variant: "v", Type: history.Publish, Intent: 1, Attempt: 2}, ev(history.Confirm, 1),
				history.Event{Variant: "v", Type: history.Publish, Intent: 2, Attempt: 1},
				history.Event{Variant: "v", Type: history.Fault, Intent: 2, Attempt: 1, Fault: "confirm-lost"}, ev(history.PubFailed, 2),
				history.Event{Variant: "v", Type: history.Publish, Intent: 3, Attempt: 1}, ev(history.PubFailed, 3),
				history.Event{Variant: "v", Type: history.Publish, Intent: 3, Attempt: 2}, ev(history.Confirm, 3),
				history.Event{Variant: "v", Type: history.Publish, Intent: 2, Attempt: 2}, ev(history.Confirm, 2),
				delivered(1, 1), effect(1, true), delivered(1, 2), effect(1, true),
				delivered(2, 3), effect(2, true), delivered(2, 4), effect(2, true),
				delivered(3, 5), effect(3, true), delivered(3, 6), effect(3, true), drainEnd),
			audit: applied(map[int]int{1: 2, 2: 2, 3: 2}),
			want:  map[string]int{"duplicates": 3, "lost": 0},
			notes: []string{"3 intents were stored more than once by the broker", "2 of them were sent again although no fault was aimed at their publish", "3 intents had their effect applied more than once"},
		},
		{
			// The broker said no: the producer was told, so refused, not lost.
			name:   "a publish the broker refused is refused, not lost",
			events: one(ev(history.Publish, 1), history.Event{Variant: "v", Type: history.PubFailed, Intent: 1, Refused: true}, drainEnd),
			audit:  applied(map[int]int{}),
			want:   map[string]int{"attempted": 1, "indeterminate": 1, "refused": 1, "duplicates": 0, "lost": 0},
			notes:  []string{"1 intents were refused by the broker"},
		},
		{
			// Refused on the first attempt, stored on the second: applied.
			name: "refused, then confirmed on a retry",
			events: one(ev(history.Publish, 1), history.Event{Variant: "v", Type: history.PubFailed, Intent: 1, Refused: true},
				ev(history.Publish, 1), ev(history.Confirm, 1), delivered(1, 1), effect(1, true), drainEnd),
			audit: applied(map[int]int{1: 1}),
			want:  map[string]int{"attempted": 1, "acknowledged": 1, "delivered": 1, "effects": 1, "duplicates": 0, "lost": 0, "refused": 0},
		},
		{
			// Refused after a try whose outcome was unknown, but that try
			// was stored: delivered, so not refused; never applied: lost.
			name: "refused, but an earlier try was delivered: lost in the consumer",
			events: one(ev(history.Publish, 1), ev(history.PubFailed, 1), ev(history.Publish, 1),
				history.Event{Variant: "v", Type: history.PubFailed, Intent: 1, Refused: true}, delivered(1, 1), drainEnd),
			audit: applied(map[int]int{}),
			want:  map[string]int{"attempted": 1, "indeterminate": 1, "delivered": 1, "lost": 1, "duplicates": 0, "refused": 0},
			notes: []string{"1 intents lost in the consumer (unprocessed)"},
		},
		{
			// The broker stored it even though the producer never heard back.
			name:   "indeterminate publish that the broker stored and the consumer applied",
			events: one(ev(history.Publish, 1), ev(history.PubFailed, 1), delivered(1, 1), effect(1, true)),
			audit:  applied(map[int]int{1: 1}),
			want:   map[string]int{"attempted": 1, "indeterminate": 1, "delivered": 1, "effects": 1, "duplicates": 0, "lost": 0},
		},
		{
			name:   "publish without confirm or failure is indeterminate",
			events: one(ev(history.Publish, 1)),
			audit:  applied(map[int]int{}),
			want:   map[string]int{"attempted": 1, "indeterminate": 1, "duplicates": 0, "lost": 0},
			notes:  []string{"1 unconfirmed intents had not been delivered when the run ended"},
		},
		{
			name: "retried publish confirmed on the second attempt counts one intent",
			events: one(
				history.Event{Variant: "v", Type: history.Publish, Intent: 1, Attempt: 1},
				ev(history.PubFailed, 1),
				history.Event{Variant: "v", Type: history.Publish, Intent: 1, Attempt: 2},
				ev(history.Confirm, 1),
				delivered(1, 1), effect(1, true)),
			audit: applied(map[int]int{1: 1}),
			want:  map[string]int{"attempted": 1, "acknowledged": 1, "delivered": 1, "effects": 1, "duplicates": 0, "lost": 0},
		},
		{
			name:   "unexpected effect for an intent never published",
			events: clean(1),
			audit:  applied(map[int]int{1: 1, 99: 1}),
			want:   map[string]int{"attempted": 1, "acknowledged": 1, "delivered": 1, "effects": 2, "unexpected": 1, "duplicates": 0, "lost": 0},
		},
		{
			name:   "delivered but never published and not applied is not counted",
			events: one(delivered(7, 7)),
			audit:  applied(map[int]int{}),
			want:   map[string]int{"attempted": 0, "delivered": 0, "effects": 0, "unexpected": 0, "duplicates": 0, "lost": 0},
		},
		{
			name: "two deliveries of the same position count one redelivered intent",
			events: join(clean(1), published(2),
				one(delivered(2, 2), delivered(2, 2), effect(2, true))),
			audit: applied(map[int]int{1: 1, 2: 1}),
			want:  map[string]int{"attempted": 2, "acknowledged": 2, "delivered": 2, "redelivered": 1, "effects": 2, "duplicates": 0, "lost": 0},
		},
		{
			name:   "one delivery flagged redelivered by the broker",
			events: join(published(1), one(flagged, effect(1, true))),
			audit:  applied(map[int]int{1: 1}),
			want:   map[string]int{"attempted": 1, "acknowledged": 1, "delivered": 1, "redelivered": 1, "effects": 1, "duplicates": 0, "lost": 0},
		},
		{
			name: "three deliveries of one intent still count one redelivered intent",
			events: join(published(1),
				one(delivered(1, 1), delivered(1, 1), delivered(1, 1), effect(1, false), effect(1, false), effect(1, true))),
			audit: applied(map[int]int{1: 1}),
			want:  map[string]int{"attempted": 1, "acknowledged": 1, "delivered": 1, "redelivered": 1, "effects": 1, "duplicates": 0, "lost": 0},
		},
		{
			name: "dead letters, faults and crashes",
			events: join(clean(1), published(2), published(3),
				one(delivered(2, 2), ev(history.DeadLetter, 2),
					delivered(3, 3), ev(history.DeadLetter, 3),
					fault("crash"), ev(history.Crash, 0), fault("crash"), ev(history.Crash, 0), fault("lost-response"))),
			audit: applied(map[int]int{1: 1}),
			want:  map[string]int{"attempted": 3, "acknowledged": 3, "delivered": 3, "effects": 1, "lost": 2, "dead_lettered": 2, "faults_injected": 3, "duplicates": 0},
			notes: []string{"2 consumer crashes", "2 intents lost in the broker (dead-lettered)"},
		},
		{
			// A producer retry after a lost response stored intent 1 at two
			// offsets; without dedup both copies applied. Tally counts the
			// intent as redelivered (two deliveries) although no log
			// position came twice; this pins the current behaviour.
			name: "log copies",
			events: one(
				ev(history.Publish, 1), fault("produce-response-lost"), ev(history.Publish, 1), ev(history.Confirm, 1),
				delivered(1, 0), effect(1, true), delivered(1, 1), effect(1, true)),
			audit: applied(map[int]int{1: 2}),
			want:  map[string]int{"attempted": 1, "acknowledged": 1, "delivered": 1, "redelivered": 1, "effects": 2, "duplicates": 1, "faults_injected": 1, "lost": 0},
			notes: []string{"1 intents were stored more than once by the broker", "1 intents had their effect applied more than once"},
		},
		{
			// dedup-table-split: the marker committed, the consumer crashed
			// before the effect, the redelivery was skipped.
			name: "dedup skip loses the effect",
			events: join(clean(2), published(1), one(
				delivered(1, 1), fault("crash@between-dedup-and-effect"), ev(history.Crash, 0),
				ev(history.Start, 0), delivered(1, 1), effect(1, false), ev(history.Ack, 1))),
			audit: applied(map[int]int{2: 1}),
			want:  map[string]int{"attempted": 2, "acknowledged": 2, "delivered": 2, "redelivered": 1, "effects": 1, "lost": 1, "faults_injected": 1, "duplicates": 0},
			notes: []string{"1 consumer crashes", "the dedup marker was committed without the effect"},
		},
		{
			// The drain gave up: an intent still on the broker is not a
			// loss the run observed.
			name:   "drain cut short",
			events: join(clean(1), published(2), one(drainCut)),
			audit:  applied(map[int]int{1: 1}),
			want:   map[string]int{"attempted": 2, "acknowledged": 2, "delivered": 1, "effects": 1, "duplicates": 0, "lost": 0},
			notes:  []string{"1 acknowledged intents were still undelivered when the drain gave up"},
		},
		{
			// Poison messages looped ahead of intent 2 until the drain
			// ended: starved, not lost, and no incomplete drain.
			name: "starved behind looping poison",
			events: join(clean(1), published(2), published(3), one(delivered(3, 3),
				history.Event{Variant: "v", Type: history.Effect, Intent: 3, Rejected: true},
				history.Event{Variant: "v", Type: history.Drain, Starved: true, Backlog: 2, Intents: []int{3}})),
			audit: applied(map[int]int{1: 1}),
			want:  map[string]int{"attempted": 3, "acknowledged": 3, "delivered": 2, "effects": 1, "rejected": 1, "starved": 1, "duplicates": 0, "lost": 0},
			notes: []string{"1 intents were refused by the consumer", "1 intents were starved: never delivered while 1 poison messages looped", "1 poison messages were still looping"},
		},
		{
			// acks=none: never confirmed, but delivered, so the broker had
			// it; acked before processing and the consumer died: lost.
			name: "indeterminate but delivered and never applied is lost",
			events: one(ev(history.Publish, 1), ev(history.PubFailed, 1), delivered(1, 1), ev(history.Ack, 1),
				fault("crash@before-process"), ev(history.Crash, 0), drainEnd),
			audit: applied(map[int]int{}),
			want:  map[string]int{"attempted": 1, "indeterminate": 1, "delivered": 1, "lost": 1, "faults_injected": 1, "duplicates": 0},
			notes: []string{"1 consumer crashes", "1 intents lost in the consumer (unprocessed): delivered but never processed"},
		},
		{
			name:   "balance mismatch",
			events: clean(1),
			audit:  history.Audit{Applied: map[int]int{1: 1}, BalanceMismatch: []int{3, 4}},
			want:   map[string]int{"attempted": 1, "acknowledged": 1, "delivered": 1, "effects": 1, "duplicates": 0, "lost": 0},
			notes:  []string{"2 accounts' balances disagree"},
		},
		{
			name:   "nil audit map: nothing applied",
			events: clean(1),
			audit:  history.Audit{},
			want:   map[string]int{"attempted": 1, "acknowledged": 1, "delivered": 1, "lost": 1, "duplicates": 0},
			notes:  []string{"1 intents lost in the consumer (unprocessed)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes := tally(t, tt.events, tt.audit)
			checktest.WantCounts(t, got, tt.want)
			if len(notes) != len(tt.notes) {
				t.Fatalf("got %d notes, want %d:\n%s", len(notes), len(tt.notes), strings.Join(notes, "\n"))
			}
			for i, want := range tt.notes {
				if !strings.Contains(notes[i], want) {
					t.Errorf("note %d = %q, want it to contain %q", i, notes[i], want)
				}
			}
		})
	}
}

func tally(t *testing.T, events []history.Event, audit history.Audit) (check.Counts, []string) {
	t.Helper()
	c, notes, err := check.Tally(history.Events(events), audit)
	if err != nil {
		t.Fatal(err)
	}
	return c, notes
}

// Tally must count the same whatever the order of the audit map.
func TestTallyStableNotes(t *testing.T) {
	events := join(clean(1), published(2), published(3), one(delivered(3, 3), effect(3, false)))
	audit := applied(map[int]int{1: 3, 5: 1})
	c0, n0 := tally(t, events, audit)
	for range 20 {
		c, n := tally(t, events, audit)
		if c != c0 || strings.Join(n, "\n") != strings.Join(n0, "\n") {
			t.Fatalf("Tally is not deterministic: %+v %q vs %+v %q", c, n, c0, n0)
		}
	}
}

// A bad history line stops the count with its error.
func TestTallyReadError(t *testing.T) {
	_, _, err := check.Tally(history.Scan(strings.NewReader(`{"variant":"v","type":"publish","intent":1}`+"\n{oops\n")), history.Audit{})
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want the bad line named", err)
	}
}

func TestCountsGet(t *testing.T) {
	c := check.Counts{
		Attempted: 1, Acknowledged: 2, Indeterminate: 3, Delivered: 4, Redelivered: 5, Effects: 6,
		Duplicates: 7, Lost: 8, Unexpected: 9, DeadLettered: 10, FaultsInjected: 11,
	}
	// Get must agree with the JSON names, which are the names scenarios use.
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var byJSON map[string]int
	if err := json.Unmarshal(b, &byJSON); err != nil {
		t.Fatal(err)
	}
	if len(byJSON) != len(check.Table) {
		t.Errorf("Counts has %d JSON fields, check.Table has %d rows", len(byJSON), len(check.Table))
	}
	for _, name := range check.CountNames() {
		got, ok := c.Get(name)
		if !ok {
			t.Errorf("Get(%q) not ok", name)
			continue
		}
		want, inJSON := byJSON[name]
		if !inJSON {
			t.Errorf("count %q is not a JSON field of Counts", name)
		}
		if got != want {
			t.Errorf("Get(%q) = %d, JSON says %d", name, got, want)
		}
	}
	if _, ok := c.Get("bogus"); ok {
		t.Error(`Get("bogus") ok, want not ok`)
	}
}

// out_of_order is explained at length only where order is the variant's
// subject (an expectation on it, or version-cas); elsewhere one short
// line, so hundreds of intents out of order do not drown the lesson.
func TestOutOfOrderNoteOnlyWhereOrderIsTheSubject(t *testing.T) {
	events := join(published(1), published(17),
		one(delivered(17, 1), effect(17, true), delivered(1, 2), effect(1, true), ev(history.Drain, 0)))
	plan := check.Plan{Variants: []check.PlanVariant{
		{Name: "about-duplicates", Strategy: "none", Expect: []check.Expect{expect("duplicates", "==", 0)}},
		{Name: "about-order", Strategy: "none", Expect: []check.Expect{expect("out_of_order", ">", 0)}},
		{Name: "version-cas", Strategy: "version-cas"},
	}}
	var all []history.Event
	audits := map[string]history.Audit{}
	for _, v := range plan.Variants {
		all = append(all, forVariant(v.Name, events)...)
		audits[v.Name] = applied(map[int]int{1: 1, 17: 1})
	}
	const long, short = "the consumers applied the account's updates out of publication order", "1 intents applied out of publication order (out_of_order); this variant expects nothing of order"
	run := judge(t, plan, check.Meta{}, all, audits)
	for _, v := range run.Variants {
		if v.Counts.OutOfOrder != 1 {
			t.Fatalf("%s: out_of_order = %d, want 1", v.Name, v.Counts.OutOfOrder)
		}
		notes := strings.Join(v.Notes, "\n")
		wantLong := v.Name != "about-duplicates"
		if strings.Contains(notes, long) != wantLong || strings.Contains(notes, short) == wantLong {
			t.Errorf("%s: notes %q: want the long paragraph %v, the short line %v", v.Name, notes, wantLong, !wantLong)
		}
	}
}

// judgePlan compares two strategies under a crash between the dedup marker
// and the effect, armed only in dedup-table-split.
func judgePlan() check.Plan {
	return check.Plan{Variants: []check.PlanVariant{
		{Name: "naive", Strategy: "none", Expect: []check.Expect{
			expect("duplicates", "==", 0), expect("lost", "==", 0),
		}},
		{Name: "split", Strategy: "dedup-table-split", Expect: []check.Expect{
			expect("attempted", "==", 2), expect("duplicates", "==", 0), expect("lost", ">", 0),
		}},
	}}
}

func expect(count, op string, n int) check.Expect {
	holds := func(x int) bool { return x == n }
	switch op {
	case ">":
		holds = func(x int) bool { return x > n }
	}
	return check.Expect{Count: count, Text: fmt.Sprintf("%s %d", op, n), Holds: holds}
}

func judge(t *testing.T, plan check.Plan, meta check.Meta, events []history.Event, audits map[string]history.Audit) check.Run {
	t.Helper()
	run, err := check.Judge(plan, meta, history.Events(events), audits)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func armed(variant, fault string) history.Event {
	return history.Event{Variant: variant, Type: history.Armed, Fault: fault}
}

// forVariant restamps events with variant name.
func forVariant(name string, events []history.Event) []history.Event {
	out := make([]history.Event, len(events))
	for i, e := range events {
		e.Variant = name
		out[i] = e
	}
	return out
}

func TestJudge(t *testing.T) {
	meta := check.Meta{Scenario: "split-crash", Seed: 7, Messages: 2, Broker: "kafka", Duration: time.Second}
	naive := forVariant("naive", join(clean(1), clean(2)))
	splitLost := forVariant("split", join(one(armed("split", "crash@between")), clean(2), published(1), one(
		delivered(1, 1), fault("crash@between"), ev(history.Crash, 0), delivered(1, 1), effect(1, false))))
	splitNoFault := forVariant("split", join(one(armed("split", "crash@between")), clean(1), clean(2)))
	audits := map[string]history.Audit{
		"naive": applied(map[int]int{1: 1, 2: 1}),
		"split": applied(map[int]int{2: 1}),
	}

	t.Run("expectations pass, the fault fired where it applies", func(t *testing.T) {
		run := judge(t, judgePlan(), meta, join(naive, splitLost), audits)
		if !run.Passed || !run.Valid() {
			t.Fatalf("run passed=%v valid=%v, want both: %+v", run.Passed, run.Valid(), run)
		}
		if run.Meta != meta {
			t.Errorf("meta = %+v, want %+v", run.Meta, meta)
		}
		if len(run.Variants) != 2 || run.Variants[0].Name != "naive" || run.Variants[1].Name != "split" {
			t.Fatalf("variants = %+v, want naive then split (scenario order)", run.Variants)
		}
		naiveRes, split := run.Variants[0], run.Variants[1]
		// The crash point does not exist in strategy none: not required.
		if len(naiveRes.Invalid) != 0 {
			t.Errorf("naive invalid = %q, want none (the fault cannot fire in strategy none)", naiveRes.Invalid)
		}
		if naiveRes.Strategy != "none" || split.Strategy != "dedup-table-split" {
			t.Errorf("strategies = %q, %q", naiveRes.Strategy, split.Strategy)
		}
		checktest.WantCounts(t, split.Counts, map[string]int{
			"attempted": 2, "acknowledged": 2, "delivered": 2, "redelivered": 1, "effects": 1,
			"duplicates": 0, "lost": 1, "faults_injected": 1,
		})
		// Expectations come in the plan's order (the scenario sorts them by the count table).
		want := []check.ExpectationResult{
			{Check: "attempted == 2", Passed: true, Actual: 2},
			{Check: "duplicates == 0", Passed: true, Actual: 0},
			{Check: "lost > 0", Passed: true, Actual: 1},
		}
		if len(split.Expectations) != len(want) {
			t.Fatalf("split expectations = %+v, want %+v", split.Expectations, want)
		}
		for i := range want {
			if split.Expectations[i] != want[i] {
				t.Errorf("expectation %d = %+v, want %+v", i, split.Expectations[i], want[i])
			}
		}
		if len(split.Notes) == 0 {
			t.Error("split has no notes explaining its loss")
		}
	})

	t.Run("a failed expectation fails the variant and the run", func(t *testing.T) {
		s := judgePlan()
		s.Variants[1].Expect[2] = expect("lost", "==", 0)
		run := judge(t, s, meta, join(naive, splitLost), audits)
		if run.Passed {
			t.Fatal("run passed, want failed")
		}
		if !run.Valid() {
			t.Errorf("run invalid: %+v; a failed expectation is not an invalid experiment", run.Variants)
		}
		if !run.Variants[0].Passed {
			t.Error("naive failed, want passed")
		}
		split := run.Variants[1]
		if split.Passed {
			t.Error("split passed, want failed")
		}
		var lost *check.ExpectationResult
		for i := range split.Expectations {
			if strings.HasPrefix(split.Expectations[i].Check, "lost ") {
				lost = &split.Expectations[i]
			}
		}
		if lost == nil || lost.Passed || lost.Actual != 1 || lost.Check != "lost == 0" {
			t.Errorf("lost expectation = %+v, want failed lost == 0 with actual 1", lost)
		}
	})

	t.Run("a fault that never fired where it applies makes the run invalid", func(t *testing.T) {
		s := judgePlan()
		s.Variants[1].Expect = []check.Expect{expect("lost", "==", 0)}
		run := judge(t, s, meta, join(naive, splitNoFault), map[string]history.Audit{
			"naive": applied(map[int]int{1: 1, 2: 1}),
			"split": applied(map[int]int{1: 1, 2: 1}),
		})
		split := run.Variants[1]
		if len(split.Invalid) == 0 {
			t.Fatal("split has no Invalid, want the unfired fault")
		}
		if !strings.Contains(split.Invalid[0], check.ErrFaultNeverFired.Error()) || !strings.Contains(split.Invalid[0], "crash@between") {
			t.Errorf("invalid = %q, want it to name %q and the fault", split.Invalid, check.ErrFaultNeverFired)
		}
		// Its expectations hold, but an experiment whose fault never fired is no pass.
		if len(split.Expectations) != 1 || !split.Expectations[0].Passed {
			t.Errorf("expectations = %+v, want lost == 0 to hold", split.Expectations)
		}
		if split.Passed || run.Passed || run.Valid() {
			t.Errorf("split passed=%v run passed=%v valid=%v, want all false", split.Passed, run.Passed, run.Valid())
		}
		if len(run.Variants[0].Invalid) != 0 || !run.Variants[0].Passed {
			t.Errorf("naive = %+v, want valid and passed (the fault cannot fire in strategy none)", run.Variants[0])
		}
	})

	t.Run("a fault that fired in another variant does not count", func(t *testing.T) {
		// The fault event belongs to naive, not split.
		s := judgePlan()
		s.Variants[1].Expect = nil
		evs := join(naive, forVariant("naive", one(fault("crash@between"))), splitNoFault)
		run := judge(t, s, meta, evs, map[string]history.Audit{
			"naive": applied(map[int]int{1: 1, 2: 1}),
			"split": applied(map[int]int{1: 1, 2: 1}),
		})
		if len(run.Variants[1].Invalid) == 0 {
			t.Error("split valid, want invalid: its fault never fired")
		}
		if run.Variants[0].FaultsInjected != 1 || run.Variants[1].FaultsInjected != 0 {
			t.Errorf("faults injected = %d, %d, want 1, 0", run.Variants[0].FaultsInjected, run.Variants[1].FaultsInjected)
		}
	})

	t.Run("a missing audit makes the variant invalid", func(t *testing.T) {
		run := judge(t, judgePlan(), meta, join(naive, splitLost), map[string]history.Audit{
			"split": audits["split"],
		})
		naiveRes := run.Variants[0]
		if len(naiveRes.Invalid) != 1 || !strings.Contains(naiveRes.Invalid[0], "no store audit") {
			t.Errorf("naive invalid = %q, want the missing audit", naiveRes.Invalid)
		}
		if naiveRes.Passed || run.Passed || run.Valid() {
			t.Errorf("naive passed=%v run passed=%v valid=%v, want all false", naiveRes.Passed, run.Passed, run.Valid())
		}
		if len(run.Variants[1].Invalid) != 0 {
			t.Errorf("split invalid = %q, want none", run.Variants[1].Invalid)
		}
		// Its delivered intents are not lost for want of an audit (an
		// INVALID variant reported lost 864 from an empty one).
		if naiveRes.Lost != 0 || !strings.Contains(strings.Join(naiveRes.Notes, "\n"), "counted neither applied nor lost: no store audit") {
			t.Errorf("naive lost %d, notes %q: want 0 and a note that the store's audit is missing", naiveRes.Lost, naiveRes.Notes)
		}
	})

	t.Run("an inconsistent store makes the variant invalid", func(t *testing.T) {
		bad := map[string]history.Audit{
			"naive": {Applied: map[int]int{1: 1, 2: 1}, BalanceMismatch: []int{4}},
			"split": audits["split"],
		}
		run := judge(t, judgePlan(), meta, join(naive, splitLost), bad)
		naiveRes := run.Variants[0]
		if len(naiveRes.Invalid) != 1 || !strings.Contains(naiveRes.Invalid[0], check.ErrInconsistent.Error()) {
			t.Errorf("naive invalid = %q, want %q", naiveRes.Invalid, check.ErrInconsistent)
		}
		if naiveRes.Passed || run.Passed {
			t.Error("an inconsistent store passed")
		}
	})

	t.Run("calls the service marked wrongly make the variant invalid", func(t *testing.T) {
		// Intent 2 was called twice with one key: the second call must be
		// a replay. Recounted from the keys, intent 2 took effect once.
		calls := []history.Call{{Intent: 1, Key: "1"}, {Intent: 2, Key: "2"}, {Intent: 2, Key: "2", Replayed: true}}
		for _, tc := range []struct {
			name    string
			applied map[int]int
			invalid bool
		}{
			{"agreeing", map[int]int{1: 1, 2: 1}, false},
			{"the replay counted", map[int]int{1: 1, 2: 2}, true},
		} {
			run := judge(t, judgePlan(), meta, join(naive, splitLost), map[string]history.Audit{
				"naive": {Applied: tc.applied, Calls: calls},
				"split": audits["split"],
			})
			inv := run.Variants[0].Invalid
			if got := len(inv) == 1 && strings.Contains(inv[0], check.ErrCallsDisagree.Error()); got != tc.invalid || (!tc.invalid && len(inv) != 0) {
				t.Errorf("%s: invalid = %q, want the disagreement: %v", tc.name, inv, tc.invalid)
			}
		}
	})

	t.Run("no expectations and no faults pass", func(t *testing.T) {
		s := check.Plan{Variants: []check.PlanVariant{{Name: "naive", Strategy: "none"}}}
		run := judge(t, s, meta, naive, map[string]history.Audit{"naive": audits["naive"]})
		if !run.Passed || !run.Valid() || len(run.Variants[0].Expectations) != 0 {
			t.Errorf("run = %+v, want passed and valid, no expectations", run)
		}
	})
}

// The largest time between an intent's first and last delivery, over
// the variant's intents, against the variant's dedup window.
func TestMaxRedeliveryGap(t *testing.T) {
	at := func(e history.Event, ms int) history.Event {
		e.T = time.Duration(ms) * time.Millisecond
		return e
	}
	events := join(published(1), published(2), published(3), one(
		at(delivered(1, 1), 10), at(delivered(2, 2), 5), at(delivered(3, 3), 6),
		at(delivered(1, 1), 40), at(delivered(2, 2), 20), at(delivered(2, 2), 100), // 2: 95ms
	))
	for _, tc := range []struct {
		name   string
		window *check.Window
		events []history.Event
		gap    time.Duration
		intent int
		text   string
	}{
		{"shorter window", &check.Window{Key: "ttl", D: 50 * time.Millisecond}, events, 95 * time.Millisecond, 2,
			"max redelivery gap 95ms (intent 2, between its first and last delivery), longer than ttl 50ms: a redelivery can come after"},
		{"longer window", &check.Window{Key: "retention", D: time.Hour}, events, 95 * time.Millisecond, 2, ", within retention 1h: every redelivery"},
		{"no window", nil, events, 95 * time.Millisecond, 2, "(intent 2, between its first and last delivery)"},
		{"nothing delivered twice", &check.Window{Key: "ttl", D: time.Minute}, join(clean(1), clean(2)), 0, 0, "no intent was delivered twice (ttl 1m)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "redis-setnx", Window: tc.window}}}
			run := judge(t, plan, check.Meta{}, tc.events, map[string]history.Audit{"v": applied(map[int]int{1: 1, 2: 1, 3: 1})})
			g := run.Variants[0].MaxRedeliveryGap
			if g.D != tc.gap || g.Intent != tc.intent || g.Window != tc.window {
				t.Errorf("gap = %v on intent %d, window %v; want %v on intent %d, window %v", g.D, g.Intent, g.Window, tc.gap, tc.intent, tc.window)
			}
			if !strings.Contains(g.Text(), tc.text) {
				t.Errorf("text = %q, want it to contain %q", g.Text(), tc.text)
			}
			if want := tc.window != nil && tc.gap > tc.window.D; g.Outlasted() != want {
				t.Errorf("outlasted = %v, want %v", g.Outlasted(), want)
			}
		})
	}
}

// The largest time between an intent's first and last publish (an
// application retry), against the broker's dedup window of publishes.
func TestMaxRepublishGap(t *testing.T) {
	at := func(e history.Event, ms int) history.Event {
		e.T = time.Duration(ms) * time.Millisecond
		return e
	}
	retried := join(one(at(ev(history.Publish, 1), 1), at(ev(history.Publish, 2), 2), at(ev(history.PubFailed, 1), 2001)),
		one(at(ev(history.Publish, 1), 2003))) // 1: a retry 2002ms after its first send
	window := &check.Window{Key: "duplicate_window", D: time.Second}
	for _, tc := range []struct {
		name   string
		window *check.Window
		events []history.Event
		want   *check.Gap
		text   string
	}{
		{"a retry past the window", window, retried, &check.Gap{D: 2002 * time.Millisecond, Intent: 1, Window: window},
			"max republish gap 2.002s (intent 1, between its first and last publish), longer than duplicate_window 1s: a retry can come after the broker has forgotten"},
		{"a retry, no window", nil, retried, &check.Gap{D: 2002 * time.Millisecond, Intent: 1}, "max republish gap 2.002s"},
		{"no retry, a window", window, join(clean(1)), &check.Gap{Window: window}, "no intent was published twice (duplicate_window 1s)"},
		{"no retry, no window", nil, join(clean(1)), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none", PublishWindow: tc.window}}}
			run := judge(t, plan, check.Meta{}, tc.events, map[string]history.Audit{"v": applied(map[int]int{1: 1})})
			g := run.Variants[0].MaxRepublishGap
			if (g == nil) != (tc.want == nil) || g != nil && *g != *tc.want {
				t.Fatalf("republish gap = %+v, want %+v", g, tc.want)
			}
			if g != nil && !strings.Contains(g.RepublishText(), tc.text) {
				t.Errorf("text = %q, want it to contain %q", g.RepublishText(), tc.text)
			}
		})
	}
}

package runner

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/history"
)

// runBuiltin runs built-in name as shipped on its embedded broker, holds
// it to its own expectations and returns its history's events by variant.
func runBuiltin(t *testing.T, name string) map[string][]history.Event {
	t.Helper()
	res := passedBuiltin(t, name)
	by := map[string][]history.Event{}
	for e, err := range history.Scan(bytes.NewReader(res.History)) {
		if err != nil {
			t.Fatal(err)
		}
		by[e.Variant] = append(by[e.Variant], e)
	}
	return by
}

// TestNATSAckWait: a slow delivery is handed again to another instance,
// which starts while the slow one holds it, and the slow one acks its own
// delivery late; a double ack records each lost ack as unconfirmed and
// sends it again, a plain ack never notices. What the schedule decides is
// asserted exactly (each lost ack noticed by the double ack, none by the
// plain one); a double ack whose answer was only slow (a loaded machine,
// past its 250 ms) is unconfirmed too, and allowed.
func TestNATSAckWait(t *testing.T) {
	for variant, events := range runBuiltin(t, "nats-ack-wait") {
		holder := map[[2]int]int{} // intent, attempt → consumer
		slow := map[int]int{}
		lost, unconfirmed := map[int]bool{}, map[int]bool{}
		acked := map[[3]int]bool{} // intent, attempt, consumer
		for _, e := range events {
			switch {
			case e.Type == history.Deliver:
				holder[[2]int{e.Intent, e.Attempt}] = e.Consumer
			case e.Type == history.Ack:
				acked[[3]int{e.Intent, e.Attempt, e.Consumer}] = true
			case e.Type == history.Fault && e.Fault == "slow-processing@before-process":
				slow[e.Intent] = e.Consumer
			case e.Type == history.Fault && e.Fault == "ack-lost":
				lost[e.Intent] = true
			case e.Type == history.AckUnconfirmed:
				unconfirmed[e.Intent] = true
			}
		}
		if len(slow) == 0 || len(lost) == 0 {
			t.Fatalf("%s: %d slow deliveries, %d lost acks; want some of each", variant, len(slow), len(lost))
		}
		for intent, c := range slow {
			if again, ok := holder[[2]int{intent, 2}]; !ok || again == c {
				t.Errorf("%s: intent %d was slow on consumer %d; its second delivery went to %d (delivered: %v)", variant, intent, c, again, ok)
			}
			if !acked[[3]int{intent, 1, c}] {
				t.Errorf("%s: the slow consumer %d never acked intent %d (late)", variant, c, intent)
			}
		}
		double := variant == "sync-none" || variant == "sync-dedup-table"
		if !double && len(unconfirmed) > 0 {
			t.Errorf("%s: a plain ack waits for no answer, yet %d acks were recorded unconfirmed", variant, len(unconfirmed))
		}
		for intent := range lost {
			if double && !unconfirmed[intent] {
				t.Errorf("%s: the ack of intent %d was lost and the double ack did not notice (no ack-unconfirmed)", variant, intent)
			}
		}
	}
}

// TestNATSMaxDeliver: each dead letter read from the server's advisories
// is a message a consumer had been delivered: the same intent at the same
// stream sequence.
func TestNATSMaxDeliver(t *testing.T) {
	for variant, events := range runBuiltin(t, "nats-max-deliver") {
		at := map[int]string{}
		dead := 0
		for _, e := range events {
			switch e.Type {
			case history.Deliver:
				at[e.Intent] = e.Position
			case history.DeadLetter:
				dead++
				if e.Position == "" || at[e.Intent] != e.Position {
					t.Errorf("%s: intent %d dead-lettered at %q, delivered at %q", variant, e.Intent, e.Position, at[e.Intent])
				}
			}
		}
		if dead == 0 {
			t.Errorf("%s: no dead letters", variant)
		}
	}
}

// TestNATSDuplicatesInNATSWords: on NATS the notes say how a publish came
// to be stored twice in NATS's words (the stream's duplicate window,
// Nats-Msg-Id), not Kafka's producer idempotence and producer id.
func TestNATSDuplicatesInNATSWords(t *testing.T) {
	for _, tc := range []struct{ builtin, want string }{
		{"nats-msg-id-dedup", "Nats-Msg-Id"},
	} {
		res := passedBuiltin(t, tc.builtin)
		said := false
		for _, v := range res.Run.Variants {
			for _, n := range v.Notes {
				said = said || strings.Contains(n, tc.want)
				for _, w := range []string{"producer id", "idempotence", "quorum queue"} {
					if strings.Contains(n, w) {
						t.Errorf("%s/%s: a note on NATS says %q: %s", tc.builtin, v.Name, w, n)
					}
				}
			}
		}
		if !said {
			t.Errorf("%s: no note says %q", tc.builtin, tc.want)
		}
	}
}

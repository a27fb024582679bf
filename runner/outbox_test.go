package runner

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/dqbench/dqbench/history"
)

// TestProducerPatterns: producer-app-crash every 20th intent, 200 intents,
// so exactly 10 crashes in each variant whose pattern has the point. The
// dual write loses exactly the crashed intents (written, never published);
// the outbox relay publishes each crashed row twice, which none applies
// twice and the inbox (dedup-table on the business id) once; direct has
// no crash point, so the fault is not armed there and nothing happens.
func TestProducerPatterns(t *testing.T) {
	yaml := `
version: 1
name: patterns
seed: 3
messages: 200
broker: {kind: kafka}
faults:
  - {type: producer-app-crash, at: between-write-and-publish, every: 20}
  - {type: producer-app-crash, at: after-publish-before-mark, every: 20}
variants:
  - {name: direct, strategy: none}
  - {name: dual-write, strategy: none, producer: {pattern: dual-write}}
  - {name: outbox-none, strategy: none, producer: {pattern: outbox}}
  - {name: outbox-inbox, strategy: dedup-table, id: business, producer: {pattern: outbox}}
`
	res, err := runJudged(t, context.Background(), parse(t, yaml))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Run.Valid() {
		t.Fatalf("run not valid: %+v", res.Run)
	}
	type want struct{ attempted, effects, duplicates, lost, faults int }
	wants := map[string]want{
		"direct":       {200, 200, 0, 0, 0},
		"dual-write":   {190, 190, 0, 10, 10},
		"outbox-none":  {200, 210, 10, 0, 10},
		"outbox-inbox": {200, 200, 0, 0, 10},
	}
	for _, v := range res.Run.Variants {
		w := wants[v.Name]
		got := want{v.Attempted, v.Effects, v.Duplicates, v.Lost, v.FaultsInjected}
		if got != w {
			t.Errorf("%s: got %+v, want %+v", v.Name, got, w)
		}
		if v.Name == "dual-write" && !maps.Equal(v.LostByCause, map[string]int{"unpublished": 10}) {
			t.Errorf("dual-write: lost by cause %v, want 10 unpublished", v.LostByCause)
		}
	}

	// The history says what the producer application did: a write of
	// every intent where there is a store, none in direct, and the lost
	// intents are the ones the crashes named.
	writes, crashed, published := map[string]int{}, map[string][]int{}, map[string]map[int]bool{}
	for e, err := range history.Scan(bytes.NewReader(res.History)) {
		if err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case history.Written:
			writes[e.Variant]++
		case history.Fault:
			crashed[e.Variant] = append(crashed[e.Variant], e.Intent)
		case history.Publish:
			if published[e.Variant] == nil {
				published[e.Variant] = map[int]bool{}
			}
			published[e.Variant][e.Intent] = true
		}
	}
	if writes["direct"] != 0 || writes["dual-write"] != 200 || writes["outbox-none"] != 200 || writes["outbox-inbox"] != 200 {
		t.Errorf("write events by variant: %v", writes)
	}
	if len(crashed["dual-write"]) != 10 {
		t.Fatalf("dual-write crashes: %v", crashed["dual-write"])
	}
	for _, in := range crashed["dual-write"] {
		if published["dual-write"][in] {
			t.Errorf("dual-write: intent %d crashed between write and publish, yet was published", in)
		}
	}
	if len(crashed["outbox-none"]) != 10 || !slices.Equal(crashed["outbox-none"], crashed["outbox-inbox"]) {
		t.Errorf("one fault's schedule should hit the same intents in both outbox variants: %v", crashed)
	}

	// The audit holds the producer application's store: every business
	// row; with the outbox, every outbox row, all marked sent by the end.
	every := make([]int, 200)
	for i := range every {
		every[i] = i + 1
	}
	if p := res.Audits["direct"].Producer; p != nil {
		t.Errorf("direct has no producer store, yet its audit has %+v", p)
	}
	wantAudit := map[string]history.ProducerAudit{
		"dual-write":   {Rows: every},
		"outbox-none":  {Rows: every, Outbox: every, Sent: every},
		"outbox-inbox": {Rows: every, Outbox: every, Sent: every},
	}
	for name, w := range wantAudit {
		p := res.Audits[name].Producer
		if p == nil || !slices.Equal(p.Rows, w.Rows) || !slices.Equal(p.Outbox, w.Outbox) || !slices.Equal(p.Sent, w.Sent) {
			t.Errorf("%s: producer audit %+v, want %d rows, %d outbox rows, %d sent", name, p, len(w.Rows), len(w.Outbox), len(w.Sent))
		}
	}
}

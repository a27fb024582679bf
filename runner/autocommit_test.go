package runner

import (
	"bytes"
	"context"
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/recording"
	"github.com/dqbench/dqbench/scenario"
)

// TestKafkaAutoCommit runs the built-in kafka-auto-commit as shipped: with
// kgo's auto-commit, the sync variant (every record of a poll processed
// before the next poll) loses nothing to its crashes, the async one (each
// poll queued to a worker, the next poll at once) loses what auto-commit
// committed while it waited in the queue. Each lost intent's history shows
// why: delivered (polled), acked by an auto-commit, never applied, and a
// crash after that ack, with nothing delivered again.
func TestKafkaAutoCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("a full-size built-in run: not with -short")
	}
	t.Parallel()
	s, err := scenario.Resolve("kafka-auto-commit")
	if err != nil {
		t.Fatal(err)
	}
	res, err := runJudged(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Run.Passed || !res.Run.Valid() {
		t.Errorf("run did not pass: %+v", res.Run)
	}
	for _, v := range res.Run.Variants {
		switch v.Name {
		case "sync", "sync-dedup-table":
			if v.Lost != 0 || v.FaultsInjected == 0 {
				t.Errorf("%s: lost %d (%v) after %d crashes, want 0 after at least one", v.Name, v.Lost, v.LostByCause, v.FaultsInjected)
			}
		case "async", "async-dedup-table":
			if v.Lost == 0 || v.LostByCause[string(check.LostUnprocessed)] != v.Lost {
				t.Errorf("%s: lost %d by cause %v, want more than 0, all %s", v.Name, v.Lost, v.LostByCause, check.LostUnprocessed)
			}
			if n := lostAfterAutoCommit(t, res.History, v.Name); n != v.Lost {
				t.Errorf("%s: %d intents polled, auto-committed, never applied nor delivered again, then a crash; the checker counts %d lost", v.Name, n, v.Lost)
			}
		default:
			t.Errorf("unexpected variant %s", v.Name)
		}
	}
}

// lostAfterAutoCommit counts, in variant's history, the intents lost to
// auto-commit as the history tells it: delivered once, acked by an
// auto-commit, never applied, and some consumer crashed after that ack.
func lostAfterAutoCommit(t *testing.T, hist []byte, variant string) int {
	t.Helper()
	type life struct {
		delivered, applied int
		autoAcked          bool
		ackedAt            int64
	}
	lives := map[int]*life{}
	var lastCrash int64 = -1
	for e, err := range history.Scan(bytes.NewReader(hist)) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Variant != variant {
			continue
		}
		if e.Type == history.Crash {
			lastCrash = int64(e.T)
			continue
		}
		l := lives[e.Intent]
		if l == nil {
			l = new(life)
			lives[e.Intent] = l
		}
		switch {
		case e.Type == history.Deliver:
			l.delivered++
		case e.Type == history.Effect && e.Applied:
			l.applied++
		case e.Type == history.Ack && e.Reason == recording.AutoCommitReason:
			l.autoAcked, l.ackedAt = true, int64(e.T)
		}
	}
	n := 0
	for _, l := range lives {
		if l.delivered == 1 && l.applied == 0 && l.autoAcked && lastCrash > l.ackedAt {
			n++
		}
	}
	return n
}

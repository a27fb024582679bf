package check_test

import (
	"strings"
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
)

func stageEvent(t history.Type, txn int, pos string, intent int) history.Event {
	e := ev(t, intent)
	e.Txn, e.Position, e.Consumer = txn, pos, 1
	return e
}

// TestTallyAbortedSeen: an intent counts as aborted_seen when a consumer
// received an output copy of a batch whose transaction aborted, whether
// the abort is recorded before or after that delivery.
func TestTallyAbortedSeen(t *testing.T) {
	drained := ev(history.Drain, 0)
	drained.Drained = true
	events := join(
		one(stageEvent(history.StageStart, 0, "", 0)),
		published(1), published(2), published(3),
		// Batch 1 writes intents 1 and 2, and aborts after a consumer read
		// intent 1's copy (read_uncommitted).
		one(stageEvent(history.StageWrite, 1, "0@0", 1), stageEvent(history.StageWrite, 1, "0@1", 2),
			delivered(1, 0), effect(1, true), ev(history.Ack, 1),
			stageEvent(history.StageAbort, 1, "", 0)),
		// Batch 2 writes both again, and intent 3, and commits.
		one(stageEvent(history.StageWrite, 2, "0@3", 1), stageEvent(history.StageWrite, 2, "0@4", 2), stageEvent(history.StageWrite, 2, "0@5", 3),
			stageEvent(history.StageCommit, 2, "", 0)),
		one(delivered(1, 3), effect(1, true), delivered(2, 4), effect(2, true), delivered(3, 5), effect(3, true)),
		// Batch 3 aborted before anyone read it: not seen.
		one(stageEvent(history.StageWrite, 3, "0@7", 3), stageEvent(history.StageAbort, 3, "", 0)),
		one(drained),
	)
	c, notes, err := check.Tally(history.Events(events), applied(map[int]int{1: 2, 2: 1, 3: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if c.AbortedSeen != 1 || c.AbortedWritten != 3 || c.Duplicates != 1 || c.Lost != 0 {
		t.Errorf("aborted_seen %d, aborted_written %d, duplicates %d, lost %d; want 1, 3, 1, 0", c.AbortedSeen, c.AbortedWritten, c.Duplicates, c.Lost)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "2 stage transactions aborted") {
		t.Errorf("notes %q do not count the aborted transactions", notes)
	}
}

package check

import (
	"fmt"
	"slices"
	"time"

	"github.com/dqbench/dqbench/history"
)

// stageTally is what a variant's consume-transform-produce stage recorded:
// which batch wrote each output copy, which batches aborted, and the
// output copies the consumers received (a delivery may be recorded before
// its batch's abort, so they are joined when the counts are made).
type stageTally struct {
	written   map[string]int // output position → batch
	writes    []delivered    // every output copy: its intent and batch (in pos)
	aborted   map[int]bool   // batches whose transaction aborted
	delivered []delivered    // every delivery since the stage started
	crashes   int
	aborts    int
}

type delivered struct {
	intent int
	pos    string
	txn    int
}

func (t *tally) addStage(e *history.Event) {
	if t.stage == nil {
		t.stage = &stageTally{written: map[string]int{}, aborted: map[int]bool{}}
	}
	s := t.stage
	switch e.Type {
	case history.StageWrite:
		s.written[e.Position] = e.Txn
		s.writes = append(s.writes, delivered{intent: e.Intent, txn: e.Txn})
	case history.StageAbort:
		if !s.aborted[e.Txn] {
			s.aborted[e.Txn] = true
			s.aborts++
		}
	case history.StageCrash:
		s.crashes++
	}
}

// mark flags the intents a consumer received from an aborted batch's
// record, and those the stage wrote in an aborted batch.
func (s *stageTally) mark(t *tally) {
	if s == nil {
		return
	}
	for _, d := range s.delivered {
		if txn, ok := s.written[d.pos]; ok && s.aborted[txn] {
			t.get(d.intent).flags |= abortedSeen
		}
	}
	for _, w := range s.writes {
		if s.aborted[w.txn] {
			t.get(w.intent).flags |= abortedWritten
		}
	}
	s.delivered, s.writes = nil, nil // marked once
}

// notes say what the stage did.
func (s *stageTally) notes() []string {
	if s == nil {
		return nil
	}
	var out []string
	if s.crashes > 0 {
		out = append(out, fmt.Sprintf("%d stage instance crashes, each followed by a replacement that starts from the last committed input offsets", s.crashes))
	}
	if s.aborts > 0 {
		out = append(out, fmt.Sprintf("%d stage transactions aborted; a read_committed consumer skips their records, a read_uncommitted one reads them", s.aborts))
	}
	return out
}

// maxFaultReasons bounds the injections the notes describe one by one.
const maxFaultReasons = 10

// addFaultReason keeps what an injection says it did (a leader-move names
// its moves).
func (t *tally) addFaultReason(e *history.Event) {
	if e.Reason == "" {
		return
	}
	if len(t.faultReasons) == maxFaultReasons {
		t.unnamed++
		return
	}
	at := ""
	if e.Intent != 0 {
		at = fmt.Sprintf(", intent %d", e.Intent)
	}
	if e.Point != "" {
		at += " at " + e.Point
	}
	t.faultReasons = append(t.faultReasons, fmt.Sprintf("fault %s at %s%s: %s", e.Fault, e.T.Round(time.Millisecond), at, e.Reason))
}

// faultNotes say what the injections that describe themselves did.
func (t *tally) faultNotes() []string {
	out := slices.Clone(t.faultReasons)
	if t.unnamed > 0 {
		out = append(out, fmt.Sprintf("and %d more such injections (see the fault events in history.jsonl)", t.unnamed))
	}
	return out
}

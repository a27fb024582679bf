package recording

import (
	"context"
	"sync/atomic"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/history"
)

// Stage records what a consume-transform-produce stage instance
// does: each input record it reads, each output record the broker has, and
// how each batch ended. Its batches are numbered across the variant's
// instances (Txn), so the checker can tell which output copies belong to
// an aborted transaction.
type Stage struct {
	s       brokers.Stage
	rec     *history.VariantRecorder
	gen     int
	seen    *Deliveries
	batches *atomic.Int64
	txn     int   // the open batch, 0 before Begin
	written []int // the open batch's intents
}

// NewStage wraps stage instance gen and records its start; seen
// numbers the stage's reads of each intent, batches its batches, both
// shared by the variant's stage instances.
func NewStage(s brokers.Stage, gen int, seen *Deliveries, batches *atomic.Int64, rec *history.VariantRecorder) *Stage {
	rec.Record(history.Event{Type: history.StageStart, Consumer: gen})
	return &Stage{s: s, rec: rec, gen: gen, seen: seen, batches: batches}
}

// Gen is the stage instance's generation.
func (s *Stage) Gen() int { return s.gen }

// Txn is the open batch's number (0 when none is open).
func (s *Stage) Txn() int { return s.txn }

// Next records the read, with its attempt number set.
func (s *Stage) Next(ctx context.Context) (brokers.Delivery, error) {
	d, err := s.s.Next(ctx)
	if err != nil {
		return d, err
	}
	d.Attempt = s.seen.next(d.Intent)
	s.rec.Record(history.Event{Type: history.StageRead, Intent: d.Intent, Attempt: d.Attempt, Consumer: s.gen, Position: d.Position})
	return d, nil
}

// Begin opens a batch (and its transaction, with transactions).
func (s *Stage) Begin() error {
	if err := s.s.Begin(); err != nil {
		return err
	}
	s.txn = int(s.batches.Add(1))
	s.written = s.written[:0]
	return nil
}

// Forward records the write once the broker has it.
func (s *Stage) Forward(ctx context.Context, d brokers.Delivery, body []byte, done func(error)) {
	txn := s.txn
	s.written = append(s.written, d.Intent)
	s.s.Forward(ctx, d, body, func(pos string, err error) {
		if err == nil {
			s.rec.Record(history.Event{Type: history.StageWrite, Intent: d.Intent, Consumer: s.gen, Position: pos, Txn: txn})
		}
		done(err)
	})
}

// Flush waits for every write's outcome.
func (s *Stage) Flush(ctx context.Context) error { return s.s.Flush(ctx) }

// Commit records the batch's commit, or its abort when the broker aborted
// the transaction instead.
func (s *Stage) Commit(ctx context.Context) (bool, error) {
	committed, err := s.s.Commit(ctx)
	switch {
	case err == nil && committed:
		s.rec.Record(history.Event{Type: history.StageCommit, Consumer: s.gen, Txn: s.txn, Intents: append([]int(nil), s.written...)})
	case err == nil:
		s.rec.Record(history.Event{Type: history.StageAbort, Consumer: s.gen, Txn: s.txn, Reason: "the group rebalanced during the transaction"})
	}
	s.txn = 0
	return committed, err
}

// Abort aborts the batch's transaction and records it; why says what
// made the stage abort.
func (s *Stage) Abort(ctx context.Context, why string) error {
	err := s.s.Abort(ctx)
	if err == nil {
		s.rec.Record(history.Event{Type: history.StageAbort, Consumer: s.gen, Txn: s.txn, Reason: why})
	}
	s.txn = 0
	return err
}

// Abandon kills the instance as a crash would and records its death;
// reason is empty when a fault killed it. An open transaction is recorded
// as aborted: it can never commit, and the slot's replacement fences it.
func (s *Stage) Abandon(reason string, transactional bool) {
	s.s.Abandon()
	if transactional && s.txn != 0 {
		s.rec.Record(history.Event{Type: history.StageAbort, Consumer: s.gen, Txn: s.txn, Reason: "the stage instance died inside the transaction; its replacement fences it"})
	}
	s.txn = 0
	s.rec.Record(history.Event{Type: history.StageCrash, Consumer: s.gen, Reason: reason})
}

// Close stops the instance at the end of a run, within ctx; an open
// transaction is aborted and recorded.
func (s *Stage) Close(ctx context.Context, transactional bool) {
	s.s.Close(ctx)
	if transactional && s.txn != 0 {
		s.rec.Record(history.Event{Type: history.StageAbort, Consumer: s.gen, Txn: s.txn, Reason: "the run ended inside the transaction"})
	}
	s.txn = 0
}

package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/recording"
	"github.com/dqbench/dqbench/scenario"
)

// stageIdle is how long a stage instance waits for the rest of a batch
// before it ends the batch with what it has (the input's last records).
const stageIdle = 300 * time.Millisecond

// stageRun is a variant's consume-transform-produce stage: its instances
// run in slots beside the consumer slots.
type stageRun struct {
	spec    *scenario.Stage
	faults  *faults.Stage         // the stage faults armed in the variant
	seen    *recording.Deliveries // the stage's reads per intent
	stager  brokers.Stager
	gens    atomic.Int64 // numbers stage instances from 1
	slots   atomic.Int64 // slots started, for a joining instance's slot
	batches atomic.Int64
}

func newStageRun(spec *scenario.Stage, messages int) *stageRun {
	return &stageRun{
		spec:   spec,
		faults: &faults.Stage{Transactional: spec.IsTransactional()},
		seen:   recording.NewDeliveries(messages),
	}
}

// startStage starts the variant's consume-transform-produce stage
// instances, one per slot, beside the consumer slots: they stop when the
// drain ends, and a fatal error in one stops the run.
func (r *variantRun) startStage(dest brokers.Destination) error {
	st, ok := dest.(brokers.Stager)
	if !ok {
		return fmt.Errorf("%s cannot run a consume-transform-produce stage", r.broker.Name())
	}
	r.stage.stager = st
	for range r.stage.spec.Instances {
		r.startStageSlot(nil)
	}
	return nil
}

// startStageSlot starts one more stage slot; firstRead, if not nil, is
// called once its first instance has read a record.
func (r *variantRun) startStageSlot(firstRead func()) {
	s := &r.slots
	slot := int(r.stage.slots.Add(1))
	s.wg.Go(func() {
		if err := r.runStage(s.ctx, r.stage.stager, slot, firstRead); err != nil {
			s.fail(err)
		}
	})
}

// joinWait bounds how long a stage instance waits for an instance that
// joined its group to read its first record (it may have been given no
// partition with records left).
const joinWait = 2 * time.Second

// join makes a new stage instance join the group (partitions move), and waits
// until it has read a record: by then the group has rebalanced and the
// partitions it took were revoked from the instances that had them.
func (r *variantRun) join(ctx context.Context) {
	read := make(chan struct{})
	var once sync.Once
	r.startStageSlot(func() { once.Do(func() { close(read) }) })
	select {
	case <-read:
	case <-ctx.Done():
	case <-time.After(joinWait):
	}
}

// runStage runs one stage slot until ctx ends: a stage instance handles
// batches until a fault kills it, then a replacement takes its place and
// starts from the last committed offsets.
func (r *variantRun) runStage(ctx context.Context, st brokers.Stager, slot int, firstRead func()) error {
	tx := r.stage.spec.IsTransactional()
	for ctx.Err() == nil {
		gen := int(r.stage.gens.Add(1))
		raw, err := st.Stage(ctx, slot, gen)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		s := recording.NewStage(raw, gen, r.stage.seen, &r.stage.batches, r.rec)
		err = r.stageBatches(ctx, s, firstRead)
		switch {
		case errors.Is(err, errCrash):
			s.Abandon("", tx)
		case ctx.Err() != nil:
			sctx, cancel := r.shutdown.ctx(ctx)
			s.Close(sctx, tx)
			cancel()
			return nil
		default:
			// A broken connection, a failed write or commit: start over
			// from the last committed offsets, as a supervisor would.
			s.Abandon(err.Error(), tx)
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// stageBatches reads, writes and commits batches until ctx ends or a fault
// kills the instance (errCrash).
func (r *variantRun) stageBatches(ctx context.Context, s *recording.Stage, firstRead func()) error {
	tx := r.stage.spec.IsTransactional()
	for {
		batch, err := r.stageBatch(ctx, s)
		if err != nil {
			return err
		}
		if firstRead != nil {
			firstRead()
		}
		if err := s.Begin(); err != nil {
			return fmt.Errorf("begin a transaction: %w", err)
		}
		var mu sync.Mutex
		var failed error
		for _, d := range batch {
			// The transformation is the identity: the business effect
			// travels unchanged, so the consumers apply what the
			// producer sent.
			s.Forward(ctx, d, d.Body, func(err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil && failed == nil {
					failed = err
				}
			})
		}
		if err := s.Flush(ctx); err != nil {
			return err
		}
		if failed != nil {
			if !tx {
				return fmt.Errorf("write to the output: %w", failed)
			}
			if err := s.Abort(ctx, "a write failed: "+failed.Error()); err != nil {
				return fmt.Errorf("abort a transaction: %w", err)
			}
			continue
		}
		// The batch is in the output topic, its input offsets are not
		// committed: a crash here writes it again (without transactions)
		// or leaves an open transaction that the replacement aborts.
		aborted, err := r.stageActs(ctx, s, batch)
		if err != nil {
			return err
		}
		if aborted {
			continue
		}
		if _, err := s.Commit(ctx); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
}

// stageBatch reads one batch: up to batch records, ending early at an
// intent that is a multiple of batch or the last intent (so batches line
// up with intents and every variant meets the same faults), or when no
// record comes for stageIdle.
func (r *variantRun) stageBatch(ctx context.Context, s *recording.Stage) ([]brokers.Delivery, error) {
	n := r.stage.spec.Batch
	var batch []brokers.Delivery
	for len(batch) < n {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if len(batch) > 0 {
			wctx, cancel = context.WithTimeout(ctx, stageIdle)
		}
		d, err := s.Next(wctx)
		cancel()
		if err != nil {
			if len(batch) > 0 && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				break
			}
			return nil, err
		}
		batch = append(batch, d)
		if d.Intent%n == 0 || d.Intent == r.s.Messages {
			break
		}
	}
	return batch, nil
}

// stageActs asks the stage faults once about a written, uncommitted batch
// and acts out what they say: another instance joins the group, the
// instance crashes (errCrash), or it aborts the batch's transaction
// (aborted).
func (r *variantRun) stageActs(ctx context.Context, s *recording.Stage, batch []brokers.Delivery) (aborted bool, err error) {
	for a := range r.stage.faults.At(batch, s.Gen()) {
		switch a.Kind {
		case faults.Join:
			r.join(ctx)
		case faults.Crash:
			return false, errCrash
		case faults.Abort:
			if err := s.Abort(ctx, "aborted by fault"); err != nil {
				return false, fmt.Errorf("abort a transaction: %w", err)
			}
			return true, nil
		default:
			return false, fmt.Errorf("%w: the stage loop cannot act out action %d of fault %s", ErrInternal, a.Kind, a.Fault)
		}
	}
	return false, nil
}

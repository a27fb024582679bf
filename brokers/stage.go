package brokers

import "context"

// StageSpec is a consume-transform-produce stage a variant asks for.
type StageSpec struct {
	// Transactional: each batch's output records and input offsets are
	// committed in one transaction.
	Transactional bool
}

// Stager is a destination whose producer writes to an input that a
// consume-transform-produce stage reads; the stage writes each record to
// an output, which the destination's consumers read. The pipeline drives
// the stage (package runner) and records what it does, so the adapter
// only provides the clients. Backlog counts both hops: input records the
// stage has not committed, and output records no consumer has acked.
type Stager interface {
	// Stage starts stage instance gen in slot (1-based): a replacement in
	// the same slot takes over its transactional identity, fencing the
	// instance it replaces (its open transaction is aborted).
	Stage(ctx context.Context, slot, gen int) (Stage, error)
}

// Stage is one instance of a stage: it polls input records one at a time,
// writes them to the output, and commits what it polled.
type Stage interface {
	// Next returns the next input record; it blocks until one arrives or
	// ctx ends. Position names the input copy.
	Next(ctx context.Context) (Delivery, error)
	// Begin starts a transaction (a transactional stage only).
	Begin() error
	// Forward writes d's record, transformed into body, to the output;
	// done is called once with the output position when the broker has
	// it, or with the error that ended the write.
	Forward(ctx context.Context, d Delivery, body []byte, done func(pos string, err error))
	// Flush waits until every forwarded record has its outcome.
	Flush(ctx context.Context) error
	// Commit commits the input offsets of every record Next returned since
	// the last Commit or Abort; with transactions, inside the transaction,
	// which it ends. committed is false when the transaction was aborted
	// instead (the group rebalanced during it): the stage then rewinds to
	// the last committed offsets.
	Commit(ctx context.Context) (committed bool, err error)
	// Abort aborts the open transaction and rewinds to the last committed
	// offsets.
	Abort(ctx context.Context) error
	// Abandon kills the instance as a crash would: nothing more is
	// written or committed; an open transaction stays open until the
	// slot's replacement fences it.
	Abandon()
	// Close stops the instance at the end of a run, within ctx.
	Close(ctx context.Context)
}

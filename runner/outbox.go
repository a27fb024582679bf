package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/recording"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/seeded"
	"github.com/dqbench/dqbench/store"
	"github.com/dqbench/dqbench/strategy"
)

// The producer application of producer.pattern dual-write and outbox: it
// has a store of its own (an SQLite file beside the consumers' stores)
// where each intent begins as a business row, recorded as a write event
// once committed. With dual-write the application publishes after the
// write; with outbox a relay publishes the outbox rows the same
// transaction wrote (produceOutbox).

// producerApp is a variant's producer application with a store; nil for
// the pattern direct, which publishes and has no store.
type producerApp struct {
	pattern catalog.ProducerPattern
	db      *store.SQLite
	faults  *faults.ProducerApp
	rec     *history.VariantRecorder
	err     error // the first write that failed: the run fails with it
}

// producerTables are the producer application's own tables: its business
// rows (one per intent) and the outbox (pattern outbox), whose sent column
// the relay sets once the broker confirmed the row's publish.
var producerTables = []string{
	"CREATE TABLE IF NOT EXISTS orders (intent INTEGER PRIMARY KEY, account INTEGER NOT NULL, amount INTEGER NOT NULL)",
	"CREATE TABLE IF NOT EXISTS outbox (intent INTEGER PRIMARY KEY, sent INTEGER NOT NULL DEFAULT 0)",
}

// relayPoll is how long the outbox relay waits before it looks for unsent
// rows again when it found none (or the broker refused the last publish).
const relayPoll = 5 * time.Millisecond

// producerAppFaults is where producer-app-crash arms in this variant:
// nil with the pattern direct, which has no crash point.
func (r *variantRun) producerAppFaults() *faults.ProducerApp {
	pattern := r.s.ProducerFor(r.v).Pattern
	if pattern == "" || pattern == catalog.Direct {
		return nil
	}
	if r.appFaults == nil {
		r.appFaults = &faults.ProducerApp{Pattern: pattern}
	}
	return r.appFaults
}

// openProducerApp opens the producer application's store; nil, nil for
// the pattern direct.
func (r *variantRun) openProducerApp(ctx context.Context, pattern catalog.ProducerPattern) (*producerApp, error) {
	if pattern == "" || pattern == catalog.Direct {
		return nil, nil
	}
	db, err := store.OpenSQLite(ctx, fmt.Sprintf("%s/%s-producer.db", r.storeDir, r.name))
	if err != nil {
		return nil, fmt.Errorf("the producer application's store: %w", err)
	}
	if err := db.Setup(ctx, producerTables...); err != nil {
		db.Close()
		return nil, fmt.Errorf("the producer application's store: %w", err)
	}
	return &producerApp{pattern: pattern, db: db, faults: r.producerAppFaults(), rec: r.rec}, nil
}

// closeProducerApp audits and closes the producer application's store
// once produce is done; finish adds the audit to the store's.
func (r *variantRun) closeProducerApp(ctx context.Context, app *producerApp) error {
	var err error
	r.appAudit, err = app.close(ctx)
	return err
}

// close audits the application's store (the run's end does not cut a
// local file's read short) and closes it. The audit goes with the
// variant's store audit (Audit.Producer): which business rows, outbox
// rows and sent marks the store holds, for the checker to hold against
// the write events. Nil, nil for the pattern direct.
func (a *producerApp) close(ctx context.Context) (*history.ProducerAudit, error) {
	if a == nil {
		return nil, nil
	}
	defer a.db.Close()
	ctx = context.WithoutCancel(ctx)
	var p history.ProducerAudit
	var err error
	for _, read := range []struct {
		into  *[]int
		query string
	}{
		{&p.Rows, "SELECT intent FROM orders ORDER BY intent"},
		{&p.Outbox, "SELECT intent FROM outbox ORDER BY intent"},
		{&p.Sent, "SELECT intent FROM outbox WHERE sent = 1 ORDER BY intent"},
	} {
		if *read.into, err = a.db.Intents(ctx, read.query); err != nil {
			return nil, fmt.Errorf("the producer application's audit: %w", err)
		}
	}
	if p.Rows == nil {
		p.Rows = []int{} // no row, said: "rows": []
	}
	return &p, nil
}

// write commits intent's business row (and, with the outbox, its outbox
// row in the same transaction) and records it.
func (a *producerApp) write(ctx context.Context, seed int64, intent int) error {
	account, amount := intent%store.Accounts, seeded.Amount(seed, intent)
	err := a.db.Tx(ctx, func(tx store.Tx) error {
		if _, err := tx.Exec("INSERT INTO orders (intent, account, amount) VALUES (?, ?, ?)", intent, account, amount); err != nil {
			return err
		}
		if a.pattern != catalog.Outbox {
			return nil
		}
		_, err := tx.Exec("INSERT INTO outbox (intent) VALUES (?)", intent)
		return err
	})
	if err != nil {
		return fmt.Errorf("the producer application's write of intent %d: %w", intent, err)
	}
	a.rec.Record(history.Event{Type: history.Written, Intent: intent})
	return nil
}

// beforePublish is the dual write's first half, the hook of produce: the
// business row, committed before the publish. False when the intent is
// not to be published: the application died between its write and the
// publish (producer-app-crash) and its replacement goes on with the next
// intent, or the write failed (a.err).
func (a *producerApp) beforePublish(ctx context.Context, seed int64, intent int) bool {
	if a == nil {
		return true
	}
	if a.err != nil {
		return false
	}
	if a.err = a.write(ctx, seed, intent); a.err != nil {
		return false
	}
	return !a.faults.Crashes(intent, 1)
}

// ended is how producing ended: the run's end, else the write that
// failed, if any.
func (a *producerApp) ended(ctx context.Context) error {
	if err := a.failed(); err != nil && ctx.Err() == nil {
		return err
	}
	return ctx.Err()
}

// failed is the write that failed, if any.
func (a *producerApp) failed() error {
	if a == nil {
		return nil
	}
	return a.err
}

// produceOutbox is produce for the pattern outbox: the application writes
// each intent's business row and outbox row in one transaction, at the
// producer's rate, while the relay publishes the unsent outbox rows. It
// returns once the relay has published every row.
func (r *variantRun) produceOutbox(ctx context.Context, p *recording.Producer, app *producerApp, prod scenario.Producer) error {
	written := make(chan struct{})
	relayed := make(chan error, 1)
	go func() { relayed <- r.relay(ctx, p, app, written) }()
	pace := newPacer(prod.Rate)
	lag := lagLimit{max: int64(prod.MaxLag), idle: r.s.Drain.D(), f: &r.flow}
	var err error
	for intent := 1; intent <= r.s.Messages; intent++ {
		if !pace.wait(ctx, intent) || !lag.wait(ctx, intent) {
			break
		}
		if err = app.write(ctx, r.s.Seed, intent); err != nil {
			break
		}
	}
	close(written)
	err = errors.Join(err, <-relayed)
	// With ctx done, Close fails the publish still unconfirmed.
	p.Close(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// relay is the outbox relay (a process of its own in a real system): it
// publishes the unsent outbox rows one at a time, in intent order, and
// marks each sent once the broker confirmed it. A publish without a
// confirm leaves the row unsent, for the next pass. A producer-app-crash
// at after-publish-before-mark kills it between the confirm and the mark:
// the restarted relay starts again from the first unsent row, which is
// the one it had published. It returns once written is closed and no row
// is unsent.
func (r *variantRun) relay(ctx context.Context, p *recording.Producer, app *producerApp, written <-chan struct{}) error {
	attempts := map[int]int{} // publishes per intent, across restarts
	after := 0                // the last row this relay instance handled
	for ctx.Err() == nil {
		allWritten := isClosed(written) // before the read: every row is then in it
		intent, err := app.nextUnsent(ctx, after)
		if err != nil {
			return err
		}
		if intent == 0 {
			if allWritten && after == 0 {
				return nil
			}
			after = 0 // a new pass over the unsent rows
			sleep(ctx, relayPoll)
			continue
		}
		after = intent
		attempts[intent]++
		err = r.relayPublish(ctx, p, intent, attempts[intent])
		r.progress.published(r.counts)
		if err != nil {
			continue // unsent: the next pass publishes it again
		}
		r.progress.heardFrom(r.start)
		if app.faults.Crashes(intent, attempts[intent]) {
			after = 0 // the relay died; its replacement reads the outbox from the start
			continue
		}
		if err := app.markSent(ctx, intent); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// relayPublish publishes one outbox row and waits for the outcome. The
// message carries the id the row was written with (attempt 1's): a
// relay's second publish of a row is the same message, whatever the id
// source.
func (r *variantRun) relayPublish(ctx context.Context, p *recording.Producer, intent, attempt int) error {
	account, amount := intent%store.Accounts, seeded.Amount(r.s.Seed, intent)
	buf := body{
		Intent: intent, Account: account, Amount: amount,
		Version: strategy.ExpectedVersion(intent),
		ID:      messageID(r.v.ID, r.s.Seed, intent, 1, account, amount),
	}.marshal()
	outcome := make(chan error, 1)
	p.Publish(ctx, brokers.Message{Intent: intent, Attempt: attempt, Key: brokers.Key(intent), Body: buf}, func(err error) { outcome <- err })
	select {
	case err := <-outcome:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// nextUnsent is the first unsent outbox row after intent after, or 0.
func (a *producerApp) nextUnsent(ctx context.Context, after int) (int, error) {
	var next int64
	err := a.db.Tx(ctx, func(tx store.Tx) error {
		var err error
		next, _, err = tx.QueryInt("SELECT intent FROM outbox WHERE sent = 0 AND intent > ? ORDER BY intent LIMIT 1", after)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("the outbox relay's read: %w", err)
	}
	return int(next), nil
}

// markSent marks intent's outbox row sent.
func (a *producerApp) markSent(ctx context.Context, intent int) error {
	err := a.db.Tx(ctx, func(tx store.Tx) error {
		_, err := tx.Exec("UPDATE outbox SET sent = 1 WHERE intent = ?", intent)
		return err
	})
	if err != nil {
		return fmt.Errorf("the outbox relay's mark of intent %d: %w", intent, err)
	}
	return nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

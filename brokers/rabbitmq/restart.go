package rabbitmq

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
)

// restarts runs broker-restart on a managed single node, which every
// variant of the run shares: each restart (a fault, an intent, an
// attempt) happens once, when every destination that armed the fault has
// its producer at the chosen publish (or meetWait has passed). Then the
// node writes its metadata (the queues declared) to disk and is frozen
// (SIGSTOP), each of those producers writes its publish
// into it, and once all have, the node is killed (SIGKILL) and started
// again on the same ports and data directory; the queues are declared
// again (as a client's topology recovery would: a transient queue comes
// back empty) before any client may connect.
type restarts struct {
	mu     sync.Mutex
	joined map[string][]*queueDest // by fault
	rounds map[round]*restartRound
	// first is closed once the first restart is over: the consumers of
	// the armed destinations start then.
	first     chan struct{}
	firstOnce sync.Once
}

// restartRound is one restart: who is in it and how it went.
type restartRound struct {
	arrived    int
	members    int  // producers that arrived before the freeze
	shut       bool // the freeze is decided: later arrivals are not in it
	allArrived chan struct{}
	allIn      bool          // allArrived is closed
	frozen     chan struct{} // closed once the node is frozen (or that failed)
	written    int
	done       chan struct{} // closed once the node runs again (or that failed)
	what       string
	err        error
}

func (rs *restarts) join(fault string, d *queueDest) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.joined == nil {
		rs.joined = map[string][]*queueDest{}
		rs.rounds = map[round]*restartRound{}
		rs.first = make(chan struct{})
	}
	rs.joined[fault] = append(rs.joined[fault], d)
}

// arm makes d's producers ask p before each publish, on m's node.
func (rs *restarts) arm(m *managed, d *queueDest, p brokers.RestartWhilePublishing) {
	rs.join(p.Fault, d)
	d.onPublish = func(ctx context.Context, intent, attempt int, awaitConfirms func(context.Context)) func() {
		if !p.Fires(intent, attempt) {
			return nil
		}
		// Only the chosen publish is in flight: every earlier one has
		// its answer.
		awaitConfirms(ctx)
		written := rs.reach(ctx, m, round{p.Fault, intent, attempt})
		return func() {
			what, in, err := written()
			switch {
			case err != nil:
				m.failRestart(fmt.Errorf("broker-restart %s on intent %d: %w", p.Fault, intent, err))
			case in:
				p.Restarted(intent, what)
			}
		}
	}
}

// reach is a producer at the chosen publish of round k: it waits for the
// others and the freeze, and returns what to call once its publish is
// written (which waits for the restart); in is false for a producer that
// came after the freeze (the restart happened without it).
func (rs *restarts) reach(ctx context.Context, m *managed, k round) func() (what string, in bool, err error) {
	rs.mu.Lock()
	r, ok := rs.rounds[k]
	first := !ok
	if first {
		r = &restartRound{allArrived: make(chan struct{}), frozen: make(chan struct{}), done: make(chan struct{})}
		rs.rounds[k] = r
	}
	r.arrived++
	in := !r.shut
	// A destination that joins late (its variant started after another
	// variant's producer reached this round) arrives once more than the
	// round was counting on: close once.
	if r.arrived >= len(rs.joined[k.fault]) && !r.allIn {
		r.allIn = true
		close(r.allArrived)
	}
	rs.mu.Unlock()
	late := func() (string, bool, error) {
		select {
		case <-r.done:
		case <-ctx.Done():
		}
		return "", false, nil
	}
	if !in {
		return late
	}
	if first {
		t := time.NewTimer(meetWait)
		select {
		case <-r.allArrived:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		rs.mu.Lock()
		r.shut, r.members = true, r.arrived
		rs.mu.Unlock()
		// The queues the run declared are on disk first, as on a node
		// whose queues are older than a moment (cluster.SyncMetadata):
		// the restart tests what survives of the messages, not of a
		// declaration the node had not written yet.
		if r.err = m.cluster.SyncMetadata(ctx, 0); r.err == nil {
			m.down.close()
			if r.err = m.cluster.Freeze(0); r.err != nil {
				m.down.open()
			}
		}
		close(r.frozen)
	} else {
		select {
		case <-r.frozen:
		case <-ctx.Done():
			return late
		}
	}
	return func() (string, bool, error) {
		rs.mu.Lock()
		r.written++
		last := r.written == r.members
		rs.mu.Unlock()
		if last {
			if r.err == nil {
				r.what, r.err = rs.restart(ctx, m)
			}
			close(r.done)
			rs.firstOnce.Do(func() { close(rs.first) })
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			return "", true, ctx.Err()
		}
		return r.what, true, r.err
	}
}

// armed reports whether d's fault is armed, so its consumers wait for the
// first restart.
func (rs *restarts) armed(d *queueDest) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, ds := range rs.joined {
		for _, x := range ds {
			if x == d {
				return true
			}
		}
	}
	return false
}

// awaitFirst waits until the first restart is over.
func (rs *restarts) awaitFirst(ctx context.Context) error {
	select {
	case <-rs.first:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// restart kills the frozen node, starts it again, declares every armed
// destination's queue again and lets the clients connect.
func (rs *restarts) restart(ctx context.Context, m *managed) (string, error) {
	defer m.down.open()
	node := m.cluster.Nodes[0].Name
	if err := m.cluster.Kill(0); err != nil {
		return "", fmt.Errorf("kill %s: %w", node, err)
	}
	began := time.Now()
	var err error
	for range 3 { // a node that fails to boot (a port not free yet) is tried again
		if err = m.cluster.Restart(ctx, 0); err == nil || ctx.Err() != nil {
			break
		}
		_ = m.cluster.Kill(0)
	}
	if err != nil {
		return "", fmt.Errorf("start %s again: %w", node, err)
	}
	took := time.Since(began)
	rs.mu.Lock()
	var dests []*queueDest
	for _, ds := range rs.joined {
		dests = append(dests, ds...)
	}
	rs.mu.Unlock()
	for _, d := range dests {
		if err := d.redeclare(); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("froze RabbitMQ node %s (SIGSTOP) before the publish, killed it (SIGKILL) once it was written, started it again (%s) and declared the queues again", node, took.Round(100*time.Millisecond)), nil
}

package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
)

// meetWait bounds how long a destination that reached a failover waits
// for the others that joined it.
const meetWait = 20 * time.Second

// restartWait bounds a restart of the killed nodes.
const restartWait = 60 * time.Second

// failovers fails stream leaders over for the destinations of one run:
// each failover (a fault, an intent, an attempt) happens once, when every
// destination that joined the fault has reached it, so every variant
// meets it at the same point of its traffic.
//
// A killed node stays down for the rest of the run's traffic: the stream
// keeps a majority of its 3 replicas, and a node restarted in the middle
// of it (tried first: it rejoins and catches up) held JetStream requests
// routed through it for tens of seconds on nats-server 2.9.10, which the
// drain would read as a stalled broker. It is restarted (same ports and
// store: it rejoins the cluster) before the next failover, and when the
// run ends on a standing cluster ("dqbench brokers up nats"), which keeps
// its 3 nodes for the next run; a run's own cluster is stopped anyway.
type failovers struct {
	mu     sync.Mutex
	joined map[string]int
	rounds map[round]*meeting
	killed []int // nodes killed and not restarted yet
}

type round struct {
	fault           string
	intent, attempt int
}

// meeting is one failover: who reached it and what was done.
type meeting struct {
	dests   []*managedDest
	done    chan struct{} // closed when the failover was done
	node    string        // the node killed, or the leader that stepped down
	leaders map[string]leaders
	err     error
}

func (f *failovers) init() {
	f.joined = map[string]int{}
	f.rounds = map[round]*meeting{}
}

func (f *failovers) join(fault string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.joined[fault]++
}

// stop meets the other destinations at round r, fails the leader over once
// for all of them (the first to arrive does it), and says what was done
// for d's history.
func (f *failovers) stop(ctx context.Context, m *managed, r round, d *managedDest, stepDown bool) (string, error) {
	f.mu.Lock()
	mt, ok := f.rounds[r]
	first := !ok
	if first {
		mt = &meeting{done: make(chan struct{})}
		f.rounds[r] = mt
	}
	mt.dests = append(mt.dests, d)
	f.mu.Unlock()
	if first {
		f.meet(ctx, m, r, mt)
		f.run(ctx, m, mt, stepDown)
		close(mt.done)
	} else {
		select {
		case <-mt.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if mt.err != nil {
		return "", mt.err
	}
	l := mt.leaders[d.stream]
	if stepDown {
		what := fmt.Sprintf("the leader of stream %s, NATS node %s, stepped down ($JS.API.STREAM.LEADER.STEPDOWN); its consumer is led by %s", d.stream, l.stream, l.consumer)
		return what + "; no node stopped, clients stay connected", nil
	}
	what := fmt.Sprintf("killed NATS node %s with SIGKILL", mt.node)
	switch {
	case l.stream == mt.node:
		what += fmt.Sprintf(", the leader of stream %s, where the clients were connected (its consumer is led by %s)", d.stream, l.consumer)
	case l.stream != "":
		what += fmt.Sprintf(" (this variant's stream %s was led by %s)", d.stream, l.stream)
	}
	return what + "; clients reconnect to a survivor, the survivors elect a new stream leader, the node restarts after the run", nil
}

// meet waits (at most meetWait) until every destination that joined the
// fault reached round r, no destination is still being opened, and every
// destination opened has joined: one still opening (its leaders moving),
// or opened and not armed yet, joins right after, and a failover that did
// not wait for it would meet it at another point of its traffic (a
// variant whose strategy lacks the crash point never joins: the others
// then wait meetWait).
func (f *failovers) meet(ctx context.Context, m *managed, r round, mt *meeting) {
	deadline := time.Now().Add(meetWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		f.mu.Lock()
		joined := f.joined[r.fault]
		all := len(mt.dests) >= joined && int64(joined) >= m.opened.Load()
		f.mu.Unlock()
		if all && m.opening.Load() == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// run fails over the leader of the first destination's stream.
func (f *failovers) run(ctx context.Context, m *managed, mt *meeting, stepDown bool) {
	if err := f.restart(ctx, m); err != nil {
		mt.err = fmt.Errorf("leader failover: %w", err)
		return
	}
	mt.leaders = map[string]leaders{}
	for _, d := range mt.dests {
		l, err := d.leaders(ctx)
		if err != nil {
			mt.err = fmt.Errorf("leader failover: find the leader of stream %s: %w", d.stream, err)
			return
		}
		mt.leaders[d.stream] = l
	}
	first := mt.dests[0]
	mt.node = mt.leaders[first.stream].stream
	if stepDown {
		var errs []error
		for _, d := range mt.dests {
			errs = append(errs, d.stepDown(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+d.stream))
		}
		mt.err = errors.Join(errs...)
		return
	}
	i := m.cluster.Index(mt.node)
	if i < 0 {
		mt.err = fmt.Errorf("leader failover: stream %s is led by %q, not a node of the managed cluster (%s)", first.stream, mt.node, strings.Join(m.cluster.URLs(), " "))
		return
	}
	if _, err := m.cluster.Kill(i); err != nil {
		mt.err = fmt.Errorf("leader failover: kill node %s: %w", mt.node, err)
		return
	}
	f.mu.Lock()
	f.killed = append(f.killed, i)
	f.mu.Unlock()
}

// restart starts the killed nodes again and waits until the cluster is
// ready (every node knows the meta leader).
func (f *failovers) restart(ctx context.Context, m *managed) error {
	f.mu.Lock()
	killed := f.killed
	f.killed = nil
	f.mu.Unlock()
	if len(killed) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, restartWait)
	defer cancel()
	var errs []error
	for _, i := range killed {
		if err := m.cluster.Restart(ctx, i); err != nil {
			errs = append(errs, fmt.Errorf("restart NATS node %s: %w", m.cluster.Nodes[i].Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return m.cluster.WaitReady(ctx, restartWait)
}

// close restarts the killed nodes when restart (a standing cluster, kept
// at 3 nodes for the next run).
func (f *failovers) close(m *managed, restart bool) error {
	if !restart {
		return nil
	}
	if err := f.restart(context.Background(), m); err != nil {
		return fmt.Errorf("%w: a NATS node killed by a leader failover did not start again: %v", brokers.ErrCleanup, err)
	}
	return nil
}

package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/scenario"
)

// requeuingQueue is a broker double whose backlog is what it holds, plus
// one now and then: a RabbitMQ queue counts a requeue in motion as ready,
// high for a moment and never low.
type requeuingQueue struct {
	holds   int64
	samples atomic.Int64
}

func (q *requeuingQueue) Backlog(context.Context) (int64, error) {
	if q.samples.Add(1)%3 == 0 {
		return q.holds + 1, nil // a requeue in motion
	}
	return q.holds, nil
}

func (q *requeuingQueue) Producer(context.Context) (brokers.Producer, error) { return nil, nil }
func (q *requeuingQueue) Consumer(context.Context, int) (brokers.Consumer, error) {
	return nil, nil
}
func (q *requeuingQueue) Close(context.Context) error { return nil }

// TestDrainLoopingNotStarvedByOneSample: with only the looping poison
// messages left on the broker, whose backlog now and then counts a
// requeue in motion twice, the drain ends drained with them looping, not
// starved: what it decides from is the least backlog of the idle period,
// not its last sample (#43).
func TestDrainLoopingNotStarvedByOneSample(t *testing.T) {
	for _, last := range []int64{1, 2, 3} { // which sample the give-up sees last
		r := &variantRun{s: &scenario.Scenario{Drain: scenario.Duration(300 * time.Millisecond)}}
		r.handBack.note(7, true, 0)
		r.handBack.note(9, true, 0)
		q := &requeuingQueue{holds: 2}
		q.samples.Store(last)
		end, err := r.drain(context.Background(), q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !end.drained || end.starved || len(end.looping) != 2 {
			t.Errorf("drained %v, starved %v, looping %v, backlog %d (%s): want drained with 2 looping, not starved", end.drained, end.starved, end.looping, end.backlog, end.why)
		}
	}
}

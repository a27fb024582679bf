package faults

import (
	"context"
	"sync"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

func init() { All[catalog.FailOnce] = armFailOnce }

// armFailOnce arms fail-once at its crash point, where the strategy has
// it. The schedule chooses the intents (whatever the delivery's attempt);
// each chosen intent fails the first times processing of it reaches the
// point, then passes. It asks the loop to fail the processing
// (FailTransient), which does what on_failure says.
func armFailOnce(f Fault, env Env) (bool, error) {
	p := f.Params.(*catalog.FailOnceParams)
	if !env.Strategy.HasPoint(p.At) {
		return false, nil
	}
	var mu sync.Mutex
	failed := map[int]int{} // intent → failures so far
	hits := func(d brokers.Delivery) bool {
		if !f.Schedule.Fires(d.Intent, 1) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		return failed[d.Intent] < p.Times
	}
	// The fault event (intent, attempt, point) is the whole record: its
	// reason is left empty, so the report counts the failures instead of
	// listing each.
	act := func(_ context.Context, d brokers.Delivery) (Action, string) {
		mu.Lock()
		failed[d.Intent]++
		mu.Unlock()
		return Action{Kind: FailTransient}, ""
	}
	env.Consumer.add(p.At, consumerFault{f: f, step: failStep, fired: env.Fired, hits: hits, act: act, atPoint: true})
	return true, nil
}

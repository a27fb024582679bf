package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/dqbench/dqbench/strategy"
)

// consumerEnded tells the variant's strategy instance, when it watches
// restarts (strategy.RestartObserver), that consumer instance gen ended
// without a clean stop with err (what handle returned), so a replacement
// takes its place: a fault crashed it, it lost its lease, or its
// connection broke. A fatal error or the end of the run is no restart.
func (r *variantRun) consumerEnded(ctx context.Context, gen int, err error) {
	o, ok := r.strat.(strategy.RestartObserver)
	if !ok || err == nil {
		return
	}
	var fatal errFatal
	crashed := errors.Is(err, errCrash) || errors.Is(err, errZombie)
	if errors.As(err, &fatal) || (!crashed && ctx.Err() != nil) {
		return
	}
	o.ConsumerRestarted(gen)
}

// closeStrategy closes the variant's strategy instance once its
// consumers have stopped.
func (r *variantRun) closeStrategy() error {
	if err := r.strat.Close(); err != nil {
		return fmt.Errorf("close strategy %s: %w", r.v.Strategy, err)
	}
	return nil
}

package faults

import (
	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

// Stage holds the faults armed in one variant's consume-transform-produce
// stage (transform-crash, transaction-abort); the stage loop (package
// runner) asks it once per batch.
type Stage struct {
	// Transactional: the stage writes in transactions, so a
	// transaction-abort has something to abort.
	Transactional bool
	at            map[catalog.FaultType][]crash
}

// armStage registers a stage fault; it has nowhere to act in a variant
// without a stage, and transaction-abort none without transactions.
func armStage(f Fault, env Env) (bool, error) {
	s := env.Stage
	if s == nil || f.Type == catalog.TransactionAbort && !s.Transactional {
		return false, nil
	}
	if s.at == nil {
		s.at = map[catalog.FaultType][]crash{}
	}
	s.at[f.Type] = append(s.at[f.Type], crash{f: f, fired: env.Fired})
	return true, nil
}

// Fires reports whether a fault of type t hits a batch: whether its
// schedule fires for any record in it (the intent and its read count).
// It records one injection listing the batch's intents.
func (s *Stage) Fires(t catalog.FaultType, batch []brokers.Delivery, consumer int) bool {
	if s == nil {
		return false
	}
	for _, cr := range s.at[t] {
		for _, d := range batch {
			if !cr.f.Schedule.Fires(d.Intent, d.Attempt) {
				continue
			}
			intents := make([]int, len(batch))
			for i, d := range batch {
				intents[i] = d.Intent
			}
			e := history.Event{Type: history.Fault, Fault: cr.f.Name, Intents: intents, Consumer: consumer}
			if t == catalog.TransformCrash {
				e.Point = string(catalog.StageCrash)
			}
			cr.fired(e)
			return true
		}
	}
	return false
}

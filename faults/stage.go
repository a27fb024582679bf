package faults

import (
	"iter"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

// Stage holds the faults armed in one variant's consume-transform-produce
// stage (rebalance, transform-crash, transaction-abort); the stage loop
// (package runner) asks it once per batch, written and not yet committed.
type Stage struct {
	// Transactional: the stage writes in transactions, so a
	// transaction-abort has something to abort.
	Transactional bool
	at            map[catalog.FaultType][]stageFault
}

type stageFault struct {
	f     Fault
	fired func(history.Event)
}

// stageSteps is what each stage fault makes the stage loop do, in the
// order they are decided for a batch.
var stageSteps = []struct {
	t    catalog.FaultType
	kind ActionKind
}{
	{catalog.Rebalance, Join},
	{catalog.TransformCrash, Crash},
	{catalog.TransactionAbort, Abort},
}

// armStage registers a stage fault; it has nowhere to act in a variant
// without a stage, and transaction-abort none without transactions.
func armStage(f Fault, env Env) (bool, error) {
	s := env.Stage
	if s == nil || f.Type == catalog.TransactionAbort && !s.Transactional {
		return false, nil
	}
	if s.at == nil {
		s.at = map[catalog.FaultType][]stageFault{}
	}
	s.at[f.Type] = append(s.at[f.Type], stageFault{f: f, fired: env.Fired})
	return true, nil
}

// At says what the stage faults do to a batch on stage instance consumer,
// in order (Join, Crash, Abort): each is decided, and recorded, only once
// the loop has acted out the one before.
func (s *Stage) At(batch []brokers.Delivery, consumer int) iter.Seq[Action] {
	return func(yield func(Action) bool) {
		if s == nil {
			return
		}
		for _, st := range stageSteps {
			if name := s.fires(st.t, batch, consumer); name != "" && !yield(Action{Kind: st.kind, Fault: name}) {
				return
			}
		}
	}
}

// fires reports which fault of type t, if any, hits a batch: the first
// whose schedule fires for any record in it (the intent and its read
// count). It records one injection listing the batch's intents.
func (s *Stage) fires(t catalog.FaultType, batch []brokers.Delivery, consumer int) string {
	for _, sf := range s.at[t] {
		for _, d := range batch {
			if !sf.f.Schedule.Fires(d.Intent, d.Attempt) {
				continue
			}
			intents := make([]int, len(batch))
			for i, d := range batch {
				intents[i] = d.Intent
			}
			e := history.Event{Type: history.Fault, Fault: sf.f.Name, Intents: intents, Consumer: consumer}
			if t == catalog.TransformCrash {
				e.Point = string(catalog.StageCrash)
			}
			sf.fired(e)
			return sf.f.Name
		}
	}
	return ""
}

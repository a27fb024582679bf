package faults

import (
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

// Kills holds the consumer-kill faults armed in one process variant, by
// kill point; the process supervisor (package blackbox) asks it at each
// fetch response and commit it sees, and records each kill through it.
type Kills struct {
	at    map[catalog.KillPoint][]Fault
	fired func(history.Event)
}

func armConsumerKill(f Fault, env Env) (bool, error) {
	if env.Kills == nil {
		return false, nil // a built-in strategy: no process to kill
	}
	p := f.Params.(*catalog.ConsumerKillParams)
	k := env.Kills
	if k.at == nil {
		k.at = map[catalog.KillPoint][]Fault{}
	}
	k.at[p.At] = append(k.at[p.At], f)
	k.fired = env.Fired
	return true, nil
}

// Armed reports whether any fault can fire at point p.
func (k *Kills) Armed(p catalog.KillPoint) bool { return k != nil && len(k.at[p]) > 0 }

// Fires returns the name of the fault that kills the consumer at point p
// for intent on its attempt-th time there (1-based), or "".
func (k *Kills) Fires(p catalog.KillPoint, intent, attempt int) string {
	if k == nil {
		return ""
	}
	for _, f := range k.at[p] {
		if f.Schedule.Fires(intent, attempt) {
			return f.Name
		}
	}
	return ""
}

// Record records one kill (a fault event).
func (k *Kills) Record(e history.Event) {
	e.Type = history.Fault
	k.fired(e)
}

package faults

import (
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

func init() { All[catalog.ProducerAppCrash] = armProducerAppCrash }

// ProducerApp holds the producer-app-crash faults armed in one variant's
// producer application; the application (package runner) asks it at its
// pattern's crash point.
type ProducerApp struct {
	// Pattern is the variant's producer.pattern: a fault acts only at the
	// point that pattern has.
	Pattern catalog.ProducerPattern
	crashes []producerFault
}

type producerFault struct {
	f     Fault
	fired func(history.Event)
}

// armProducerAppCrash registers a producer-app-crash where the variant's
// producer pattern has its point; it has nowhere to act elsewhere.
func armProducerAppCrash(f Fault, env Env) (bool, error) {
	p := env.Producer
	params, _ := f.Params.(*catalog.ProducerAppCrashParams)
	if p == nil || params == nil || p.Pattern.Point() != params.At {
		return false, nil
	}
	p.crashes = append(p.crashes, producerFault{f: f, fired: env.Fired})
	return true, nil
}

// Crashes reports whether the application dies at its crash point while
// it handles intent for the attempt-th time (dual-write: 1; outbox: the
// relay's publish count for the intent's row), and records the injection.
func (p *ProducerApp) Crashes(intent, attempt int) bool {
	if p == nil {
		return false
	}
	for _, pf := range p.crashes {
		if pf.f.Schedule.Fires(intent, attempt) {
			pf.fired(history.Event{Type: history.Fault, Fault: pf.f.Name, Intent: intent, Attempt: attempt,
				Point: string(p.Pattern.Point())})
			return true
		}
	}
	return false
}

package faults

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

// Consumer-side faults: the faults decide, the consumer loop acts.
//
// At each point of a delivery's handling (a crash point: the loop's
// before-process and after-effect-before-ack, and a strategy's own) the
// consumer loop (package runner) asks Consumer.At once, and acts out each
// Action it gets, from a closed set, in order. This package decides every
// action from the faults' schedules and records each injection as it
// decides it; the loop never sees a fault type.

// ActionKind is what the consumer loop (or the stage loop) is asked to do.
type ActionKind int

// The actions. Settle, SyncAcks and Passed ready the loop around a crash
// point; the others are what a fault does.
const (
	// Settle: a crash step's fault fires at this crash point; wait for
	// the acks in flight or queued first, so the point meets the broker
	// with every earlier delivery's ack done.
	Settle ActionKind = iota + 1
	// SyncAcks: a fault fires at this crash point; apply Power
	// (brokers.SyncAcks) to the consumer first, so the fault meets the
	// broker with every ack so far applied (a consumer without the power
	// has nothing to wait for).
	SyncAcks
	// Passed: the consumer passed the crash point alive; a zombie stalled
	// there with the same intent may wake.
	Passed
	// Crash: the consumer instance dies (nothing more acked); a
	// replacement starts and the broker redelivers.
	Crash
	// Zombie: the instance stalls past its lease (a replacement starts),
	// then finishes its delivery without acking.
	Zombie
	// Reset: once the ack in flight is done, apply Power (a connection
	// reset) to the consumer; the instance is dead.
	Reset
	// Slow: apply Power (latency for a while) to the consumer; it goes on.
	Slow
	// Partition: once the ack in flight is done, apply Power (a cut for a
	// while) to the consumer; it goes on.
	Partition
	// Fail: processing the delivery fails; hand it back to the broker.
	Fail
	// FailTransient: processing the delivery fails this time (fail-once);
	// the consumer hands it back or retries, as on_failure says.
	FailTransient
	// Overrun: the instance holds the delivery past the broker's ack
	// deadline, connected (another instance starts and takes the
	// redelivery), for For at most; then it finishes the delivery, acks
	// it late and stops.
	Overrun
	// Join: a new stage instance joins the stage's group (a rebalance).
	Join
	// Abort: the stage aborts its batch's transaction.
	Abort
)

// Action is one thing a fault makes the loop do.
type Action struct {
	Kind ActionKind
	// Fault is the fault's name ("" for Settle, SyncAcks and Passed).
	Fault string
	// Power is what to apply to the consumer (SyncAcks, Reset, Slow,
	// Partition), with the fault's parameters.
	Power brokers.Power
	// Reason is why processing failed (Fail), for the effect event.
	Reason string
	// For bounds how long the instance is held (Overrun).
	For time.Duration
}

// Consumer holds the consumer-side faults armed in one variant, by the
// point where they act.
type Consumer struct {
	at map[catalog.CrashPoint][]consumerFault
}

// step orders the faults armed at one point: the crash point's own (a
// crash, a zombie, a failover) first, then what hits a delivery as it
// arrives (armed at before-process), in this order. At most one fault of
// a step fires for a delivery.
type step int

const (
	crashStep step = iota
	resetStep
	slowStep
	partitionStep
	failStep
)

// consumerFault is one armed consumer-side fault.
type consumerFault struct {
	f     Fault
	step  step
	fired func(history.Event)
	// hits decides from the schedule whether the fault fires for d.
	hits func(d brokers.Delivery) bool
	// act is what the fault does; it returns the action for the loop (0
	// when the fault acts itself, as leader-failover does) and the fault
	// event's reason. It runs on the consumer's goroutine, and ctx ends
	// with the run.
	act func(ctx context.Context, d brokers.Delivery) (Action, string)
	// atPoint: the fault event names the point, as a crash step's does
	// (fail-once, which may act at any crash point).
	atPoint bool
}

func (c *Consumer) add(p catalog.CrashPoint, cf consumerFault) {
	if c.at == nil {
		c.at = map[catalog.CrashPoint][]consumerFault{}
	}
	c.at[p] = append(c.at[p], cf)
	// Stable: faults of one step keep the order they were armed in.
	slices.SortStableFunc(c.at[p], func(a, b consumerFault) int { return int(a.step) - int(b.step) })
}

// At says what the faults armed at point p do to d (d.Attempt is the
// intent's delivery count) on consumer instance consumer, in order. Each
// action is decided, and its fault recorded, only once the loop has acted
// out the one before; the loop stops asking when an action ends the
// delivery. A fault that acts itself does so under ctx, the consumer's.
func (c *Consumer) At(ctx context.Context, p catalog.CrashPoint, d brokers.Delivery, consumer int) iter.Seq[Action] {
	return func(yield func(Action) bool) {
		armed := c.at[p]
		for i := 0; i < len(armed); {
			s, first := armed[i].step, i
			for i < len(armed) && armed[i].step == s {
				i++
			}
			if !c.stepAt(ctx, p, s, armed[first:i], d, consumer, yield) {
				return
			}
		}
	}
}

// Again asks the fail step's faults at p once more, for a delivery whose
// processing the consumer retries in process (on_failure:
// retry-in-process) after one of them failed it there; the faults of the
// steps before (a crash, a reset, latency) decided already and do not act
// again.
func (c *Consumer) Again(ctx context.Context, p catalog.CrashPoint, d brokers.Delivery, consumer int) iter.Seq[Action] {
	return func(yield func(Action) bool) {
		var fails []consumerFault
		for _, cf := range c.at[p] {
			if cf.step == failStep {
				fails = append(fails, cf)
			}
		}
		if len(fails) > 0 {
			c.stepAt(ctx, p, failStep, fails, d, consumer, yield)
		}
	}
}

// stepAt runs one step of At: the first of its faults that fires, if any.
// It reports false when the loop stopped asking.
func (c *Consumer) stepAt(ctx context.Context, p catalog.CrashPoint, s step, faults []consumerFault, d brokers.Delivery, consumer int, yield func(Action) bool) bool {
	i := slices.IndexFunc(faults, func(cf consumerFault) bool { return cf.hits(d) })
	if i < 0 {
		return s != crashStep || yield(Action{Kind: Passed})
	}
	cf := faults[i]
	e := history.Event{Type: history.Fault, Fault: cf.f.Name, Intent: d.Intent, Attempt: d.Attempt, Consumer: consumer}
	if s == crashStep {
		// Only where a crash step fires: a delivery that no fault hits
		// leaves the consumer's acks running in the background (batched
		// where the broker can), as without faults.
		if !yield(Action{Kind: Settle}) || !yield(Action{Kind: SyncAcks, Power: brokers.SyncAcks{}}) {
			return false
		}
	}
	if s == crashStep || cf.atPoint {
		e.Point = string(p)
	}
	a, reason := cf.act(ctx, d)
	e.Reason = reason
	cf.fired(e)
	if a.Kind == 0 {
		return s != crashStep || yield(Action{Kind: Passed})
	}
	a.Fault = cf.f.Name
	return yield(a)
}

// does is an act that asks the loop for a, with no reason.
func does(a Action) func(context.Context, brokers.Delivery) (Action, string) {
	return func(context.Context, brokers.Delivery) (Action, string) { return a, "" }
}

// onSchedule is a hits that asks f's schedule with the delivery's attempt.
func onSchedule(f Fault) func(d brokers.Delivery) bool {
	return func(d brokers.Delivery) bool { return f.Schedule.Fires(d.Intent, d.Attempt) }
}

// armConsumerCrash arms consumer-crash and consumer-zombie at their crash
// point, where the strategy has it.
func armConsumerCrash(f Fault, env Env) (bool, error) {
	p := f.Params.(*catalog.ConsumerCrashParams)
	if !env.Strategy.HasPoint(p.At) {
		return false, nil
	}
	kind := Crash
	if f.Type == catalog.ConsumerZombie {
		kind = Zombie
	}
	env.Consumer.add(p.At, consumerFault{f: f, step: crashStep, fired: env.Fired, hits: onSchedule(f), act: does(Action{Kind: kind})})
	return true, nil
}

// armOnArrival arms a fault that hits a delivery as it arrives (at
// before-process, after that point's crash faults): connection-reset,
// latency, partition, poison-message.
func armOnArrival(f Fault, env Env) (bool, error) {
	cf := consumerFault{f: f, fired: env.Fired, hits: onSchedule(f)}
	switch f.Type {
	case catalog.ConnectionReset:
		cf.step, cf.act = resetStep, does(Action{Kind: Reset, Power: brokers.ResetConnection{}})
	case catalog.Latency:
		lp := f.Params.(*catalog.LatencyParams)
		cf.step, cf.act = slowStep, does(Action{Kind: Slow, Power: brokers.Slow{Latency: lp.Latency.D(), For: lp.Duration.D()}})
	case catalog.Partition:
		pp := f.Params.(*catalog.PartitionParams)
		cf.step, cf.act = partitionStep, does(Action{Kind: Partition, Power: brokers.Partition{For: pp.Duration.D()}})
	case catalog.PoisonMessage:
		// A poison message fails on every delivery: the schedule is asked
		// for the intent's first attempt whatever d.Attempt is, and
		// max_attempt does not apply.
		cf.step, cf.act = failStep, does(Action{Kind: Fail, Reason: "processing failed (poison message)"})
		cf.hits = func(d brokers.Delivery) bool { return f.Schedule.Fires(d.Intent, 1) }
	}
	env.Consumer.add(catalog.BeforeProcess, cf)
	return true, nil
}

// failoverLimit bounds one failover: waiting for the other variants,
// finding the leader, stopping it.
const failoverLimit = 2 * time.Minute

// stopLeader is leader-failover's act: it stops the node leading the
// variant's queue itself (brokers.StopLeader), and the consumer goes on
// (its ack meets a dead connection, and it reconnects to a survivor). The
// failover is bounded by failoverLimit, not by the consumer's context: the
// variants that reach the intent wait for each other.
func stopLeader(f Fault, dest brokers.Destination) func(context.Context, brokers.Delivery) (Action, string) {
	p := f.Params.(*catalog.LeaderFailoverParams)
	return func(_ context.Context, d brokers.Delivery) (Action, string) {
		ctx, cancel := context.WithTimeout(context.Background(), failoverLimit)
		defer cancel()
		var what string
		err := brokers.Apply(ctx, dest, brokers.StopLeader{Fault: f.Name, Intent: d.Intent, Attempt: d.Attempt, StepDown: p.How == catalog.StepDownLeader,
			Stopped: func(w string) { what = w }})
		if err != nil {
			return Action{}, "the failover failed: " + err.Error()
		}
		return Action{}, what
	}
}

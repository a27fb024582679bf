// Package faults injects the faults a scenario configures, each on a
// schedule decided from the run's seed alone.
//
// A decision is a pure function of (seed, fault, intent, attempt), never of a
// shared random stream, so every compared variant meets the same faults
// whatever the goroutine timing. What each fault type is, and where it can
// act, is described in package catalog; this package implements it.
package faults

import (
	"fmt"
	"strings"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/seeded"
)

// Schedule decides when one fault fires. Exactly one of Every and
// Probability is set; MaxAttempt limits firing to an intent's first
// MaxAttempt attempts (deliveries for consumer faults, sends for producer
// faults), so that a retry or redelivery can get through.
type Schedule struct {
	Seed        int64
	Fault       string // the fault's name, part of the hash
	Every       int
	Probability float64
	MaxAttempt  int
}

// Fires reports whether the fault hits intent (1-based) on its attempt-th
// attempt (1-based).
func (s Schedule) Fires(intent, attempt int) bool {
	maxAttempt := s.MaxAttempt
	if maxAttempt <= 0 {
		maxAttempt = 1
	}
	if attempt < 1 || attempt > maxAttempt {
		return false
	}
	if s.Every > 0 {
		offset := int(seeded.Hash(s.Seed, s.Fault, 0, 0) % uint64(s.Every))
		return intent%s.Every == offset
	}
	if s.Probability <= 0 {
		return false
	}
	return seeded.Unit(s.Seed, s.Fault, intent, attempt) < s.Probability
}

// Fault is one configured fault, as the scenario gave it.
type Fault struct {
	Name     string
	Type     catalog.FaultType
	Schedule Schedule
	// Params is the fault type's own parameters (catalog.Fault.NewParams).
	Params any
}

// Env is what a fault needs to arm itself in one variant.
type Env struct {
	Dest     brokers.Destination
	Strategy catalog.Strategy
	Crashes  *Crashes
	// Failures is where processing faults (poison-message) register.
	Failures *Failures
	// Kills is where consumer-kill registers; nil in a variant without a
	// consumer process (a built-in strategy).
	Kills *Kills
	// Fired records one injection.
	Fired func(history.Event)
	// Stage is the variant's consume-transform-produce stage faults, nil
	// when the variant has no stage (stage.go).
	Stage *Stage
}

// Arm installs a fault in one variant. It reports false, without error, when
// the fault has nowhere to act in this variant (a crash point the strategy
// lacks).
type Arm func(f Fault, env Env) (armed bool, err error)

// All maps every fault type to its implementation.
var All = map[catalog.FaultType]Arm{
	catalog.ConsumerCrash:       armConsumerCrash,
	catalog.ProduceResponseLost: armProduceResponseLost,
	catalog.ConsumerZombie:      armConsumerCrash,
	catalog.AckLost:             armAckLost,
	catalog.Disconnect:          armDisconnect,
	catalog.BrokerRestart:       armBrokerRestart,
	catalog.TransformCrash:      armStage,
	catalog.TransactionAbort:    armStage,
	catalog.LeaderMove:          armLeaderMove,
	catalog.Rebalance:           armStage,
	catalog.ConfirmLost:         armConfirmLost,
	catalog.PoisonMessage:       armPoisonMessage,
	catalog.ConnectionReset:     armPoisonMessage, // registers the same way; Failures.Resets asks it
	catalog.Partition:           armPoisonMessage, // registers the same way; Failures.Partitions asks it
	catalog.Latency:             armPoisonMessage, // registers the same way; Failures.Slows asks it
	catalog.ConsumerKill:        armConsumerKill,
	catalog.LeaderFailover:      armLeaderFailover,
	catalog.SubscriberOffline:   armSubscriberOffline,
}

// Install arms f in one variant.
func Install(f Fault, env Env) (bool, error) {
	arm, ok := All[f.Type]
	if !ok {
		return false, fmt.Errorf("fault type %q is not supported by this build", f.Type)
	}
	return arm(f, env)
}

func armConsumerCrash(f Fault, env Env) (bool, error) {
	p := f.Params.(*catalog.ConsumerCrashParams)
	if !env.Strategy.HasPoint(p.At) {
		return false, nil
	}
	env.Crashes.add(p.At, f, env.Fired)
	// consumer-zombie registers the same way; At reports its type and the
	// consumer loop makes the instance a zombie instead of killing it.
	return true, nil
}

func armProduceResponseLost(f Fault, env Env) (bool, error) {
	loser, ok := env.Dest.(brokers.ProduceResponseLoser)
	if !ok {
		return false, fmt.Errorf("fault %s: this broker cannot lose produce responses", f.Name)
	}
	loser.LoseProduceResponses(f.Schedule.Fires, func(intents []int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Intents: intents})
	})
	return true, nil
}

// armAckLost arms ack-lost: on MQTT one acknowledgement packet of a leg
// (armPacketLost); on RabbitMQ the consumer's basic.ack, dropped by the
// AMQP toxic (brokers.AckLoser).
func armAckLost(f Fault, env Env) (bool, error) {
	if _, ok := env.Dest.(brokers.PacketLoser); ok {
		return armPacketLost(f, env)
	}
	loser, ok := env.Dest.(brokers.AckLoser)
	if !ok {
		return false, fmt.Errorf("fault %s: this broker cannot lose acknowledgements", f.Name)
	}
	if p, _ := f.Params.(*catalog.AckLostParams); p != nil && (p.Packet != "" || p.Leg != "") {
		return false, fmt.Errorf("fault %s: packet and leg are MQTT's; on RabbitMQ ack-lost loses the consumer's basic.ack", f.Name)
	}
	armed, err := loser.LoseAcks(f.Schedule.Fires, env.firedOn(f))
	if err != nil {
		return false, fmt.Errorf("fault %s: %w", f.Name, err)
	}
	return armed, nil
}

func armConfirmLost(f Fault, env Env) (bool, error) {
	loser, ok := env.Dest.(brokers.ConfirmLoser)
	if !ok {
		return false, fmt.Errorf("fault %s: this broker cannot lose publish confirms", f.Name)
	}
	if err := loser.LoseConfirms(f.Schedule.Fires, env.firedOn(f)); err != nil {
		return false, fmt.Errorf("fault %s: %w", f.Name, err)
	}
	return true, nil
}

// firedOn records one injection of f on an attempt of an intent.
func (env Env) firedOn(f Fault) func(intent, attempt int) {
	return func(intent, attempt int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Intent: intent, Attempt: attempt})
	}
}

// armPacketLost arms ack-lost on MQTT: one acknowledgement packet of a
// leg, lost inside the broker.
func armPacketLost(f Fault, env Env) (bool, error) {
	p := f.Params.(*catalog.AckLostParams)
	loser, ok := env.Dest.(brokers.PacketLoser)
	if !ok {
		return false, fmt.Errorf("fault %s: this broker cannot lose MQTT acknowledgements", f.Name)
	}
	return loser.LosePackets(p.Packet, p.Leg, f.Schedule.Fires, func(intent int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Point: string(p.Packet) + "/" + string(p.Leg), Intent: intent})
	}), nil
}

func armDisconnect(f Fault, env Env) (bool, error) {
	p := f.Params.(*catalog.DisconnectParams)
	d, ok := env.Dest.(brokers.Disconnecter)
	if !ok {
		return false, fmt.Errorf("fault %s: this broker cannot break client connections", f.Name)
	}
	return d.Disconnect(p.Leg, f.Schedule.Fires, func(intent int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Point: string(p.Leg), Intent: intent})
	}), nil
}

func armBrokerRestart(f Fault, env Env) (bool, error) {
	r, ok := env.Dest.(brokers.Restarter)
	if !ok {
		return false, fmt.Errorf("fault %s: this broker cannot be restarted", f.Name)
	}
	return r.RestartAfter(f.Schedule.Fires, func(intent int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Intent: intent})
	}), nil
}

// Crashes holds the consumer-crash faults armed in one variant, by crash
// point; the consumer loop and the strategies ask it at each point.
type Crashes struct {
	at map[catalog.CrashPoint][]crash
}

type crash struct {
	f     Fault
	fired func(history.Event)
	// act, when set, is the injection itself (the consumer goes on):
	// it returns what it did, for the fault event's reason.
	act func(d brokers.Delivery) string
}

func (c *Crashes) add(p catalog.CrashPoint, f Fault, fired func(history.Event)) {
	if c.at == nil {
		c.at = map[catalog.CrashPoint][]crash{}
	}
	c.at[p] = append(c.at[p], crash{f: f, fired: fired})
}

// Armed reports whether any fault can fire at point p.
func (c *Crashes) Armed(p catalog.CrashPoint) bool { return len(c.at[p]) > 0 }

// At reports which fault, if any, hits the consumer at point p while it
// handles d (d.Attempt is the intent's delivery count): consumer-crash
// kills it, consumer-zombie stalls it past its lease. It records the
// injection, and returns "" when none fires.
// Hits reports whether a fault fires at point p for d, without acting or
// recording: the consumer loop readies itself first (brokers.AckSyncer).
func (c *Crashes) Hits(p catalog.CrashPoint, d brokers.Delivery) bool {
	for _, cr := range c.at[p] {
		if cr.f.Schedule.Fires(d.Intent, d.Attempt) {
			return true
		}
	}
	return false
}

func (c *Crashes) At(p catalog.CrashPoint, d brokers.Delivery, consumer int) catalog.FaultType {
	for _, cr := range c.at[p] {
		if cr.f.Schedule.Fires(d.Intent, d.Attempt) {
			var what string
			if cr.act != nil {
				what = cr.act(d)
			}
			cr.fired(history.Event{Type: history.Fault, Fault: cr.f.Name, Point: string(p),
				Intent: d.Intent, Attempt: d.Attempt, Consumer: consumer, Reason: what})
			return cr.f.Type
		}
	}
	return ""
}

func armPoisonMessage(f Fault, env Env) (bool, error) {
	env.Failures.add(f, env.Fired)
	return true, nil
}

// Failures holds the poison-message, connection-reset, partition and
// latency faults armed in one variant; the consumer loop asks it before processing each
// delivery.
type Failures struct {
	faults []crash
}

func (p *Failures) add(f Fault, fired func(history.Event)) {
	p.faults = append(p.faults, crash{f: f, fired: fired})
}

// Fails reports whether processing d fails (d's intent is a poison
// message), recording the injection. A poison message fails on every
// delivery: the schedule is asked for the intent's first attempt whatever
// d.Attempt is, and max_attempt does not apply.
func (p *Failures) Fails(d brokers.Delivery, consumer int) bool {
	for _, cr := range p.faults {
		if cr.f.Type == catalog.PoisonMessage && cr.f.Schedule.Fires(d.Intent, 1) {
			cr.fired(history.Event{Type: history.Fault, Fault: cr.f.Name,
				Intent: d.Intent, Attempt: d.Attempt, Consumer: consumer})
			return true
		}
	}
	return false
}

// Resets reports whether the consumer's connection is reset as it received
// d (connection-reset), recording the injection.
func (p *Failures) Resets(d brokers.Delivery, consumer int) bool {
	for _, cr := range p.faults {
		if cr.f.Type == catalog.ConnectionReset && cr.f.Schedule.Fires(d.Intent, d.Attempt) {
			cr.fired(history.Event{Type: history.Fault, Fault: cr.f.Name,
				Intent: d.Intent, Attempt: d.Attempt, Consumer: consumer})
			return true
		}
	}
	return false
}

// Partitions reports for how long, if at all, the consumer is cut off
// from the broker as it received d (partition), recording the injection.
func (p *Failures) Partitions(d brokers.Delivery, consumer int) (time.Duration, bool) {
	for _, cr := range p.faults {
		if cr.f.Type == catalog.Partition && cr.f.Schedule.Fires(d.Intent, d.Attempt) {
			cr.fired(history.Event{Type: history.Fault, Fault: cr.f.Name,
				Intent: d.Intent, Attempt: d.Attempt, Consumer: consumer})
			return cr.f.Params.(*catalog.PartitionParams).Duration.D(), true
		}
	}
	return 0, false
}

// Slows reports how much latency, for how long, the consumer's connection
// gets as it received d (latency), recording the injection.
func (p *Failures) Slows(d brokers.Delivery, consumer int) (latency, duration time.Duration, ok bool) {
	for _, cr := range p.faults {
		if cr.f.Type == catalog.Latency && cr.f.Schedule.Fires(d.Intent, d.Attempt) {
			cr.fired(history.Event{Type: history.Fault, Fault: cr.f.Name,
				Intent: d.Intent, Attempt: d.Attempt, Consumer: consumer})
			lp := cr.f.Params.(*catalog.LatencyParams)
			return lp.Latency.D(), lp.Duration.D(), true
		}
	}
	return 0, 0, false
}
func armLeaderMove(f Fault, env Env) (bool, error) {
	mover, ok := env.Dest.(brokers.LeaderMover)
	if !ok {
		return false, fmt.Errorf("fault %s: this broker cannot move partition leaders", f.Name)
	}
	mover.MoveLeaders(f.Schedule.Fires, func(intent int, moves []string) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Intent: intent, Reason: strings.Join(moves, "; ")})
	})
	return true, nil
}

// armSubscriberOffline arms subscriber-offline on MQTT. The fault event
// comes when the window ends and lists, as held, the intents the broker
// received while the subscriber was away: the broker had them, so one that
// never takes effect is lost, even at QoS 0 where nobody confirmed it.
func armSubscriberOffline(f Fault, env Env) (bool, error) {
	p := f.Params.(*catalog.SubscriberOfflineParams)
	if p.For < 1 {
		return false, fmt.Errorf("fault %s: for must be at least 1 (intents the subscriber stays offline)", f.Name)
	}
	o, ok := env.Dest.(brokers.Offliner)
	if !ok {
		return false, fmt.Errorf("fault %s: this broker cannot keep the subscriber offline", f.Name)
	}
	return o.TakeOffline(p.For, f.Schedule.Fires, func(start int, held []int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Point: string(catalog.SubscriberLeg), Intent: start,
			Intents: held, Held: true,
			Reason: fmt.Sprintf("subscriber offline while the broker received %d publishes from intent %d on", len(held), start)})
	}), nil
}

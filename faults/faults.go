// Package faults injects the faults a scenario configures, each on a
// schedule decided from the run's seed alone.
//
// A decision is a pure function of (seed, fault, intent, attempt), never of a
// shared random stream, so every compared variant meets the same faults
// whatever the goroutine timing. What each fault type is, and where it can
// act, is described in package catalog; this package implements it.
package faults

import (
	"context"
	"errors"
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
	// Consumer is where consumer-side faults register (consumer.go).
	Consumer *Consumer
	// Kills is where consumer-kill registers; nil in a variant without a
	// consumer process (a built-in strategy).
	Kills *Kills
	// Fired records one injection.
	Fired func(history.Event)
	// Stage is the variant's consume-transform-produce stage faults, nil
	// when the variant has no stage (stage.go).
	Stage *Stage
	// Producer is where producer-app-crash registers, nil when the
	// variant's producer pattern is direct (producer_app.go).
	Producer *ProducerApp
}

// Arm installs a fault in one variant. It reports false, without error, when
// the fault has nowhere to act in this variant (a crash point the strategy
// lacks).
type Arm func(f Fault, env Env) (armed bool, err error)

// All maps every fault type to its implementation.
var All = map[catalog.FaultType]Arm{
	catalog.ConsumerCrash:       armConsumerCrash,
	catalog.ProduceResponseLost: armProduceResponseLost,
	catalog.ProducerCrash:       armProducerCrash,
	catalog.ConsumerZombie:      armConsumerCrash,
	catalog.AckLost:             armAckLost,
	catalog.Disconnect:          armDisconnect,
	catalog.BrokerRestart:       armBrokerRestart,
	catalog.TransformCrash:      armStage,
	catalog.TransactionAbort:    armStage,
	catalog.LeaderMove:          armLeaderMove,
	catalog.Rebalance:           armStage,
	catalog.ConfirmLost:         armConfirmLost,
	catalog.PoisonMessage:       armOnArrival,
	catalog.ConnectionReset:     armNetwork,
	catalog.Partition:           armNetwork,
	catalog.Latency:             armNetwork,
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

func armProduceResponseLost(f Fault, env Env) (bool, error) {
	return power(f, env, brokers.LoseProduceResponses{Fires: f.Schedule.Fires, Lost: func(intents []int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Intents: intents})
	}})
}

func armProducerCrash(f Fault, env Env) (bool, error) {
	return power(f, env, brokers.CrashProducer{Fires: f.Schedule.Fires, Crashed: func(intents []int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Intents: intents})
	}})
}

// armNetwork arms a network fault on the connections its params name:
// the consumer's as a delivery arrives (armOnArrival), the producer's when
// the broker's confirm of the chosen publish comes back (CutProducer, or
// SlowProducer for latency).
func armNetwork(f Fault, env Env) (bool, error) {
	on := catalog.ConsumerConnection
	if p, ok := f.Params.(catalog.OnConnection); ok && p.On() != "" {
		on = p.On()
	}
	armed := false
	if on.Consumer() {
		a, err := armOnArrival(f, env)
		if err != nil {
			return false, err
		}
		armed = a
	}
	if on.Producer() {
		hit := func(intent, attempt int) {
			env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Point: string(catalog.ProducerConnection), Intent: intent, Attempt: attempt})
		}
		var p brokers.Power = brokers.CutProducer{Fires: f.Schedule.Fires, Cut: hit} // connection-reset: at once
		switch params := f.Params.(type) {
		case *catalog.PartitionParams:
			p = brokers.CutProducer{For: params.Duration.D(), Fires: f.Schedule.Fires, Cut: hit}
		case *catalog.LatencyParams:
			p = brokers.SlowProducer{Latency: params.Latency.D(), For: params.Duration.D(), Fires: f.Schedule.Fires, Slowed: hit}
		}
		a, err := power(f, env, p)
		if err != nil {
			return false, err
		}
		armed = armed || a
	}
	return armed, nil
}

// power applies a broker-side power that arms f on the variant's
// destination: not armed when it has nothing to act on there, an error
// when the broker lacks the power.
func power(f Fault, env Env, p brokers.Power) (bool, error) {
	err := brokers.Apply(context.Background(), env.Dest, p)
	switch {
	case errors.Is(err, brokers.ErrNowhere):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("fault %s: %w", f.Name, err)
	}
	return true, nil
}

// armAckLost arms ack-lost: on MQTT one acknowledgement packet of a leg,
// lost inside the broker or the MQTT toxic (brokers.LosePackets); on
// RabbitMQ the consumer's basic.ack, dropped by the AMQP toxic, and on
// NATS the consumer's ack, dropped by the NATS toxic (brokers.LoseAcks).
func armAckLost(f Fault, env Env) (bool, error) {
	p, _ := f.Params.(*catalog.AckLostParams)
	if p == nil {
		p = &catalog.AckLostParams{}
	}
	armed, err := power(f, env, brokers.LosePackets{Packet: p.Packet, Leg: p.Leg, Fires: f.Schedule.Fires, Lost: func(intent int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Point: string(p.Packet) + "/" + string(p.Leg), Intent: intent,
			Packet: string(p.Packet), Leg: string(p.Leg)})
	}})
	if !errors.Is(err, brokers.ErrNoPower) {
		return armed, err
	}
	if p.Packet != "" || p.Leg != "" {
		return false, fmt.Errorf("fault %s: packet and leg are MQTT's; on RabbitMQ, NATS and Kafka ack-lost loses the consumer's ack (on Kafka, its offset commit)", f.Name)
	}
	return power(f, env, brokers.LoseAcks{Fires: f.Schedule.Fires, Lost: env.firedOn(f)})
}

func armConfirmLost(f Fault, env Env) (bool, error) {
	return power(f, env, brokers.LoseConfirms{Fires: f.Schedule.Fires, Lost: env.firedOn(f)})
}

// firedOn records one injection of f on an attempt of an intent.
func (env Env) firedOn(f Fault) func(intent, attempt int) {
	return func(intent, attempt int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Intent: intent, Attempt: attempt})
	}
}

func armDisconnect(f Fault, env Env) (bool, error) {
	p := f.Params.(*catalog.DisconnectParams)
	return power(f, env, brokers.Disconnect{Leg: p.Leg, Fires: f.Schedule.Fires, Cut: func(intent int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Point: string(p.Leg), Intent: intent})
	}})
}

// armBrokerRestart arms broker-restart: on MQTT (a managed Mosquitto) after
// the broker confirmed the chosen intent (brokers.RestartAfter); on
// RabbitMQ (a managed node) while the producer's publish of the chosen
// intent is in flight (brokers.RestartWhilePublishing).
func armBrokerRestart(f Fault, env Env) (bool, error) {
	armed, err := power(f, env, brokers.RestartAfter{Fires: f.Schedule.Fires, Restarted: func(intent int) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Intent: intent})
	}})
	if !errors.Is(err, brokers.ErrNoPower) {
		return armed, err
	}
	return power(f, env, brokers.RestartWhilePublishing{Fault: f.Name, Fires: f.Schedule.Fires, Restarted: func(intent int, what string) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Intent: intent, Reason: what})
	}})
}

func armLeaderMove(f Fault, env Env) (bool, error) {
	return power(f, env, brokers.MoveLeaders{Fires: f.Schedule.Fires, Moved: func(intent int, moves []string) {
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Intent: intent, Reason: strings.Join(moves, "; ")})
	}})
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
	return power(f, env, brokers.TakeOffline{Window: p.For, AtLeast: p.AtLeast.D(), Fires: f.Schedule.Fires, Ended: func(start int, held []int, away time.Duration, expired bool) {
		reason := fmt.Sprintf("subscriber offline while the broker received %d publishes from intent %d on", len(held), start)
		if p.AtLeast > 0 {
			reason += fmt.Sprintf(", for %s", away.Round(time.Millisecond))
		}
		if expired {
			reason += "; offline longer than its session expiry, the session ended on the broker, with what it held for the subscriber and its subscription: the messages routed until the subscriber was back and subscribed again were dropped"
		}
		env.Fired(history.Event{Type: history.Fault, Fault: f.Name, Point: string(catalog.SubscriberLeg), Intent: start,
			Intents: held, Held: true, Reason: reason})
	}})
}

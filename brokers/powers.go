package brokers

import (
	"context"
	"errors"
	"time"

	"github.com/dqbench/dqbench/catalog"
)

// Fault powers: the one seam through which every broker-side fault acts.
//
// A Power is a value naming one thing a broker can do to its clients or
// itself, with its parameters, as a toxiproxy toxic's attributes are: the
// destination or consumer that has powers takes each through its one
// Apply method (Powered), as a toxiproxy link runs any toxic through the
// toxic's one Pipe method. An adapter switches on the powers it has and
// answers NoPower for the rest, so a new broker-side fault is a Power here
// plus a case in the adapters that can inject it, never a new interface.
//
// Fires and its callbacks are the fault's schedule and its recording,
// given by package faults: an adapter asks Fires (intent, and how many
// times the fault's trigger has passed for it, from 1) and calls back once
// per injection.

// Power is one fault power with its parameters.
type Power interface {
	// Does says what the power does ("lose produce responses"), for the
	// error of a broker that cannot.
	Does() string
}

// Powered is a destination, or an adapter's consumer, with fault powers.
type Powered interface {
	// Apply injects p: a destination's powers arm a fault that acts as
	// traffic passes (and return at once); a consumer's act on its
	// connection now. It returns an error wrapping ErrNoPower when it has
	// no such power, and one wrapping ErrNowhere when it has it but it has
	// nothing to act on here (the fault is then not armed).
	Apply(ctx context.Context, p Power) error
}

// ErrNoPower marks a power a broker does not have.
var ErrNoPower = errors.New("no such fault power")

// ErrNowhere marks a power that has nothing to act on in this destination
// (an MQTT packet the leg's QoS does not have, an ack with ack: auto).
var ErrNowhere = errors.New("nothing for the fault to act on here")

// NoPower is what Apply returns for a power it does not have.
func NoPower(p Power) error { return noPower{p} }

type noPower struct{ p Power }

func (e noPower) Error() string        { return "this broker cannot " + e.p.Does() }
func (e noPower) Is(target error) bool { return target == ErrNoPower }

// Apply applies p to target (a destination, or the adapter's consumer
// under a recording one), or returns NoPower when target has no powers.
func Apply(ctx context.Context, target any, p Power) error {
	if pw, ok := target.(Powered); ok {
		return pw.Apply(ctx, p)
	}
	return NoPower(p)
}

// Destination powers: each arms a fault on a destination, acting on the
// traffic that follows.

// LoseProduceResponses: for each publish request the broker receives,
// Fires is asked with each intent in it (attempt: how many requests have
// carried it); when it says yes for any, the broker stores the request and
// answers with a timeout, and Lost is called once with every intent the
// request carried, so the producer retries.
type LoseProduceResponses struct {
	Fires func(intent, attempt int) bool
	Lost  func(intents []int)
}

// CrashProducer: for each publish request the broker receives, Fires is
// asked with each intent in it (attempt: how many requests have carried
// it); when it says yes for any, the broker stores the request, and the
// producer client that sent it dies before it reads the answer: every
// publish it had not had confirmed ends with an error wrapping
// ErrProducerCrashed, and the producer's next publish goes through a new
// client (a restarted process: a new idempotent producer id, or the same
// transactional id, which fences the old client). Crashed is called once
// per kill with every intent the request carried.
type CrashProducer struct {
	Fires   func(intent, attempt int) bool
	Crashed func(intents []int)
}

// LosePackets: each time Packet passes on Leg for an intent, Fires is
// asked; when it says yes, the packet is lost (breaking the connection
// that carried it, so the sender retries on reconnect) and Lost is called.
// ErrNowhere when the leg's QoS has no such packet.
type LosePackets struct {
	Packet catalog.MQTTPacket
	Leg    catalog.Leg
	Fires  func(intent, attempt int) bool
	Lost   func(intent int)
}

// Disconnect: after the broker has handled an intent's PUBLISH on Leg,
// Fires is asked; when it says yes, that leg's client connection breaks
// and Cut is called.
type Disconnect struct {
	Leg   catalog.Leg
	Fires func(intent, attempt int) bool
	Cut   func(intent int)
}

// RestartAfter: once the broker has confirmed an intent's publish, Fires
// is asked (attempt: how many confirms that intent has had); when it says
// yes, the broker process restarts and Restarted is called.
type RestartAfter struct {
	Fires     func(intent, attempt int) bool
	Restarted func(intent int)
}

// RestartWhilePublishing: before the producer sends an intent's publish,
// Fires is asked (attempt: the application's attempt); when it says yes,
// the broker node is frozen, the publish is sent into it (so it is in
// flight, certainly not stored), and the node is killed and started again
// before the producer goes on; Restarted is called once the node runs
// again. Fault names the fault: destinations sharing one node meet for one
// restart per intent.
type RestartWhilePublishing struct {
	Fault     string
	Fires     func(intent, attempt int) bool
	Restarted func(intent int, what string)
}

// MoveLeaders: when a publish request carries an intent for which Fires
// says yes, every partition of the destination's topics gets the next
// broker of the cluster as its leader; Moved is called once the moves are
// done, with one line per partition moved ("dqbench-x[0]: broker 0 → 1").
type MoveLeaders struct {
	Fires func(intent, attempt int) bool
	Moved func(intent int, moves []string)
}

// LoseAcks, on every consumer started afterwards: when a consumer acks a
// delivery Fires chooses, the ack never reaches the broker. RabbitMQ: the
// connection then breaks; the consumer believes it acked (Ack returns
// nil), the broker redelivers. NATS: the connection stays up and the
// server redelivers once ack_wait has passed; a plain ack returns nil, a
// double ack (ack: sync) waits for a confirmation that does not come and
// returns an error wrapping ErrAckUnconfirmed (only the first send of an
// ack is lost, so acking again gets through). Kafka (a real one): the
// OffsetCommit carrying it is dropped and the connection cut; the client
// sends it again. Lost is called once per lost ack. ErrNowhere when the consumers send no acks (ack: auto).
type LoseAcks struct {
	Fires func(intent, attempt int) bool
	Lost  func(intent, attempt int)
}

// LoseConfirms, on every producer started afterwards: the broker stores a
// publish Fires chooses but its confirm never reaches the producer, so
// that publish's done is called only when the producer closes (an unknown
// outcome). Lost is called once per lost confirm.
type LoseConfirms struct {
	Fires func(intent, attempt int) bool
	Lost  func(intent, attempt int)
}

// CutProducer, on every producer started afterwards: when the broker's
// confirm of a publish Fires chooses comes back to the producer, it is
// dropped and the producer's connection broken: at once (For 0: a reset),
// or once everything between the producer and the broker has been dropped
// for For (a partition). The broker has the publish; the producer ends it
// and whatever else it had not had confirmed as unknown. Cut is called
// once per injection.
type CutProducer struct {
	For   time.Duration
	Fires func(intent, attempt int) bool
	Cut   func(intent, attempt int)
}

// SlowProducer, on every producer started afterwards: when the broker's
// confirm of a publish Fires chooses comes back to the producer, the
// producer's connection turns slow for For: every chunk of data between
// it and the broker, both ways, is delayed by Latency. The confirm itself
// goes through. Slowed is called once per injection.
type SlowProducer struct {
	Latency time.Duration
	For     time.Duration
	Fires   func(intent, attempt int) bool
	Slowed  func(intent, attempt int)
}

// TakeOffline: before the broker routes an intent's first publish, Fires
// is asked; when it says yes, the subscriber's connection is closed and
// its reconnects refused while that intent and the next Window-1 are
// routed. Ended is called once the window is over, with its first intent
// and the intents the broker received meanwhile.
type TakeOffline struct {
	Window int
	// AtLeast: the window lasts at least this long (0: no minimum).
	AtLeast time.Duration
	Fires   func(intent, attempt int) bool
	// Ended reports the window: its first intent, the intents routed
	// during it, how long the subscriber was away, and whether the broker
	// ended its session meanwhile (its session expiry passed).
	Ended func(start int, held []int, away time.Duration, expired bool)
}

// JoinFailover: this destination takes part in the failovers of Fault
// (StopLeader): destinations of one run that reach the same failover (the
// same fault, intent and attempt) meet it once, so one node is stopped for
// all of them at the same point of each one's traffic.
type JoinFailover struct {
	Fault string
}

// StopLeader stops the node leading the destination's queue, once for
// every destination that joined Fault, and calls Stopped with what was
// done, for the history (which node, how, whether it led this queue).
// StepDown: the leader hands over instead (a NATS stream's leader steps
// down; no node stops).
type StopLeader struct {
	Fault           string
	Intent, Attempt int
	StepDown        bool
	Stopped         func(what string)
}

// AckDeadline: the destination's broker delivers a message again when its
// consumer has held it unacked for longer than a deadline, while that
// consumer is still connected (NATS JetStream's ack_wait, RabbitMQ's
// consumer_timeout, after which it closes the consumer's channel); Got is
// called with the longest it may take. ErrNowhere when the consumers send no acks (ack:
// auto).
type AckDeadline struct {
	Got func(time.Duration)
	// Named, when set, is called with the broker's name for the deadline
	// ("consumer_timeout"); a broker that does not call it has ack_wait.
	Named func(string)
}

// Consumer powers: each acts on one consumer instance's connection when
// applied.

// ResetConnection resets the consumer's connection and returns once the
// client has seen it closed; the consumer is dead then (the broker
// requeues what it had not acked).
type ResetConnection struct{}

// Partition drops everything between the consumer and the broker from now
// on, and closes the connection after For; it returns at once. What the
// consumer acks meanwhile never arrives.
type Partition struct {
	For time.Duration
}

// Slow delays every chunk of data between the consumer and the broker by
// Latency, in both directions, for the next For; it returns at once.
type Slow struct {
	Latency, For time.Duration
}

// SyncAcks returns once the broker has applied every ack written so far,
// for a consumer whose Ack may return before (AMQP has no answer to
// basic.ack). The consumer loop applies it when a fault hits at a crash
// point, before the fault acts, so the fault meets the broker with every
// ack Ack returned for applied; a consumer without it has nothing to wait
// for.
type SyncAcks struct{}

func (LoseProduceResponses) Does() string   { return "lose produce responses" }
func (LosePackets) Does() string            { return "lose MQTT acknowledgements" }
func (CrashProducer) Does() string          { return "kill a producer client after a request it sent" }
func (Disconnect) Does() string             { return "break client connections" }
func (RestartAfter) Does() string           { return "be restarted" }
func (RestartWhilePublishing) Does() string { return "be restarted while a publish is in flight" }
func (MoveLeaders) Does() string            { return "move partition leaders" }
func (LoseAcks) Does() string               { return "lose acknowledgements" }
func (AckDeadline) Does() string            { return "redeliver a message held past an ack deadline" }
func (LoseConfirms) Does() string           { return "lose publish confirms" }
func (CutProducer) Does() string            { return "cut a producer's connection" }
func (SlowProducer) Does() string           { return "slow a producer's connection" }
func (TakeOffline) Does() string            { return "keep the subscriber offline" }
func (JoinFailover) Does() string           { return "stop a queue's leader" }
func (StopLeader) Does() string             { return "stop a queue's leader" }
func (ResetConnection) Does() string        { return "reset a consumer's connection" }
func (Partition) Does() string              { return "cut a consumer off" }
func (Slow) Does() string                   { return "slow a consumer's connection" }
func (SyncAcks) Does() string               { return "sync a consumer's acks" }

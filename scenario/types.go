// Package scenario parses and validates dqbench scenario files (format v1).
//
// A scenario names a broker, producer and consumer settings, the faults to
// inject and the variants (consumer idempotency strategies) to compare, each
// with its expectations. Load is strict: an unknown key, a wrong type or a bad
// value is an *Error naming file:line:column, the key and what is allowed.
//
// This package is the format; package scenarios (plural) holds the built-in
// scenario files, which Resolve finds by name.
package scenario

import (
	"github.com/dqbench/dqbench/catalog"
)

// Version is the only scenario format version this build reads.
const Version = 1

// Scenario is one scenario file, after defaults are applied.
type Scenario struct {
	Version     int       `yaml:"version" json:"version" jsonschema:"required,enum=1,description=Scenario format version; always 1."`
	Name        string    `yaml:"name" json:"name" jsonschema:"required,description=Short name; used in reports and topic names."`
	Description string    `yaml:"description" json:"description,omitempty" jsonschema:"description=One line shown by dqbench list."`
	Seed        int64     `yaml:"seed" json:"seed,omitempty" jsonschema:"description=Seed of the fault schedule and message amounts (default 1; --seed overrides)."`
	Messages    int       `yaml:"messages" json:"messages,omitempty" jsonschema:"minimum=1,maximum=10000000,description=Business intents to publish per variant (default 1000; --messages overrides)."`
	Deadline    Duration  `yaml:"deadline" json:"deadline,omitempty" jsonschema:"description=Hard limit for the whole run\\, e.g. 60s (default 2m\\, at most 24h; --timeout overrides)."`
	Drain       Duration  `yaml:"drain" json:"drain,omitempty" jsonschema:"description=After publishing\\, how long the consumers may go without progress (no delivery\\, no ack) before the drain gives up; the drain ends at once when the broker has nothing left to deliver (default 10s)."`
	Broker      Broker    `yaml:"broker" json:"broker" jsonschema:"required"`
	Producer    Producer  `yaml:"producer" json:"producer,omitempty"`
	Consumer    Consumer  `yaml:"consumer" json:"consumer,omitempty"`
	Store       string    `yaml:"store" json:"store,omitempty" jsonschema:"description=Business store of every variant: sqlite (default\\, a temporary file per variant) or a postgres://USER@HOST:PORT/DATABASE URL (a schema per variant\\, dropped after the run); --store overrides."`
	Redis       string    `yaml:"redis" json:"redis,omitempty" jsonschema:"description=Redis for strategies that need one (redis-setnx)\\, e.g. redis://127.0.0.1:6379 (the default); --redis overrides."`
	Faults      []Fault   `yaml:"faults" json:"faults,omitempty"`
	Variants    []Variant `yaml:"variants" json:"variants" jsonschema:"required,minItems=1"`
	Stage       *Stage    `yaml:"stage" json:"stage,omitempty" jsonschema:"description=A consume-transform-produce stage between the producer and the consumers (Kafka): it reads the producer's topic\\, writes each record to a second topic and commits the first topic's offsets; the consumers read the second topic. Absent: no stage."`

	// File is where the scenario was read from ("builtin:quickstart" for a built-in).
	File string `yaml:"-" json:"-"`
	// Source is the scenario's YAML text as read.
	Source []byte `yaml:"-" json:"-"`
	// Warnings are what validation noticed that is not an error, each as
	// FILE:LINE:COL: message (a process program not found here: CI may
	// build it later).
	Warnings []string `yaml:"-" json:"-"`
}

// Broker says which broker to run against and where it is.
type Broker struct {
	Kind      catalog.BrokerKind `yaml:"kind" json:"kind" jsonschema:"required,description=Broker kind."`
	Mode      catalog.Mode       `yaml:"mode" json:"mode,omitempty" jsonschema:"description=embedded: an in-process broker (the default for kafka); external: a running broker at addresses (the default for rabbitmq); managed: a local 3-node RabbitMQ cluster dqbench starts from the installed rabbitmq-server and removes afterwards (or the one dqbench brokers up rabbitmq started)."`
	Addresses []string           `yaml:"addresses" json:"addresses,omitempty" jsonschema:"description=Where the broker is: host:port of each Kafka broker (required with mode external)\\, or AMQP URLs for rabbitmq (default amqp://guest:guest@127.0.0.1:5672/)."`
	// Settings is the kind's own settings (catalog.Broker.NewSettings),
	// written beside kind in the same mapping.
	Settings any `yaml:",params" json:"-"`
}

// Producer holds producer settings; a variant may override each one.
type Producer struct {
	Idempotent *bool        `yaml:"idempotent" json:"idempotent,omitempty" jsonschema:"description=Kafka idempotent producer (default true\\, as in kgo)."`
	Acks       catalog.Acks `yaml:"acks" json:"acks,omitempty" jsonschema:"description=Broker acknowledgement the producer waits for (default all; leader and none need idempotent: false)."`
	Window     int          `yaml:"window" json:"window,omitempty" jsonschema:"minimum=1,maximum=100000,description=Most unacknowledged publishes in flight (default 256; 1 makes every request carry one intent)."`
	Rate       int          `yaml:"rate" json:"rate,omitempty" jsonschema:"minimum=1,maximum=1000000,description=Most intents published per second (default: as fast as the window lets); a pace below the consumer's keeps the backlog small\\, e.g. within a broker's per-session limit."`
	MaxLag     int          `yaml:"max_lag" json:"max_lag,omitempty" jsonschema:"minimum=1,maximum=10000000,description=Most intents published and not yet acked by a consumer: the producer waits while this many are outstanding (default: no limit)\\, and goes on when no intent is acked for the drain period; keeps the broker's backlog within a per-session limit (embedded mochi-mqtt: 8\\,192) however slow the consumer."`
	// Retries and ConfirmTimeout are the application's publish policy.
	Retries        *int     `yaml:"retries" json:"retries,omitempty" jsonschema:"minimum=0,maximum=100,description=How many times the application publishes an intent again when a send ends without a confirm (an unknown outcome) or none came within confirm_timeout (default 0: the client's own retries only)."`
	ConfirmTimeout Duration `yaml:"confirm_timeout" json:"confirm_timeout,omitempty" jsonschema:"description=How long the application waits for a confirm before it gives the send up as unknown (and retries\\, with retries > 0); default: as long as the client takes to answer (5s with a confirm-lost fault\\, whose withheld confirms never come)."`
	Backoff        *Backoff `yaml:"backoff" json:"backoff,omitempty" jsonschema:"description=How long the application waits before each retry (with retries > 0): fixed or exponential\\, with a cap and a seeded jitter (default: it retries at once)."`
	// Pattern is how the application hands each intent over: directly,
	// after a write of its own business row, or through an outbox.
	Pattern catalog.ProducerPattern `yaml:"pattern" json:"pattern,omitempty" jsonschema:"description=How the producer application hands an intent to the broker: direct (default: it publishes)\\, dual-write (it commits its own business row in its SQLite store\\, then publishes: a crash between the two loses the intent) or outbox (it commits the business row and an outbox row in one transaction; a relay publishes each unsent row and marks it sent: a relay crash between the two publishes it twice)."`
	// The producer keys only some broker kinds take (Kafka's client,
	// RabbitMQ's max_length and overflow).
	catalog.ProducerKeys `yaml:",inline"`
}

// Consumer holds consumer settings; a variant may override each one.
type Consumer struct {
	Instances int             `yaml:"instances" json:"instances,omitempty" jsonschema:"minimum=1,maximum=64,description=Consumer processes sharing the subscription (default 1)."`
	Ack       catalog.AckMode `yaml:"ack" json:"ack,omitempty" jsonschema:"description=When the consumer acks/commits: after-process (at-least-once\\, default) or before-process (at-most-once) or auto (the broker acks on delivery\\, at-most-once: RabbitMQ autoAck\\, NATS JetStream AckNone; rabbitmq and nats only)."`
	Prefetch  int             `yaml:"prefetch" json:"prefetch,omitempty" jsonschema:"minimum=1,maximum=100000,description=Messages fetched per poll / prefetch count (default 100)."`
	// The consumer keys only some broker kinds take (Kafka's isolation,
	// RabbitMQ's on_failure and delivery_limit).
	catalog.ConsumerKeys `yaml:",inline"`
}

// Fault is one fault to inject. Type picks the fault; the schedule fields
// (every, probability, max_attempt) say which intents it hits; the fault
// type's own parameters are written beside them and decoded into Params.
type Fault struct {
	Type        catalog.FaultType `yaml:"type" json:"type" jsonschema:"required,description=Which fault to inject."`
	Name        string            `yaml:"name" json:"name,omitempty" jsonschema:"description=Label in reports (default: type\\, plus the crash point)."`
	Every       int               `yaml:"every" json:"every,omitempty" jsonschema:"minimum=1,maximum=10000000,description=Fire on every Nth intent (offset chosen from the seed). Exactly one of every and probability."`
	Probability float64           `yaml:"probability" json:"probability,omitempty" jsonschema:"exclusiveMinimum=0,maximum=1,description=Fire on each intent with this probability\\, decided by a hash of (seed\\, fault\\, intent\\, attempt)."`
	MaxAttempt  int               `yaml:"max_attempt" json:"max_attempt,omitempty" jsonschema:"minimum=1,maximum=1000,description=Fire only on an intent's first N attempts/deliveries (default 1)\\, so a redelivery can get through."`
	// Params is the fault type's own parameters (catalog.Fault.NewParams).
	Params any `yaml:",params" json:"-"`

	// Line is the scenario line the fault starts on (for messages).
	Line int `yaml:"-" json:"-"`
}

// Variant is one compared configuration: a consumer idempotency strategy,
// optional setting overrides and its expectations.
type Variant struct {
	Name     string                 `yaml:"name" json:"name" jsonschema:"required,description=Name used in reports and JSON output."`
	Strategy catalog.StrategyName   `yaml:"strategy" json:"strategy,omitempty" jsonschema:"description=Consumer idempotency strategy (a built-in consumer). Exactly one of strategy and process."`
	Producer *Producer              `yaml:"producer" json:"producer,omitempty" jsonschema:"description=Overrides of the scenario's producer settings."`
	Consumer *Consumer              `yaml:"consumer" json:"consumer,omitempty" jsonschema:"description=Overrides of the scenario's consumer settings."`
	Store    string                 `yaml:"store" json:"store,omitempty" jsonschema:"description=This variant's business store (overrides the scenario's store)."`
	ID       catalog.IDSource       `yaml:"id" json:"id,omitempty" jsonschema:"enum=business,enum=per-send-uuid,enum=content-hash,enum=delivery-tag,enum=offset,description=Where the message id the strategy deduplicates on comes from: business (the intent's id\\, default)\\, per-send-uuid (new on every publish attempt)\\, content-hash (a hash of account and amount)\\, delivery-tag (the broker's tag of each delivery: rabbitmq\\, mqtt\\, nats) or offset (where the broker stored the message: kafka\\, nats)."`
	Effect   catalog.EffectKind     `yaml:"effect" json:"effect,omitempty" jsonschema:"description=The business effect the consumer applies: increment (add to a balance\\, the default)\\, create (an order row keyed by the business id: unique-key only\\, its default)\\, set\\, upsert\\, delete (naturally idempotent)\\, append (a row per application)\\, call or call-with-key (an HTTP service dqbench runs\\, without or with an Idempotency-Key header). See docs/scenario.md\\, Effects."`
	Expect   map[string]Expectation `yaml:"expect" json:"expect,omitempty" jsonschema:"description=Checks on the variant's counts\\, e.g. duplicates: 0 or lost: '>0'."`
	// SweepExpect are checks over the runs of a sweep ("dqbench sweep"),
	// which "dqbench run" does not read.
	SweepExpect map[string]SweepExpectation `yaml:"sweep_expect" json:"sweep_expect,omitempty" jsonschema:"description=Checks over the runs of a sweep (dqbench sweep; dqbench run does not read them)\\, e.g. lost: '== 0 in every run' or duplicates: '> 0 in at least 95% of runs'."`
	// Varies names the counts that may differ between runs with one seed,
	// each with why (timing the seed does not decide); the report says so.
	Varies map[string]Varies `yaml:"varies" json:"varies,omitempty" jsonschema:"description=Counts that may differ between runs with the same seed\\, each with the reason (timing the seed does not decide)\\, e.g. lost: how many QoS 0 publishes arrive while no subscriber is online. The report says so next to the counts."`
	Stage  *Stage            `yaml:"stage" json:"stage,omitempty" jsonschema:"description=Overrides of the scenario's stage settings; gives this variant a stage when the scenario has none."`
	// Process runs your own consumer program instead of a built-in
	// strategy (process.go).
	Process *Process `yaml:"process" json:"process,omitempty" jsonschema:"description=Your own consumer program as the consumer under test\\, instead of a built-in strategy. Exactly one of strategy and process."`
	// Audit is how a process variant's store is counted.
	Audit *Audit `yaml:"audit" json:"audit,omitempty" jsonschema:"description=How dqbench counts the effects in a process variant's store (required with process)."`
	// The variant's overrides of the broker's settings, one key per kind
	// that has them (mqtt, rabbitmq).
	catalog.BrokerOverrides `yaml:",inline"`
	// Params is the strategy's own settings (catalog.Strategy.NewParams),
	// written beside strategy in the variant.
	Params any `yaml:",params" json:"-"`

	// Line is the scenario line the variant starts on (for messages).
	Line int `yaml:"-" json:"-"`
}

// Stage is a consume-transform-produce stage: it consumes the producer's
// topic, writes each record to an output topic and commits the input
// offsets, one batch at a time; the consumers read the output topic.
type Stage struct {
	Transactional *bool `yaml:"transactional" json:"transactional,omitempty" jsonschema:"description=Write each batch and commit its input offsets in one Kafka transaction (default false: write\\, then commit the offsets)."`
	Batch         int   `yaml:"batch" json:"batch,omitempty" jsonschema:"minimum=1,maximum=10000,description=Records per batch: per transaction\\, or per offset commit without transactions (default 10). A batch also ends at an intent that is a multiple of batch\\, so batches line up with intents."`
	Instances     int   `yaml:"instances" json:"instances,omitempty" jsonschema:"minimum=1,maximum=64,description=Stage instances sharing the input topic's consumer group (default 1)."`
}

// Duration is a time.Duration written as "30s", "2m", "1m30s".
type Duration = catalog.Duration

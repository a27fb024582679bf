package catalog

import "time"

// QueueType is the kind of RabbitMQ queue each variant declares.
type QueueType string

// RabbitMQ queue types.
const (
	ClassicQueue QueueType = "classic"
	QuorumQueue  QueueType = "quorum"
)

// Allowed lists the valid values, for strict decoding and the schema.
func (QueueType) Allowed() []string { return []string{string(ClassicQueue), string(QuorumQueue)} }

// RabbitMQSettings are the settings of kind rabbitmq: the broker keys
// written beside kind (QueueType, Toxiproxy), and the RabbitMQ-only
// producer and consumer keys of one variant (ForVariant).
type RabbitMQSettings struct {
	QueueType QueueType `yaml:"queue_type" json:"queue_type,omitempty" jsonschema:"description=Type of each variant's durable queue: classic (default) or quorum."`
	Toxiproxy string    `yaml:"toxiproxy" json:"toxiproxy,omitempty" jsonschema:"description=API URL of an external toxiproxy (http://HOST:8474) that every producer and consumer connection goes through (--toxiproxy overrides); default: an in-process toxiproxy. The AMQP-aware faults (ack-lost\\, confirm-lost) need the in-process one."`
	// Durable: each variant's queue survives a broker restart (nil: true).
	Durable *bool `yaml:"durable" json:"durable,omitempty" jsonschema:"description=Declare each variant's queue durable (default true); a transient queue (false) is deleted when its node restarts\\, with every message in it. Classic queues only (a quorum queue is always durable); a variant's rabbitmq: {durable: …} overrides it."`
	// Nodes is the size of the managed cluster (0: cluster.Size).
	// ConsumerTimeout is the managed nodes' consumer_timeout (0: the
	// broker's default, 30 minutes).
	ConsumerTimeout Duration `yaml:"consumer_timeout" json:"consumer_timeout,omitempty" jsonschema:"description=Mode managed: RabbitMQ's consumer_timeout on the nodes dqbench starts (a broker-wide setting: the run starts its own nodes for it)\\, e.g. 2s: a channel holding a delivery unacked for longer is closed by the broker\\, which requeues what it had not acked; default: RabbitMQ's (30 minutes). slow-processing needs it."`
	Nodes           int      `yaml:"nodes" json:"nodes,omitempty" jsonschema:"minimum=1,maximum=3,description=Mode managed: how many nodes the throwaway cluster has (default 3); with 1 (or any other setting than the default) the run starts its own node rather than using the cluster dqbench brokers up left running. broker-restart needs nodes: 1."`
	// TLS and login on an external broker (tls:, auth:).
	Security `yaml:",inline"`
	// The variant's queue bounds and delivery limit (empty in the
	// broker's settings).
	RabbitMQProducer `yaml:"-" json:"-"`
	RabbitMQConsumer `yaml:"-" json:"-"`
}

// RabbitMQOverrides are the broker settings one variant may change
// (rabbitmq: in a variant), so one run can compare queue types.
type RabbitMQOverrides struct {
	QueueType QueueType `yaml:"queue_type" json:"queue_type,omitempty" jsonschema:"description=Type of this variant's durable queue: classic or quorum (overrides the broker's queue_type)."`
	Durable   *bool     `yaml:"durable" json:"durable,omitempty" jsonschema:"description=Declare this variant's queue durable (overrides the broker's durable)."`
}

// ForVariant returns a copy of s with the variant's rabbitmq overrides
// and its RabbitMQ producer and consumer keys.
func (s RabbitMQSettings) ForVariant(v VariantKeys) any {
	if o := v.Overrides.RabbitMQ; o != nil {
		setIfNonZero(&s.QueueType, o.QueueType)
		if o.Durable != nil {
			s.Durable = o.Durable
		}
	}
	s.RabbitMQProducer = v.Producer.RabbitMQProducer
	s.RabbitMQConsumer = v.Consumer.RabbitMQConsumer
	return &s
}

// UseToxiproxy routes the kind's client connections through the external
// toxiproxy at url (the run's --toxiproxy).
func (s *RabbitMQSettings) UseToxiproxy(url string) { s.Toxiproxy = url }

// Defaults fills in what the scenario leaves out.
func (s *RabbitMQSettings) Defaults() {
	if s.QueueType == "" {
		s.QueueType = ClassicQueue
	}
}

// Standard says whether the settings ask for the managed cluster "dqbench
// brokers up" starts (3 nodes, no broker-wide setting of its own), which a
// run may reuse.
func (s RabbitMQSettings) Standard() bool {
	return (s.Nodes == 0 || s.Nodes == 3) && s.ConsumerTimeout == 0
}

// IsDurable says whether the queue is declared durable (the default).
func (s RabbitMQSettings) IsDurable() bool { return s.Durable == nil || *s.Durable }

// RabbitMQProducer are the producer keys only kind rabbitmq takes: they
// bound the variant's queue (a broker limit as a loss source). An empty
// Overflow is drop-head.
type RabbitMQProducer struct {
	MaxLength int      `yaml:"max_length" json:"max_length,omitempty" jsonschema:"minimum=0,maximum=10000000,description=The queue holds at most this many ready messages (RabbitMQ x-max-length); 0 (default): no limit. rabbitmq only."`
	Overflow  Overflow `yaml:"overflow" json:"overflow,omitempty" jsonschema:"description=What a full queue (max_length) does with a publish: drop-head (default: the oldest message is dropped after it was confirmed\\, a loss no client sees) or reject-publish (the new publish is refused with a basic.nack the producer sees). rabbitmq only."`
	// Persistent and Confirms are nil for true.
	Persistent *bool `yaml:"persistent" json:"persistent,omitempty" jsonschema:"description=Publish persistent messages (delivery mode 2\\, default true); false publishes them transient (delivery mode 1): a durable classic queue drops them when its node restarts. rabbitmq only."`
	Confirms   *bool `yaml:"confirms" json:"confirms,omitempty" jsonschema:"description=Publish on a channel in confirm mode (publisher confirms\\, default true); false publishes fire and forget: the producer never learns whether the broker stored a message\\, so every intent counts as indeterminate and none is retried. rabbitmq only."`
}

// IsPersistent says whether messages go out persistent (the default).
func (p RabbitMQProducer) IsPersistent() bool { return p.Persistent == nil || *p.Persistent }

// HasConfirms says whether the producer uses publisher confirms (the
// default).
func (p RabbitMQProducer) HasConfirms() bool { return p.Confirms == nil || *p.Confirms }

// With returns p overridden by what o sets (a variant's producer).
func (p RabbitMQProducer) With(o RabbitMQProducer) RabbitMQProducer {
	setIfNonZero(&p.MaxLength, o.MaxLength)
	setIfNonZero(&p.Overflow, o.Overflow)
	if o.Persistent != nil {
		p.Persistent = o.Persistent
	}
	if o.Confirms != nil {
		p.Confirms = o.Confirms
	}
	return p
}

// RabbitMQConsumer are the consumer keys only kind rabbitmq takes: what
// happens to a delivery whose processing failed (poison-message). An
// empty OnFailure is requeue.
type RabbitMQConsumer struct {
	OnFailure     FailureMode `yaml:"on_failure" json:"on_failure,omitempty" jsonschema:"description=What the consumer does with a delivery whose processing failed (poison-message\\, fail-once): requeue (basic.nack with requeue\\, the default where the broker takes deliveries back: a transient failure; it comes back) or reject (basic.reject: a permanent one; the broker dead-letters it)\\, on rabbitmq and nats; retry-queue (rabbitmq only: basic.reject to the queue's dead-letter exchange\\, which routes it to a wait queue; after retry_delay the wait queue dead-letters it back: a delayed retry); or retry-in-process (the consumer runs the processing again at once\\, without the broker; the default elsewhere)\\, on every broker."`
	DeliveryLimit int         `yaml:"delivery_limit" json:"delivery_limit,omitempty" jsonschema:"minimum=0,maximum=1000,description=The queue dead-letters a message once it has been delivered this many times without an ack (RabbitMQ quorum queues: x-delivery-limit); 0 (default): no limit. rabbitmq with queue_type quorum only."`
	// DeadLetterQueue is nil for true.
	DeadLetterQueue *bool `yaml:"dead_letter_queue" json:"dead_letter_queue,omitempty" jsonschema:"description=Declare the queue the variant's dead-letter exchange routes to (default true): the dead-letter queue\\, or with on_failure: retry-queue the wait queue; false leaves it out\\, as a forgotten or deleted queue: the broker dead-letters into nothing and drops each message\\, confirming it to nobody (counted lost\\, cause dead-letter-dropped). rabbitmq only\\, with on_failure: reject or retry-queue and no delivery_limit."`
	// RetryDelay is the wait queue's message TTL (on_failure:
	// retry-queue; 0: DefaultRetryDelay).
	RetryDelay Duration `yaml:"retry_delay" json:"retry_delay,omitempty" jsonschema:"description=With on_failure: retry-queue: how long a failed message waits in the wait queue before it is dead-lettered back (the wait queue's x-message-ttl)\\, e.g. 200ms (default 200ms\\, at most 1m). rabbitmq only."`
	// DeadLetterMaxLength and DeadLetterOverflow bound the queue the
	// dead-letter exchange routes to.
	DeadLetterMaxLength int      `yaml:"dead_letter_max_length" json:"dead_letter_max_length,omitempty" jsonschema:"minimum=0,maximum=10000000,description=The queue the dead-letter exchange routes to (the dead-letter queue\\, or with on_failure: retry-queue the wait queue) holds at most this many ready messages (x-max-length); 0 (default): no limit. A message dead-lettered into it when it is full goes as dead_letter_overflow says\\, confirmed to nobody. rabbitmq only."`
	DeadLetterOverflow  Overflow `yaml:"dead_letter_overflow" json:"dead_letter_overflow,omitempty" jsonschema:"description=What the full queue of dead_letter_max_length does with a message dead-lettered into it: drop-head (default: the oldest is dropped\\, or dead-lettered onwards where that queue has a dead-letter exchange of its own\\, as the wait queue does) or reject-publish (the new one is refused; a dead-lettered message has no publisher to tell\\, so the broker drops it). rabbitmq only."`
}

// DefaultRetryDelay is the wait queue's TTL when retry_delay is left out.
const DefaultRetryDelay = Duration(200 * time.Millisecond)

// Delay is the retry queue's message TTL.
func (c RabbitMQConsumer) Delay() Duration {
	if c.RetryDelay == 0 {
		return DefaultRetryDelay
	}
	return c.RetryDelay
}

// HasDeadLetterQueue says whether the dead-letter queue is declared (the
// default).
func (c RabbitMQConsumer) HasDeadLetterQueue() bool {
	return c.DeadLetterQueue == nil || *c.DeadLetterQueue
}

// With returns c overridden by what o sets (a variant's consumer).
func (c RabbitMQConsumer) With(o RabbitMQConsumer) RabbitMQConsumer {
	setIfNonZero(&c.OnFailure, o.OnFailure)
	setIfNonZero(&c.DeliveryLimit, o.DeliveryLimit)
	setIfNonZero(&c.RetryDelay, o.RetryDelay)
	setIfNonZero(&c.DeadLetterMaxLength, o.DeadLetterMaxLength)
	setIfNonZero(&c.DeadLetterOverflow, o.DeadLetterOverflow)
	if o.DeadLetterQueue != nil {
		c.DeadLetterQueue = o.DeadLetterQueue
	}
	return c
}

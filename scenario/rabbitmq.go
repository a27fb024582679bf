package scenario

import (
	"fmt"
	"time"

	"github.com/dqbench/dqbench/catalog"
)

// rabbitmq checks the RabbitMQ keys of the nodes and the durability keys:
// nodes and consumer_timeout only where dqbench starts the nodes, a transient queue only of a type that can be one, and
// the producer's persistent and confirms only on RabbitMQ.
func (c *checker) rabbitmq() {
	if _, ok := c.s.Broker.Settings.(*catalog.RabbitMQSettings); ok && c.s.Broker.Kind == catalog.RabbitMQ {
		mode := c.s.Broker.Mode
		if mode == "" {
			mode = catalog.ModeOf(c.s.Broker.Kind)
		}
		if c.d.Has("broker.nodes") && mode != catalog.Managed {
			c.errorf("broker.nodes", "broker.nodes: only with mode: managed (the cluster dqbench starts); an external broker has the nodes it has: remove nodes, or use mode: managed")
		}
		if c.d.Has("broker.consumer_timeout") && mode != catalog.Managed {
			c.errorf("broker.consumer_timeout", "broker.consumer_timeout: only with mode: managed: it is a broker-wide setting (rabbitmq.conf), which dqbench sets only on nodes it starts, never on a running broker's; use mode: managed, or set it on your broker yourself")
		}
		for i, v := range c.s.Variants {
			vs, _ := c.s.BrokerSettingsFor(v).(*catalog.RabbitMQSettings)
			if vs == nil || vs.IsDurable() || vs.QueueType != catalog.QuorumQueue {
				continue
			}
			path := fmt.Sprintf("variants[%d].rabbitmq.durable", i)
			if !c.d.Has(path) {
				path = "broker.durable"
			}
			c.errorf(path, "%s: a quorum queue is always durable (RabbitMQ refuses a transient one), and variant %s has queue_type: quorum; use queue_type: classic for durable: false", path, echo(v.Name))
		}
	}
	c.deadLetterQueue()
	c.retryQueue()
	if c.s.Broker.Kind == catalog.RabbitMQ {
		return
	}
	check := func(path string) {
		for _, key := range []string{"persistent", "confirms"} {
			if c.d.Has(path + "." + key) {
				c.errorf(path+"."+key, "%s.%s: RabbitMQ's delivery mode and publisher confirms; broker kind %s has neither key: leave it out", path, key, c.s.Broker.Kind)
			}
		}
	}
	check("producer")
	for i := range c.s.Variants {
		check(fmt.Sprintf("variants[%d].producer", i))
	}
}

// deadLetterQueue checks consumer.dead_letter_queue: RabbitMQ's, and only
// in a variant where something is dead-lettered (on_failure: reject, a
// delivery_limit).
func (c *checker) deadLetterQueue() {
	for i, v := range c.s.Variants {
		kp := fmt.Sprintf("variants[%d].consumer.dead_letter_queue", i)
		if !c.d.Has(kp) {
			kp = "consumer.dead_letter_queue"
		}
		cs := c.s.ConsumerFor(v)
		if !c.d.Has(kp) {
			continue
		}
		switch {
		case c.s.Broker.Kind != catalog.RabbitMQ:
			c.errorf(kp, "%s: the queue a RabbitMQ dead-letter exchange routes to; broker kind %s has none: leave it out", kp, c.s.Broker.Kind)
		case !cs.HasDeadLetterQueue() && !cs.OnFailure.DeadLetters():
			c.errorf(kp, "%s: variant %s refuses nothing for good (on_failure: reject) and retries nothing through a wait queue (on_failure: retry-queue), so no dead-letter queue of it to leave out; add on_failure: reject or retry-queue, or remove this key", kp, echo(v.Name))
		case !cs.HasDeadLetterQueue() && cs.DeliveryLimit > 0:
			c.errorf(kp, "%s: variant %s has a delivery_limit: the run would wait for its requeued messages to be dead-lettered; leave the dead-letter queue out only with on_failure: reject and no delivery_limit", kp, echo(v.Name))
		}
	}
}

// consumerKey is where a variant's consumer key is best reported: the
// variant's own when written, else the scenario's consumer; "" when
// neither writes it.
func (c *checker) consumerKey(i int, key string) string {
	for _, p := range []string{fmt.Sprintf("variants[%d].consumer.%s", i, key), "consumer." + key} {
		if c.d.Has(p) {
			return p
		}
	}
	return ""
}

// MaxRetryDelay bounds retry_delay: a run waits it out for every retry.
const MaxRetryDelay = catalog.Duration(time.Minute)

// retryQueue checks on_failure: retry-queue and the keys of the queue the
// dead-letter exchange routes to: RabbitMQ's, retry_delay only with
// retry-queue and shorter than the drain (which would give up while
// messages wait), dead_letter_max_length only where something is
// dead-lettered into a declared queue.
func (c *checker) retryQueue() {
	for i, v := range c.s.Variants {
		cs := c.s.ConsumerFor(v)
		rabbit := c.s.Broker.Kind == catalog.RabbitMQ
		if kp := c.consumerKey(i, "on_failure"); kp != "" && cs.OnFailure == catalog.FailRetryQueue {
			switch {
			case !rabbit:
				c.errorf(kp, "%s: retry-queue is RabbitMQ's delayed retry (a dead-letter exchange and a wait queue with a TTL); broker kind %s has none: use requeue or retry-in-process", kp, c.s.Broker.Kind)
			case cs.DeliveryLimit > 0:
				c.errorf(kp, "%s: variant %s has a delivery_limit, which would dead-letter into the wait queue too; use one of them", kp, echo(v.Name))
			case cs.Ack == catalog.AckBeforeProcess || cs.Ack == catalog.AckAuto:
				c.errorf(kp, "%s: variant %s acks before processing (ack: %s): a failed delivery is gone already, nothing to retry; use ack: after-process", kp, echo(v.Name), cs.Ack)
			case c.poison() >= 0:
				c.errorf(kp, "%s: retry-queue with a poison-message fault (faults[%d]) retries for ever, once every retry_delay: a poison message fails every time; use reject, or fail-once for a transient failure", kp, c.poison())
			}
		}
		if kp := c.consumerKey(i, "retry_delay"); kp != "" {
			d := cs.RetryDelay
			drain := c.s.Drain
			if drain == 0 {
				drain = DefaultDrain
			}
			switch {
			case cs.OnFailure != catalog.FailRetryQueue:
				c.errorf(kp, "%s: the wait of on_failure: retry-queue, and variant %s does not retry through a wait queue; add on_failure: retry-queue, or remove this key", kp, echo(v.Name))
			case d < catalog.Duration(time.Millisecond) || d > MaxRetryDelay:
				c.errorf(kp, "%s: must be from 1ms to 1m, got %s", kp, d)
			case d >= catalog.Duration(drain):
				c.errorf(kp, "%s: %s is not shorter than the drain (%s): the drain would give up while failed messages wait; raise drain or lower retry_delay", kp, d, drain)
			}
		}
		c.deadLetterBounds(i, v.Name, cs, rabbit)
	}
}

// poison is the index of the first poison-message fault, -1 if none.
func (c *checker) poison() int {
	for i, f := range c.s.Faults {
		if f.Type == catalog.PoisonMessage {
			return i
		}
	}
	return -1
}

// deadLetterBounds checks dead_letter_max_length and dead_letter_overflow
// of variant i.
func (c *checker) deadLetterBounds(i int, name string, cs Consumer, rabbit bool) {
	if kp := c.consumerKey(i, "dead_letter_max_length"); kp != "" {
		c.inRange(kp, cs.DeadLetterMaxLength, MaxMaxLength)
		switch {
		case !rabbit:
			c.errorf(kp, "%s: bounds the queue a RabbitMQ dead-letter exchange routes to; broker kind %s has none: leave it out", kp, c.s.Broker.Kind)
		case !cs.OnFailure.DeadLetters() && cs.DeliveryLimit == 0:
			c.errorf(kp, "%s: variant %s dead-letters nothing (no on_failure: reject or retry-queue, no delivery_limit); add one, or remove this key", kp, echo(name))
		case !cs.HasDeadLetterQueue():
			c.errorf(kp, "%s: variant %s leaves the queue it would bound out (dead_letter_queue: false); remove one of the two keys", kp, echo(name))
		}
	}
	if kp := c.consumerKey(i, "dead_letter_overflow"); kp != "" && cs.DeadLetterMaxLength == 0 {
		c.errorf(kp, "%s: what a full dead-letter target does, and variant %s does not bound it; add dead_letter_max_length, or remove this key", kp, echo(name))
	}
}

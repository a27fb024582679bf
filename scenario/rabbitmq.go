package scenario

import (
	"fmt"

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
		case !cs.HasDeadLetterQueue() && cs.OnFailure != catalog.FailReject:
			c.errorf(kp, "%s: variant %s refuses nothing for good (on_failure: reject), so no dead-letter queue of it to leave out; add on_failure: reject, or remove this key", kp, echo(v.Name))
		case !cs.HasDeadLetterQueue() && cs.DeliveryLimit > 0:
			c.errorf(kp, "%s: variant %s has a delivery_limit: the run would wait for its requeued messages to be dead-lettered; leave the dead-letter queue out only with on_failure: reject and no delivery_limit", kp, echo(v.Name))
		}
	}
}

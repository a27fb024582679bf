package scenario

import (
	"fmt"

	"github.com/dqbench/dqbench/catalog"
)

// clients checks the Kafka producer client of every variant: client is
// Kafka's, and kafka-go can carry neither the idempotent producer nor a
// transactional stage.
func (c *checker) clients() {
	kafka := c.s.Broker.Kind == catalog.Kafka
	if c.d.Has("producer.client") && !kafka {
		c.errorf("producer.client", "producer.client: only for broker kind kafka, not %s", c.s.Broker.Kind)
	}
	for i, v := range c.s.Variants {
		vp := fmt.Sprintf("variants[%d]", i)
		if c.d.Has(vp+".producer.client") && !kafka {
			c.errorf(vp+".producer.client", "%s.producer.client: only for broker kind kafka, not %s", vp, c.s.Broker.Kind)
		}
		p := c.s.ProducerFor(v)
		if !kafka || p.Client != catalog.KafkaGo {
			continue
		}
		path := c.clientPath(i)
		if p.IsIdempotent() {
			why := ""
			if p.Idempotent == nil {
				why = ", and idempotent defaults to true"
			}
			c.errorf(path, "%s: kafka-go cannot be idempotent: %s%s; set idempotent: false or use client: franz-go", path, catalog.KafkaGoLacks, why)
		}
		if c.s.StageFor(v).IsTransactional() {
			c.errorf(path, "%s: kafka-go cannot carry a transactional stage: %s; use client: franz-go or stage: {transactional: false}", path, catalog.KafkaGoLacks)
		}
	}
}

// clientPath is where variant i's effective client is written.
func (c *checker) clientPath(i int) string {
	if v := c.s.Variants[i]; v.Producer != nil && v.Producer.Client != "" {
		return fmt.Sprintf("variants[%d].producer.client", i)
	}
	return "producer.client"
}

// leaders checks the embedded cluster's size: brokers is the embedded
// cluster's, and leader-move needs somewhere to move leaders to.
func (c *checker) leaders() {
	ks, ok := c.s.Broker.Settings.(*catalog.KafkaSettings)
	if !ok {
		return
	}
	mode := c.s.Broker.Mode
	if mode == "" {
		mode = catalog.ModeOf(c.s.Broker.Kind)
	}
	if c.d.Has("broker.brokers") && mode != catalog.Embedded {
		c.errorf("broker.brokers", "broker.brokers: the size of the embedded cluster; with mode: %s the cluster is the one at addresses", mode)
		return
	}
	for i, f := range c.s.Faults {
		if f.Type == catalog.LeaderMove && mode == catalog.Embedded && ks.Brokers < 2 {
			c.errorf(fmt.Sprintf("faults[%d].type", i), "faults[%d].type: leader-move needs at least 2 brokers to move leaders between; add brokers: 3 to the broker", i)
		}
	}
}

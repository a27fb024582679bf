package scenario

import (
	"fmt"
	"time"

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
	if c.d.Has("producer.transactional_id") && !kafka {
		c.errorf("producer.transactional_id", "producer.transactional_id: only for broker kind kafka, not %s", c.s.Broker.Kind)
	}
	for i, v := range c.s.Variants {
		vp := fmt.Sprintf("variants[%d]", i)
		if c.d.Has(vp+".producer.client") && !kafka {
			c.errorf(vp+".producer.client", "%s.producer.client: only for broker kind kafka, not %s", vp, c.s.Broker.Kind)
		}
		if c.d.Has(vp+".producer.transactional_id") && !kafka {
			c.errorf(vp+".producer.transactional_id", "%s.producer.transactional_id: only for broker kind kafka, not %s", vp, c.s.Broker.Kind)
		}
		p := c.s.ProducerFor(v)
		if kafka && p.TransactionalID != "" {
			c.transactional(i, p, c.s.StageFor(v) != nil)
		}
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
		if crash := c.faultOf(catalog.ProducerCrash); crash >= 0 {
			c.errorf(path, "%s: producer-crash (faults[%d]) kills a franz-go producer client and starts a new one; use client: franz-go", path, crash)
		}
	}
}

// transactional checks variant i's transactional producer: a name, an
// idempotent franz-go client.
func (c *checker) transactional(i int, p Producer, stage bool) {
	path := fmt.Sprintf("variants[%d].producer.transactional_id", i)
	if !c.d.Has(path) {
		path = "producer.transactional_id"
	}
	if !validTransactionalID(p.TransactionalID) {
		c.errorf(path, "%s: %q is not a transactional id: 1 to 200 letters, digits, '.', '_' or '-'", path, p.TransactionalID)
	}
	if !p.IsIdempotent() {
		c.errorf(path, "%s: a transactional producer is always idempotent; remove idempotent: false or the transactional_id", path)
	}
	if p.Client == catalog.KafkaGo {
		c.errorf(path, "%s: %s; use client: franz-go", path, catalog.KafkaGoLacks)
	}
	if stage {
		c.errorf(path, "%s: a transactional producer in front of a stage is not supported in this build (the stage's own transactions are: stage: {transactional: true})", path)
	}
}

// validTransactionalID: Kafka takes any string; dqbench keeps to names
// that read well in a history and a broker's logs.
func validTransactionalID(id string) bool {
	if len(id) == 0 || len(id) > 200 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// faultOf is the index of the scenario's first fault of type t, or -1.
func (c *checker) faultOf(t catalog.FaultType) int {
	for i, f := range c.s.Faults {
		if f.Type == t {
			return i
		}
	}
	return -1
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
	if c.d.Has("broker.brokers") && mode == catalog.External {
		c.errorf("broker.brokers", "broker.brokers: the size of the embedded or managed cluster; with mode: external the cluster is the one at addresses")
		return
	}
	if mode == catalog.Managed && ks.Brokers != 0 && ks.Brokers != 1 && ks.Brokers != 3 {
		c.errorf("broker.brokers", "broker.brokers: a managed Kafka cluster has 1 or 3 nodes, not %d; use brokers: 3 for replication (leader-move, leader-failover)", ks.Brokers)
	}
	if c.d.Has("broker.replica_lag") && mode != catalog.Managed {
		c.errorf("broker.replica_lag", "broker.replica_lag: a setting of the managed cluster's followers; with mode: %s the broker's are what they are (use mode: managed)", mode)
	}
	if d := ks.ReplicaLag.D(); d < 0 || d > 5*time.Second {
		c.errorf("broker.replica_lag", "broker.replica_lag: %s is not from 0s to 5s", d)
	}
	if c.d.Has("broker.transaction_version") && mode != catalog.Managed {
		c.errorf("broker.transaction_version", "broker.transaction_version: a setting of the managed cluster's storage; with mode: %s the broker's is what it is (use mode: managed)", mode)
	}
	for i, f := range c.s.Faults {
		if f.Type == catalog.LeaderMove && mode == catalog.Embedded && ks.Brokers < 2 {
			c.errorf(fmt.Sprintf("faults[%d].type", i), "faults[%d].type: leader-move needs at least 2 brokers to move leaders between; add brokers: 3 to the broker", i)
		}
	}
}

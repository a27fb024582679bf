package scenario

import (
	"fmt"
	"strings"

	"github.com/dqbench/dqbench/catalog"
)

// mqtt checks the MQTT settings: QoS levels in range, a variant's mqtt
// overrides only with broker kind mqtt, and one consumer instance (each
// consumer is the one persistent session of its variant).
func (c *checker) mqtt() {
	isMQTT := c.s.Broker.Kind == catalog.MQTT
	check := func(path string, m *catalog.MQTTSettings) {
		if m == nil {
			return
		}
		if m.Persistence != nil {
			c.managedOnly(join(path, "persistence")) // reported; the other settings are still checked
		}
		for _, q := range []struct {
			key string
			v   *int
		}{{"qos", m.QoS}, {"subscription_qos", m.SubscriptionQoS}} {
			if q.v != nil && (*q.v < 0 || *q.v > 2) {
				kp := join(path, q.key)
				c.errorf(kp, "%s: must be 0, 1 or 2, got %d", kp, *q.v)
			}
		}
		for _, l := range []struct {
			key string
			v   *int
			hi  int
		}{{"max_queued_messages", m.MaxQueuedMessages, 10_000_000}, {"max_inflight_messages", m.MaxInflightMessages, 65535}} {
			if l.v == nil {
				continue
			}
			kp := join(path, l.key)
			if c.managedOnly(kp) {
				continue
			}
			if *l.v < 0 || *l.v > l.hi {
				c.errorf(kp, "%s: %v", kp, checkRange(*l.v, 0, l.hi))
			}
		}
	}
	if isMQTT {
		m, _ := c.s.Broker.Settings.(*catalog.MQTTSettings)
		check("broker", m)
		for i, f := range c.s.Faults {
			p, ok := f.Params.(*catalog.AckLostParams)
			if !ok {
				continue
			}
			fp := fmt.Sprintf("faults[%d]", i)
			if p.Packet == "" && !c.d.Has(fp+".packet") {
				c.missing(fp+".packet", "on MQTT, ack-lost needs packet: one of "+strings.Join(p.Packet.Allowed(), ", "))
			}
			if p.Leg == "" && !c.d.Has(fp+".leg") {
				c.missing(fp+".leg", "on MQTT, ack-lost needs leg: one of "+strings.Join(p.Leg.Allowed(), ", "))
			}
		}
	}
	for i, f := range c.s.Faults {
		if _, ok := f.Params.(*catalog.AckLostParams); !ok || (c.s.Broker.Kind != catalog.RabbitMQ && c.s.Broker.Kind != catalog.NATS) {
			continue // elsewhere ack-lost itself is refused (faultsAvailable)
		}
		for _, key := range []string{"packet", "leg"} {
			if kp := fmt.Sprintf("faults[%d].%s", i, key); c.d.Has(kp) {
				c.errorf(kp, "%s: only for broker kind mqtt (which acknowledgement, on which hop); on %s, ack-lost drops the consumer's acknowledgement: remove it", kp, c.s.Broker.Kind)
			}
		}
	}
	for i, v := range c.s.Variants {
		vp := fmt.Sprintf("variants[%d]", i)
		if v.RabbitMQ != nil && c.s.Broker.Kind != catalog.RabbitMQ {
			c.errorf(vp+".rabbitmq", "%s.rabbitmq: only for broker kind rabbitmq, not %s; remove it", vp, c.s.Broker.Kind)
		}
		if v.Kafka != nil && c.s.Broker.Kind != catalog.Kafka {
			c.errorf(vp+".kafka", "%s.kafka: only for broker kind kafka, not %s; remove it", vp, c.s.Broker.Kind)
		} else if v.Kafka != nil {
			c.params(vp+".kafka", v.Kafka, "kafka")
		}
		if v.NATS != nil && c.s.Broker.Kind != catalog.NATS {
			c.errorf(vp+".nats", "%s.nats: only for broker kind nats, not %s; remove it", vp, c.s.Broker.Kind)
		}
		if v.MQTT != nil && !isMQTT {
			c.errorf(vp+".mqtt", "%s.mqtt: only for broker kind mqtt, not %s; remove it", vp, c.s.Broker.Kind)
			continue
		}
		check(vp+".mqtt", v.MQTT)
		if isMQTT {
			if n := c.s.ConsumerFor(v).Instances; n > 1 {
				path := "consumer.instances"
				if v.Consumer != nil && v.Consumer.Instances != 0 {
					path = vp + ".consumer.instances"
				}
				c.errorf(path, "%s: broker kind mqtt runs one consumer instance per variant (its persistent session), got %d; use instances: 1", path, n)
			}
		}
	}
}

// managedOnly reports a managed Mosquitto's setting at kp in another mode,
// and whether it did.
func (c *checker) managedOnly(kp string) bool {
	mode := c.s.Broker.Mode
	if mode == "" {
		mode = catalog.ModeOf(catalog.MQTT)
	}
	if mode == catalog.Managed {
		return false
	}
	c.errorf(kp, "%s: only with mode: managed (dqbench configures only the Mosquitto it starts); add mode: managed to broker or remove it", kp)
	return true
}

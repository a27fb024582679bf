package scenario

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/dqbench/dqbench/catalog"
)

// mqtt checks the MQTT settings: QoS levels in range, a variant's mqtt
// overrides only with broker kind mqtt, and more than one consumer
// instance (a shared subscription) only where dqbench can run one.
func (c *checker) mqtt() {
	isMQTT := c.s.Broker.Kind == catalog.MQTT
	check := func(path string, m *catalog.MQTTSettings) {
		if m == nil {
			return
		}
		if m.Persistence != nil {
			c.managedOnly(join(path, "persistence")) // reported; the other settings are still checked
		}
		if m.Retains() && c.mqttMode() != catalog.Embedded {
			kp := join(path, "retain")
			c.errorf(kp, "%s: only with mode: embedded, not %s (retained messages outlive the run on a broker dqbench does not start, and the managed Mosquitto's backlog is counted on the clients, which a retained copy would fool); use mode: embedded or remove it", kp, c.mqttMode())
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
			if p, ok := f.Params.(*catalog.SubscriberOfflineParams); ok && (p.AtLeast < 0 || p.AtLeast.D() > maxOfflineAtLeast) {
				kp := fmt.Sprintf("faults[%d].at_least", i)
				c.errorf(kp, "%s: must be from 0 to %s (a consumer refused longer stops retrying), got %s", kp, maxOfflineAtLeast, p.AtLeast.D())
			}
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
	reported := map[string]bool{} // shared-subscription problems, once per path
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
			c.mqttShared(vp, v, reported)
			c.mqttExpiry(vp, v, reported)
		}
	}
}

// mqttShared checks a variant whose consumer instances share one
// subscription ($share/GROUP/dqbench/NAME/+, one session each): only on
// the embedded broker, and without subscriber-offline, which takes the
// variant's one session offline.
func (c *checker) mqttShared(vp string, v Variant, reported map[string]bool) {
	n := c.s.ConsumerFor(v).Instances
	if n <= 1 || v.Process != nil {
		return // process.instances is checked with the process
	}
	path := "consumer.instances"
	if v.Consumer != nil && v.Consumer.Instances != 0 {
		path = vp + ".consumer.instances"
	}
	if mode := c.mqttMode(); mode != catalog.Embedded {
		if reported[path] {
			return
		}
		reported[path] = true
		c.errorf(path, "%s: %d instances share one MQTT subscription ($share) only with mode: embedded, not %s (dqbench tracks each shared session's packets in the embedded broker); use mode: embedded or instances: 1", path, n, c.mqttMode())
		return
	}
	for i, f := range c.s.Faults {
		if fp := fmt.Sprintf("faults[%d].type", i); f.Type == catalog.SubscriberOffline && !reported[fp] {
			reported[fp] = true
			c.errorf(fp, "%s: subscriber-offline takes the variant's one consumer session offline, and %s is %d (a shared subscription, one session per instance); with instances above 1 use the other faults that act on embedded MQTT (consumer-crash, consumer-zombie, ack-lost, disconnect, fail-once, producer-app-crash), or instances: 1", fp, path, n)
		}
	}
}

// maxOfflineAtLeast bounds subscriber-offline's at_least: a consumer
// retries a refused connect for 10 s.
const maxOfflineAtLeast = 8 * time.Second

// maxSessionExpiry bounds session_expiry (mochi-mqtt counts it in whole
// seconds).
const maxSessionExpiry = time.Hour

// mqttExpiry checks a variant's session_expiry: whole seconds, on the
// embedded broker, with the MQTT 5 client and persistent sessions.
func (c *checker) mqttExpiry(vp string, v Variant, reported map[string]bool) {
	eff := catalog.MQTTSettings{}
	if m, _ := c.s.Broker.Settings.(*catalog.MQTTSettings); m != nil {
		eff = *m
	}
	eff = eff.With(v.MQTT)
	if eff.SessionExpiry == nil {
		return
	}
	kp := "broker.session_expiry"
	if v.MQTT != nil && v.MQTT.SessionExpiry != nil {
		kp = vp + ".mqtt.session_expiry"
	}
	var why string
	switch d := eff.SessionExpiry.D(); {
	case d < time.Second || d > maxSessionExpiry || d%time.Second != 0:
		why = fmt.Sprintf("must be whole seconds from 1s to %s (the broker counts it in seconds), got %s", maxSessionExpiry, d)
	case c.mqttMode() != catalog.Embedded:
		why = fmt.Sprintf("only with mode: embedded, not %s", c.mqttMode())
	case eff.Client != catalog.PahoGolang:
		why = fmt.Sprintf("a session expiry is MQTT 5's (a CONNECT property), and %s's client is %s (MQTT 3.1.1); add client: paho.golang", vp, cmp.Or(eff.Client, catalog.Paho))
	case eff.CleanSession != nil && *eff.CleanSession:
		why = fmt.Sprintf("%s has clean_session: true, whose session ends with the connection (expiry 0); use clean_session: false", vp)
	default:
		return
	}
	if !reported[kp+why] {
		reported[kp+why] = true
		c.errorf(kp, "%s: %s", kp, why)
	}
}

// mqttMode is the MQTT broker's mode, its default where unset.
func (c *checker) mqttMode() catalog.Mode {
	if c.s.Broker.Mode == "" {
		return catalog.ModeOf(catalog.MQTT)
	}
	return c.s.Broker.Mode
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

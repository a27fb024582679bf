package mqtt

import (
	"context"
	"sync"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/netfault"
	nfmqtt "github.com/dqbench/dqbench/netfault/mqtt"
)

// proxy puts an in-process toxiproxy proxy in front of the external broker
// for each leg's client, with the MQTT toxic on both directions: it learns
// the packet ids of each leg's PUBLISH packets and loses the acks the
// variant's ack-lost faults choose.
func (d *dest) proxy(layer *netfault.Layer) error {
	d.rules = map[catalog.Leg][]*nfmqtt.Rule{}
	intent := func(topic string) (int, bool) {
		in, err := d.intentOf(topic)
		return in, err == nil
	}
	for _, leg := range catalog.Legs {
		p, err := layer.Proxy(d.name+"-"+string(leg), hostPort(d.url))
		if err != nil {
			return err
		}
		d.proxies = append(d.proxies, p)
		table := nfmqtt.NewTable()
		rules := func() []*nfmqtt.Rule { return d.legRules(leg) }
		// The publisher sends PUBLISH and PUBREL upstream and gets
		// PUBACK, PUBREC, PUBCOMP downstream; the consumer the other way.
		for _, s := range []netfault.Stream{netfault.Upstream, netfault.Downstream} {
			cfg := nfmqtt.Config{Intent: intent, Table: table, Rules: rules}
			if leg == catalog.SubscriberLeg && s == netfault.Downstream {
				// The broker sends PUBREL once it has processed the
				// consumer's PUBREC: that copy is acked, even when the
				// PUBREL or the connection is lost before the consumer
				// hears of it (the broker then resends only PUBREL).
				cfg.Sent = func(t byte, id uint16) {
					if t == nfmqtt.Pubrel {
						d.ackedPID(id)
					}
				}
			}
			if err := p.AddFilter("dqbench-mqtt-"+string(s), s, nfmqtt.NewFilter(cfg)); err != nil {
				return err
			}
		}
		if leg == catalog.PublisherLeg {
			d.pubURL = "tcp://" + p.Addr
		} else {
			d.subURL = "tcp://" + p.Addr
		}
	}
	return nil
}

var rulesMu sync.Mutex

func (d *dest) legRules(leg catalog.Leg) []*nfmqtt.Rule {
	rulesMu.Lock()
	defer rulesMu.Unlock()
	return d.rules[leg]
}

// externalDest is a destination on an external broker, reached through
// toxiproxy, which can lose acknowledgements there.
type externalDest struct{ *dest }

var (
	_ brokers.Destination = externalDest{}
	_ brokers.Powered     = externalDest{}
)

// Apply injects the external broker's one fault power: lost packets.
func (d externalDest) Apply(_ context.Context, p brokers.Power) error {
	if p, ok := p.(brokers.LosePackets); ok {
		return armed(d.losePackets(p.Packet, p.Leg, p.Fires, p.Lost))
	}
	return brokers.NoPower(p)
}

// losePackets loses packet on leg for the intents fires chooses, in the
// MQTT toxic; it acts only where the leg's QoS has that packet.
func (d externalDest) losePackets(packet catalog.MQTTPacket, leg catalog.Leg, fires func(intent, attempt int) bool, lost func(intent int)) bool {
	if int(d.legQoS(leg)) != packet.QoS() {
		return false
	}
	r := &nfmqtt.Rule{Type: mqttType[packet], Fires: fires, Lost: func(intent int) {
		if packet == catalog.PUBACK && leg == catalog.PublisherLeg {
			// The publisher resends after reconnecting, and a QoS 1
			// resend is a new message to the broker: one more copy
			// for the consumer to ack.
			d.confirmed.Add(1)
		}
		lost(intent)
	}}
	rulesMu.Lock()
	defer rulesMu.Unlock()
	d.rules[leg] = append(d.rules[leg], r)
	return true
}

var mqttType = map[catalog.MQTTPacket]byte{
	catalog.PUBACK: nfmqtt.Puback, catalog.PUBREC: nfmqtt.Pubrec,
	catalog.PUBREL: nfmqtt.Pubrel, catalog.PUBCOMP: nfmqtt.Pubcomp,
}

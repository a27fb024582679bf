package mqtt

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/netfault"
	nfmqtt "github.com/dqbench/dqbench/netfault/mqtt"
)

// A process variant's consumer (a program outside dqbench) connects as the
// variant's consumer session (client id dqb-NAME-s, persistent, made when
// the destination opened) through a relay in this process
// (netfault.Relay) whose MQTT watcher (netfault/mqtt.Watcher) sees each
// PUBLISH before it reaches the consumer and each PUBACK or PUBREC before
// it reaches the broker: where consumer-kill kills (at: delivery, at:
// ack). The relay's upstream is what dqbench's own consumer would dial, so
// ack-lost on the consumer's PUBACK or PUBREC acts in the relay too (the
// rules armed in the embedded broker's hook or the external broker's MQTT
// toxic move there when the relay starts): the ack is dropped and the
// connection cut before the relay lets the next PUBLISH through, as for a
// kill; dropped further on, the consumer could have applied the next
// message meanwhile, by timing.

var (
	_ brokers.ConsumerWatcher = embeddedDest{}
	_ brokers.ConsumerWatcher = externalDest{}
	_ brokers.ConsumerWatcher = managedDest{}
)

// outside is a destination's relay for a consumer process.
type outside struct {
	relay *netfault.Relay

	mu    sync.Mutex
	watch brokers.ConsumerWatch
	pos   map[uint16]string // packet id → the copy it carries
	lose  []*ackRule        // ack-lost on the consumer's acks
	// passed is closed once the embedded broker has processed the last
	// ack the relay let through (nil elsewhere, or once waited for).
	passed chan struct{}
}

// passWait bounds the wait for the embedded broker to process an ack the
// relay let through: longer only if the connection that carried it died.
const passWait = time.Second

// ackRule is one ack-lost fault on the consumer's PUBACK (QoS 1) or
// PUBREC (QoS 2).
type ackRule struct {
	qos   byte
	fires func(intent, attempt int) bool
	lost  func(intent int)
	seen  map[int]int
}

// takeAckRules moves the ack-lost rules on the consumer's acks out of the
// embedded broker's hook or the external broker's toxic, into the relay.
func (d *dest) takeAckRules() []*ackRule {
	var out []*ackRule
	if st := d.state; st != nil {
		st.mu.Lock()
		keep := st.rules[:0]
		for _, r := range st.rules {
			if r.leg == catalog.SubscriberLeg && !r.disconnect && (r.packet == nfmqtt.Puback || r.packet == nfmqtt.Pubrec) {
				out = append(out, &ackRule{qos: qosOf(r.packet), fires: r.fires, lost: r.fired, seen: map[int]int{}})
				continue
			}
			keep = append(keep, r)
		}
		st.rules = keep
		st.mu.Unlock()
	}
	rulesMu.Lock()
	defer rulesMu.Unlock()
	var keep []*nfmqtt.Rule
	for _, r := range d.rules[catalog.SubscriberLeg] {
		if r.Type == nfmqtt.Puback || r.Type == nfmqtt.Pubrec {
			out = append(out, &ackRule{qos: qosOf(r.Type), fires: r.Fires, lost: r.Lost, seen: map[int]int{}})
			continue
		}
		keep = append(keep, r)
	}
	if d.rules != nil {
		d.rules[catalog.SubscriberLeg] = keep
	}
	return out
}

// qosOf is the QoS whose acknowledgement is packet type t.
func qosOf(t byte) byte {
	if t == nfmqtt.Pubrec {
		return 2
	}
	return 1
}

// Outside starts the relay and says where the consumer process connects,
// with which client id (Group) and topic filter (Topic).
func (d *dest) Outside() brokers.Outside {
	where := brokers.Outside{Topic: d.topic + "+", Group: d.subID,
		Env: []string{"DQBENCH_QOS=" + strconv.Itoa(int(d.legQoS(catalog.SubscriberLeg)))}}
	if d.out == nil {
		upstream := hostPort(d.urlFor(d.subID))
		o := &outside{pos: map[uint16]string{}, lose: d.takeAckRules()}
		w := &nfmqtt.Watcher{
			Intent: func(topic string) (int, bool) {
				in, err := d.intentOf(topic)
				return in, err == nil
			},
			Delivered: func(remote net.Addr, x nfmqtt.Delivery) error { return o.deliver(d, remote, x) },
			Acked:     func(remote net.Addr, x nfmqtt.Delivery) error { return o.ack(d, remote, x) },
		}
		relay, err := netfault.NewRelay(upstream, func(remote net.Addr) (up, down netfault.Filter, closed func()) {
			if cw := o.w(); cw.Connected != nil {
				cw.Connected(remote)
			}
			return w.Filters(remote)
		})
		if err != nil {
			return where
		}
		o.relay = relay
		d.out = o
	}
	where.Addresses = []string{d.out.relay.Addr}
	where.URL = "tcp://" + d.out.relay.Addr
	return where
}

// WatchConsumers shows w the deliveries to, and acks from, every
// connection through the relay.
func (d *dest) WatchConsumers(w brokers.ConsumerWatch) {
	if d.out == nil {
		d.Outside()
	}
	if d.out == nil {
		return
	}
	d.out.mu.Lock()
	d.out.watch = w
	d.out.mu.Unlock()
}

// RemoveMembers does nothing: the next process takes the session over.
func (d *dest) RemoveMembers(context.Context, []string) error { return nil }

func (o *outside) w() brokers.ConsumerWatch {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.watch
}

// deliver shows a PUBLISH to the watch, which may kill its consumer and
// withhold it.
//
// On the embedded broker it first waits until the broker has processed the
// last ack the relay let through: a kill here then meets the broker with
// that ack applied, as a crash of dqbench's own consumer does (SyncAcks).
// Without it, whether the broker resent the previous message after the
// kill depended on which came first, its reading of that ack or the cut.
func (o *outside) deliver(d *dest, remote net.Addr, x nfmqtt.Delivery) error {
	o.mu.Lock()
	passed := o.passed
	o.passed = nil
	o.mu.Unlock()
	if passed != nil {
		select {
		case <-passed:
		case <-time.After(passWait):
		}
	}
	pos, redelivered := d.position(d.subs[0], x.Intent, x.QoS, x.Dup, x.PacketID) // one session: process.instances is 1
	if w := o.w(); w.Fetched != nil {
		if err := w.Fetched(remote, []brokers.Delivery{{Intent: x.Intent, Position: pos, Redelivered: redelivered, QoS: strconv.Itoa(int(x.QoS))}}); err != nil {
			return err
		}
	}
	if x.QoS > 0 {
		o.mu.Lock()
		o.pos[x.PacketID] = pos
		o.mu.Unlock()
	}
	return nil
}

// ack shows a PUBACK or PUBREC to the watch, which may kill its consumer
// and withhold it; else the copy counts as acked for the backlog.
func (o *outside) ack(d *dest, remote net.Addr, x nfmqtt.Delivery) error {
	o.mu.Lock()
	pos := o.pos[x.PacketID]
	o.mu.Unlock()
	if w := o.w(); w.Committing != nil {
		if err := w.Committing(remote, []brokers.Delivery{{Intent: x.Intent, Position: pos}}); err != nil {
			return err
		}
	}
	for _, r := range o.lose {
		if r.qos != x.QoS {
			continue
		}
		o.mu.Lock()
		r.seen[x.Intent]++
		attempt := r.seen[x.Intent]
		o.mu.Unlock()
		if r.fires(x.Intent, attempt) {
			r.lost(x.Intent)
			return errors.New("ack lost")
		}
	}
	if pos != "" {
		d.ackedCopy(pos)
	}
	if d.state != nil {
		ch := d.state.awaitAck(d.subs[0], x.PacketID) // before the relay writes it on
		o.mu.Lock()
		o.passed = ch
		o.mu.Unlock()
	}
	return nil
}

// closeOutside stops the relay, closing the consumer's connections.
func (d *dest) closeOutside() error {
	if d.out == nil {
		return nil
	}
	err := d.out.relay.Close()
	d.out = nil
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

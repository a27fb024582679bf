package scenario

import (
	"fmt"

	"github.com/dqbench/dqbench/catalog"
)

// nats checks that a NATS scenario whose consumers can die with unacked
// messages lets the server deliver them again before the drain gives up:
// JetStream does not notice a dead consumer, it delivers an unacked
// message again only once ack_wait has passed.
func (c *checker) nats() {
	settings, ok := c.s.Broker.Settings.(*catalog.NATSSettings)
	if !ok || c.s.Broker.Kind != catalog.NATS || !c.explicitAcks() {
		return
	}
	ackWait := orDefault(settings.AckWait, catalog.DefaultNATSAckWait)
	drain := orDefault(c.s.Drain, DefaultDrain)
	if ackWait < drain {
		return
	}
	for i, f := range c.s.Faults {
		if f.Type != catalog.ConsumerCrash && f.Type != catalog.ConsumerZombie && f.Type != catalog.SlowProcessing && f.Type != catalog.LeaderFailover {
			continue
		}
		path, what := fmt.Sprintf("faults[%d].type", i), fmt.Sprintf("faults[%d]: %s", i, f.Type)
		if c.d.Has("broker.ack_wait") {
			path, what = "broker.ack_wait", "broker.ack_wait: "+ackWait.String()
		}
		c.errorf(path, "%s: a consumer killed with unacked messages gets them back from NATS only after ack_wait (%s), and the drain gives up after %s without progress; set broker ack_wait below drain (e.g. ack_wait: 2s) or raise drain", what, ackWait, drain)
		return
	}
}

// explicitAcks says whether some variant's consumer acks each message
// (any ack but auto, which is the AckNone policy on NATS).
func (c *checker) explicitAcks() bool {
	if len(c.s.Variants) == 0 {
		return c.s.Consumer.Ack != catalog.AckAuto
	}
	for _, v := range c.s.Variants {
		if c.s.ConsumerFor(v).Ack != catalog.AckAuto {
			return true
		}
	}
	return false
}

// natsCluster checks what needs a JetStream cluster: replicas above 1 on
// the embedded single server, and leader-failover's how: step-down, which
// only a NATS stream has.
func (c *checker) natsCluster() {
	for i, f := range c.s.Faults {
		p, ok := f.Params.(*catalog.LeaderFailoverParams)
		kp := fmt.Sprintf("faults[%d].how", i)
		if ok && p.How == catalog.StepDownLeader && c.s.Broker.Kind != catalog.NATS && c.d.Has(kp) {
			c.errorf(kp, "%s: step-down is a NATS stream's ($JS.API.STREAM.LEADER.STEPDOWN); on %s, leader-failover kills the leader's node: remove it, or write how: kill", kp, c.s.Broker.Kind)
		}
	}
	settings, ok := c.s.Broker.Settings.(*catalog.NATSSettings)
	if !ok || c.s.Broker.Kind != catalog.NATS {
		return
	}
	if why := settings.ReplicasFit(modeOf(c.s)); why != "" {
		c.errorf("broker.replicas", "broker.replicas: %s", why)
	}
}

// natsDuplicateWindows checks the broker's duplicate_window and each
// variant's: JetStream refuses a stream whose window is under
// catalog.MinNATSDuplicateWindow, which the run would find out only when
// it creates the stream; and a variant's 0s would be no override at all,
// silently the broker's window.
func (c *checker) natsDuplicateWindows() {
	if c.s.Broker.Kind != catalog.NATS {
		return
	}
	check := func(path string, d catalog.Duration, hint string) {
		if c.d.Has(path) && d < catalog.MinNATSDuplicateWindow {
			c.errorf(path, "%s: must be at least %s (JetStream refuses a shorter duplicate window), got %s%s", path, catalog.MinNATSDuplicateWindow, d, hint)
		}
	}
	if settings, ok := c.s.Broker.Settings.(*catalog.NATSSettings); ok && settings.DuplicateWindow > 0 {
		check("broker.duplicate_window", settings.DuplicateWindow, "") // 0s or less: not positive (params)
	}
	for i, v := range c.s.Variants {
		if v.NATS != nil {
			check(fmt.Sprintf("variants[%d].nats.duplicate_window", i), v.NATS.DuplicateWindow, "; leave the key out for the broker's")
		}
	}
}

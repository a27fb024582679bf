package catalog

import (
	"errors"
	"fmt"
	"time"
)

// NATS is the broker kind of NATS JetStream (nats-server in-process,
// embedded, or a running one, external).
const NATS BrokerKind = "nats"

// NATSStorage is where a JetStream stream keeps its messages.
type NATSStorage string

// The stream storage types.
const (
	FileStorage   NATSStorage = "file"
	MemoryStorage NATSStorage = "memory"
)

// Allowed lists the valid values, for strict decoding and the schema.
func (NATSStorage) Allowed() []string { return []string{string(FileStorage), string(MemoryStorage)} }

// NATSMsgID is what the producer writes into a publish's Nats-Msg-Id
// header, the key of the stream's broker-side duplicate detection.
type NATSMsgID string

// The Nats-Msg-Id sources.
const (
	// NoMsgID: no header; the stream stores every publish it receives.
	NoMsgID NATSMsgID = "none"
	// BusinessMsgID: the intent's business id (the message key), the
	// same on every send, so the stream drops a retry within its
	// duplicate_window.
	BusinessMsgID NATSMsgID = "business"
	// PerSendMsgID: a new id on every application send (the intent and
	// the attempt), so a retry is never a duplicate to the stream.
	PerSendMsgID NATSMsgID = "per-send-uuid"
)

// NATSMsgIDs lists the Nats-Msg-Id sources.
var NATSMsgIDs = []NATSMsgID{NoMsgID, BusinessMsgID, PerSendMsgID}

// Allowed lists the valid values, for strict decoding and the schema.
func (NATSMsgID) Allowed() []string { return Strings(NATSMsgIDs) }

// NATSAck is how an explicit-ack consumer sends each ack.
type NATSAck string

// The NATS ack styles.
const (
	// SyncAck is the double ack (AckSync): the ack carries a reply
	// subject and the consumer waits for the server to confirm it, so a
	// lost ack is noticed (the wait times out) and the consumer acks
	// again within ack_wait.
	SyncAck NATSAck = "sync"
	// PlainAck is the plain ack (Ack): fire and forget; a lost ack goes
	// unnoticed by the consumer, and the server delivers the message
	// again once ack_wait has passed.
	PlainAck NATSAck = "plain"
)

// NATSAcks lists the NATS ack styles.
var NATSAcks = []NATSAck{SyncAck, PlainAck}

// Allowed lists the valid values, for strict decoding and the schema.
func (NATSAck) Allowed() []string { return Strings(NATSAcks) }

// NATSSettings are the broker settings of kind nats, written beside kind
// in the broker mapping: the stream and the durable pull consumer each
// variant gets, and what goes into Nats-Msg-Id.
type NATSSettings struct {
	Storage         NATSStorage `yaml:"storage" json:"storage,omitempty" jsonschema:"description=Where each variant's stream keeps its messages: file (default) or memory."`
	Replicas        int         `yaml:"replicas" json:"replicas,omitempty" jsonschema:"minimum=1,maximum=5,description=Replicas of each variant's stream (default 1; more needs a JetStream cluster)."`
	DuplicateWindow Duration    `yaml:"duplicate_window" json:"duplicate_window,omitempty" jsonschema:"description=How long the stream remembers a Nats-Msg-Id to drop a publish carrying it again (default 2m\\, JetStream's; at least 100ms): a broker-side dedup TTL."`
	AckWait         Duration    `yaml:"ack_wait" json:"ack_wait,omitempty" jsonschema:"description=How long the consumer may hold a delivery without acking it before the server delivers it again (default 30s\\, JetStream's). A crashed consumer's unacked messages come back only after it: keep it below the scenario's drain."`
	MaxDeliver      int         `yaml:"max_deliver" json:"max_deliver,omitempty" jsonschema:"minimum=-1,maximum=1000,description=How many times the server delivers a message before it gives it up (default -1: no limit)."`
	MaxAckPending   int         `yaml:"max_ack_pending" json:"max_ack_pending,omitempty" jsonschema:"minimum=-1,maximum=1000000,description=Most deliveries the consumer may hold unacked at once (default: the server's\\, 1000; -1: no limit)."`
	MsgID           NATSMsgID   `yaml:"msg_id" json:"msg_id,omitempty" jsonschema:"description=What the producer writes into each publish's Nats-Msg-Id header\\, the stream's dedup key: business (the intent's id\\, default: a retry within duplicate_window is dropped by the stream)\\, per-send-uuid (new on every application send: a retry is stored again) or none (no header)."`
	Ack             NATSAck     `yaml:"ack" json:"ack,omitempty" jsonschema:"description=How a consumer with explicit acks (consumer ack: after-process or before-process) sends each ack: sync (default: the double ack\\, AckSync; the consumer waits for the server to confirm it and acks again when no confirmation comes in time) or plain (Ack: fire and forget; a lost ack goes unnoticed until the server redelivers after ack_wait)."`
	// TLS and login on an external server (tls:, auth:).
	Security `yaml:",inline"`
}

// NATSOverrides are the NATS settings one variant may change (nats: in a
// variant), so one run can compare what goes into Nats-Msg-Id and how
// long the stream remembers it.
type NATSOverrides struct {
	DuplicateWindow Duration  `yaml:"duplicate_window" json:"duplicate_window,omitempty" jsonschema:"description=How long this variant's stream remembers a Nats-Msg-Id (overrides the broker's duplicate_window; at least 100ms)."`
	MsgID           NATSMsgID `yaml:"msg_id" json:"msg_id,omitempty" jsonschema:"description=What this variant's producer writes into Nats-Msg-Id: business\\, per-send-uuid or none (overrides the broker's msg_id)."`
	Ack             NATSAck   `yaml:"ack" json:"ack,omitempty" jsonschema:"description=How this variant's consumer sends each ack: sync (double ack) or plain (overrides the broker's ack)."`
}

// ForVariant returns a copy of s with the variant's nats overrides.
func (s NATSSettings) ForVariant(v VariantKeys) any {
	if o := v.Overrides.NATS; o != nil {
		setIfNonZero(&s.DuplicateWindow, o.DuplicateWindow)
		setIfNonZero(&s.MsgID, o.MsgID)
		setIfNonZero(&s.Ack, o.Ack)
	}
	return &s
}

// The JetStream defaults dqbench uses where a scenario says nothing.
const (
	DefaultNATSDuplicateWindow = Duration(2 * time.Minute)
	DefaultNATSAckWait         = Duration(30 * time.Second)
)

// MinNATSDuplicateWindow is the shortest duplicate_window JetStream takes:
// a stream with a shorter one is refused when the run creates it.
const MinNATSDuplicateWindow = Duration(100 * time.Millisecond)

// ManagedNATSNodes is the size of the JetStream cluster dqbench manages
// (mode: managed), and so the most replicas a stream can have there.
const ManagedNATSNodes = 3

// ReplicasFit says why a stream of s.Replicas replicas cannot be created
// on a NATS in mode ("" when it can): the embedded server is one node, the
// managed cluster ManagedNATSNodes.
func (s *NATSSettings) ReplicasFit(mode Mode) string {
	switch {
	case s.Replicas > 1 && mode == Embedded:
		return fmt.Sprintf("%d replicas need a JetStream cluster, and the embedded server is one node; use mode: managed (a local %d-node cluster from nats-server) or mode: external with a cluster's addresses", s.Replicas, ManagedNATSNodes)
	case s.Replicas > ManagedNATSNodes && mode == Managed:
		return fmt.Sprintf("%d replicas need as many nodes, and the managed JetStream cluster has %d; use replicas: %d (or 1), or mode: external with a cluster of %d nodes or more", s.Replicas, ManagedNATSNodes, ManagedNATSNodes, s.Replicas)
	}
	return ""
}

// PublishDedupWindow is the stream's duplicate_window, when the producer
// writes the intent's business id into Nats-Msg-Id: a retry within it is
// dropped. Without a header, or with a new id per send, no retry is.
func (s *NATSSettings) PublishDedupWindow() (string, Duration) {
	if s.MsgID != BusinessMsgID {
		return "duplicate_window", 0
	}
	return "duplicate_window", s.DuplicateWindow
}

// Defaults fills in what the scenario leaves out.
func (s *NATSSettings) Defaults() {
	setIfZero(&s.Storage, FileStorage)
	setIfZero(&s.Replicas, 1)
	setIfZero(&s.DuplicateWindow, DefaultNATSDuplicateWindow)
	setIfZero(&s.AckWait, DefaultNATSAckWait)
	setIfZero(&s.MaxDeliver, -1)
	setIfZero(&s.MsgID, BusinessMsgID)
	setIfZero(&s.Ack, SyncAck)
}

// LimitsDeliveries reports whether the server gives a message up after
// max_deliver deliveries (DeliveryLimiter): the runner then reads what it
// gives up (the MAX_DELIVERIES advisories) as dead letters.
func (s NATSSettings) LimitsDeliveries() bool { return s.MaxDeliver > 0 }

func setIfZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// NATSURL checks a nats:// URL (tls:// for TLS) with a host and a port
// (NATS).
func NATSURL(a string) error {
	const want = "not a NATS URL (nats://HOST:PORT, or tls://HOST:PORT for TLS)"
	u, err := ParseURL(a)
	if errors.Is(err, errUserinfo) {
		return fmt.Errorf("%s: %w", want, err)
	}
	if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") {
		return errors.New(want)
	}
	if err := HostAndPort(u, true); err != nil {
		return fmt.Errorf("%s: %w", want, err)
	}
	return nil
}

package catalog

// MQTT is the broker kind of MQTT 3.1.1 brokers (mochi-mqtt embedded,
// Mosquitto external).
const MQTT BrokerKind = "mqtt"

// MQTTClient names the client library a variant publishes and subscribes
// with.
type MQTTClient string

// The MQTT client libraries.
const (
	// Paho is github.com/eclipse/paho.mqtt.golang (MQTT 3.1.1).
	Paho MQTTClient = "paho"
	// PahoGolang is github.com/eclipse/paho.golang (MQTT 5).
	PahoGolang MQTTClient = "paho.golang"
)

// MQTTClients lists the MQTT client libraries.
var MQTTClients = []MQTTClient{Paho, PahoGolang}

// Allowed lists the valid values, for strict decoding and the schema.
func (MQTTClient) Allowed() []string { return Strings(MQTTClients) }

// MQTTSettings are the broker settings of kind mqtt, written beside kind
// in the broker mapping; a variant may override each one in its own mqtt
// mapping. Unset pointers take the defaults.
type MQTTSettings struct {
	QoS             *int       `yaml:"qos" json:"qos,omitempty" jsonschema:"minimum=0,maximum=2,description=QoS of every publish: 0 at most once\\, 1 at least once\\, 2 exactly once per leg (default 1)."`
	SubscriptionQoS *int       `yaml:"subscription_qos" json:"subscription_qos,omitempty" jsonschema:"minimum=0,maximum=2,description=QoS the consumer subscribes with; the broker delivers at min(qos\\, subscription_qos) (default 2)."`
	CleanSession    *bool      `yaml:"clean_session" json:"clean_session,omitempty" jsonschema:"description=Start every connection with a clean session: the broker and the client forget unacknowledged messages and the subscription when a client disconnects (default false: persistent sessions)."`
	Retain          *bool      `yaml:"retain" json:"retain,omitempty" jsonschema:"description=Mode embedded: publish every message with the RETAIN flag: the broker keeps the last message of each topic (each intent has its own) and sends it to every new subscription\\, so a consumer that subscribes again (a clean session after a reconnect) gets every retained message again (default false)."`
	SessionExpiry   *Duration  `yaml:"session_expiry" json:"session_expiry,omitempty" jsonschema:"description=Mode embedded\\, client paho.golang (MQTT 5)\\, persistent sessions: the consumer sessions' session expiry interval in whole seconds: the broker ends a session whose client has been offline longer\\, and what it held for it is gone (default: the longest\\, 2^32-1 seconds)."`
	Client          MQTTClient `yaml:"client" json:"client,omitempty" jsonschema:"description=Client library: paho (eclipse/paho.mqtt.golang\\, MQTT 3.1.1\\, the default) or paho.golang (eclipse/paho.golang\\, MQTT 5)."`
	// The managed Mosquitto's limits (mode managed only).
	MaxQueuedMessages   *int  `yaml:"max_queued_messages" json:"max_queued_messages,omitempty" jsonschema:"minimum=0,maximum=10000000,description=Mode managed: Mosquitto's max_queued_messages\\, the QoS 1 and 2 messages it queues per client beyond those in flight; past it it drops them silently (default 1000\\, Mosquitto's; 0: no limit)."`
	Persistence         *bool `yaml:"persistence" json:"persistence,omitempty" jsonschema:"description=Mode managed: Mosquitto's persistence\\, written to disk when it stops and read back when it starts again (default true)."`
	MaxInflightMessages *int  `yaml:"max_inflight_messages" json:"max_inflight_messages,omitempty" jsonschema:"minimum=0,maximum=65535,description=Mode managed: Mosquitto's max_inflight_messages\\, the QoS 1 and 2 messages in flight to a client at once (default 20\\, Mosquitto's; 0: no limit)."`
	// TLS and login on an external broker (tls:, auth:; the broker's
	// only, not a variant's mqtt).
	Security `yaml:",inline"`
}

// Retains says whether every publish carries the RETAIN flag (unset:
// no).
func (s MQTTSettings) Retains() bool { return s.Retain != nil && *s.Retain }

// Limits are the managed Mosquitto's max_queued_messages and
// max_inflight_messages, Mosquitto's defaults where unset.
func (s MQTTSettings) Limits() (queued, inflight int) {
	queued, inflight = 1000, 20
	if s.MaxQueuedMessages != nil {
		queued = *s.MaxQueuedMessages
	}
	if s.MaxInflightMessages != nil {
		inflight = *s.MaxInflightMessages
	}
	return queued, inflight
}

// Defaults fills in what the scenario leaves out.
func (s *MQTTSettings) Defaults() {
	if s.QoS == nil {
		s.QoS = new(1)
	}
	if s.SubscriptionQoS == nil {
		s.SubscriptionQoS = new(2)
	}
	if s.CleanSession == nil {
		s.CleanSession = new(false)
	}
	if s.Client == "" {
		s.Client = Paho
	}
}

// ForVariant returns a copy of s with the variant's mqtt overrides.
func (s MQTTSettings) ForVariant(v VariantKeys) any {
	merged := s.With(v.Overrides.MQTT)
	return &merged
}

// With returns s overridden by what o sets (a variant's mqtt mapping).
func (s MQTTSettings) With(o *MQTTSettings) MQTTSettings {
	if o == nil {
		return s
	}
	if o.QoS != nil {
		s.QoS = o.QoS
	}
	if o.SubscriptionQoS != nil {
		s.SubscriptionQoS = o.SubscriptionQoS
	}
	if o.CleanSession != nil {
		s.CleanSession = o.CleanSession
	}
	if o.Retain != nil {
		s.Retain = o.Retain
	}
	if o.SessionExpiry != nil {
		s.SessionExpiry = o.SessionExpiry
	}
	if o.Client != "" {
		s.Client = o.Client
	}
	if o.MaxQueuedMessages != nil {
		s.MaxQueuedMessages = o.MaxQueuedMessages
	}
	if o.MaxInflightMessages != nil {
		s.MaxInflightMessages = o.MaxInflightMessages
	}
	if o.Persistence != nil {
		s.Persistence = o.Persistence
	}
	return s
}

// MQTTPacket names an MQTT acknowledgement packet.
type MQTTPacket string

// The acknowledgement packets of QoS 1 (PUBACK) and QoS 2 (PUBREC,
// PUBREL, PUBCOMP).
const (
	PUBACK  MQTTPacket = "PUBACK"
	PUBREC  MQTTPacket = "PUBREC"
	PUBREL  MQTTPacket = "PUBREL"
	PUBCOMP MQTTPacket = "PUBCOMP"
)

// MQTTPackets lists the acknowledgement packets.
var MQTTPackets = []MQTTPacket{PUBACK, PUBREC, PUBREL, PUBCOMP}

// Allowed lists the valid values, for strict decoding and the schema.
func (MQTTPacket) Allowed() []string { return Strings(MQTTPackets) }

// QoS is the QoS level whose handshake has the packet.
func (p MQTTPacket) QoS() int {
	if p == PUBACK {
		return 1
	}
	return 2
}

// Leg is one of the two hops an MQTT message makes.
type Leg string

// The legs: publisher → broker, broker → subscriber.
const (
	PublisherLeg  Leg = "publisher"
	SubscriberLeg Leg = "subscriber"
)

// Legs lists the legs.
var Legs = []Leg{PublisherLeg, SubscriberLeg}

// Allowed lists the valid values, for strict decoding and the schema.
func (Leg) Allowed() []string { return Strings(Legs) }

// AckLostParams are ack-lost's own parameters (MQTT, where both are
// required: scenario validation says so).
type AckLostParams struct {
	Packet MQTTPacket `yaml:"packet" json:"packet,omitempty" jsonschema:"description=MQTT (required there): the acknowledgement that never arrives: PUBACK (QoS 1)\\, PUBREC\\, PUBREL or PUBCOMP (QoS 2)."`
	Leg    Leg        `yaml:"leg" json:"leg,omitempty" jsonschema:"description=MQTT (required there): the hop it is lost on: publisher (between the publishing client and the broker) or subscriber (between the broker and the consumer)."`
}

// DisconnectParams are disconnect's own parameters.
type DisconnectParams struct {
	Leg Leg `yaml:"leg" json:"leg" jsonschema:"required,description=Whose connection breaks: publisher or subscriber."`
}

// SubscriberOfflineParams are subscriber-offline's own parameters.
type SubscriberOfflineParams struct {
	For int `yaml:"for" json:"for" jsonschema:"required,minimum=1,description=How many intents the window lasts: the chosen intent and the next for-1 are published while the subscriber is offline."`
	// AtLeast keeps the subscriber offline at least this long, however
	// soon the window's intents are routed (0: no minimum).
	AtLeast Duration `yaml:"at_least" json:"at_least,omitempty" jsonschema:"description=The window lasts at least this long (up to 8s): the broker refuses the subscriber until then even when the for intents were routed sooner (default 0: no minimum)."`
}

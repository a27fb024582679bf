package catalog

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// BrokerKind names a kind of broker.
type BrokerKind string

// The broker kinds.
const (
	Kafka    BrokerKind = "kafka"
	RabbitMQ BrokerKind = "rabbitmq"
)

// Broker describes one broker kind.
type Broker struct {
	Kind BrokerKind
	Doc  string
	// Modes are the modes this build supports for the kind.
	Modes []Mode
	// DefaultMode is the mode of a scenario that names none (embedded
	// when empty).
	DefaultMode Mode
	// ExampleAddress is shown in messages about addresses.
	ExampleAddress string
	// DefaultAddress, when set, is the address of an external broker whose
	// scenario names none (RabbitMQ's local guest URL).
	DefaultAddress string
	// ValidAddress says what is wrong with one entry of addresses (nil:
	// host:port, as HostPort checks).
	ValidAddress func(string) error
	// AutoAck: the broker can count a delivery acked when it sends it
	// (consumer ack: auto).
	AutoAck bool
	// DeadLetter: a consumer can hand a failed delivery back (consumer
	// on_failure) and the broker dead-letters what is refused or delivered
	// too often (consumer delivery_limit).
	DeadLetter bool
	// DeliveryLimit says why the kind's settings cannot count deliveries
	// (consumer delivery_limit), or "" when they can; nil when the kind
	// never does.
	DeliveryLimit func(settings any) string
	// MaxLength: the kind's queues can be bounded (producer max_length and
	// overflow).
	MaxLength bool
	// AuthKeys are the keys of auth (Auth) the kind's clients can use;
	// none: the kind takes no tls or auth (its settings are not Secured).
	AuthKeys []string
	// NewSettings returns a pointer to a zero value of the kind's own
	// settings (the broker keys besides kind, mode and addresses). A
	// settings type may have a Defaults() method, called after decoding.
	NewSettings func() any
	// StoredTwice says, in the kind's own words, how the broker comes to
	// store one publish twice: the why of a stored-twice intent, said in
	// parentheses (so it has none of its own).
	StoredTwice string
	// AckedAgain says, in the kind's own words, how the broker comes to
	// deliver again a message the consumer had acked: the why of an
	// acked-redelivered intent.
	AckedAgain string
}

// VariantSettings is a kind's settings type (Broker.NewSettings) whose
// value may differ per variant.
type VariantSettings interface {
	// ForVariant returns a copy of the broker's settings for one variant.
	ForVariant(v VariantKeys) any
}

// DeliveryLimiter is a kind's settings type whose broker gives a message
// up after a number of deliveries set in the broker settings (NATS
// max_deliver), not in the consumer's delivery_limit: the runner then
// reads what the broker gives up as dead letters.
type DeliveryLimiter interface {
	LimitsDeliveries() bool
}

// VariantKeys is what one variant says that only some broker kinds take:
// the kind-only producer and consumer keys (the scenario's, with the
// variant's overrides) and the variant's override mappings. A kind's
// ForVariant picks its own parts.
type VariantKeys struct {
	Producer  ProducerKeys
	Consumer  ConsumerKeys
	Overrides BrokerOverrides
}

// ProducerKeys are the producer keys only some broker kinds take, one
// group per kind, written among the common producer keys
// (scenario.Producer embeds it).
type ProducerKeys struct {
	KafkaProducer    `yaml:",inline"`
	RabbitMQProducer `yaml:",inline"`
}

// With returns k overridden by what o sets (a variant's producer).
func (k ProducerKeys) With(o ProducerKeys) ProducerKeys {
	return ProducerKeys{k.KafkaProducer.With(o.KafkaProducer), k.RabbitMQProducer.With(o.RabbitMQProducer)}
}

// ConsumerKeys are the consumer keys only some broker kinds take, one
// group per kind, written among the common consumer keys
// (scenario.Consumer embeds it).
type ConsumerKeys struct {
	KafkaConsumer    `yaml:",inline"`
	RabbitMQConsumer `yaml:",inline"`
}

// With returns k overridden by what o sets (a variant's consumer).
func (k ConsumerKeys) With(o ConsumerKeys) ConsumerKeys {
	return ConsumerKeys{k.KafkaConsumer.With(o.KafkaConsumer), k.RabbitMQConsumer.With(o.RabbitMQConsumer)}
}

// BrokerOverrides are a variant's own mappings of broker settings, one key
// per kind that has them, written among the variant's keys
// (scenario.Variant embeds it).
type BrokerOverrides struct {
	Kafka    *KafkaOverrides    `yaml:"kafka" json:"kafka,omitempty" jsonschema:"description=Overrides of the broker's Kafka settings for this variant (partitions); broker kind kafka only."`
	MQTT     *MQTTSettings      `yaml:"mqtt" json:"mqtt,omitempty" jsonschema:"description=Overrides of the broker's MQTT settings for this variant (qos\\, subscription_qos\\, clean_session\\, client); broker kind mqtt only."`
	RabbitMQ *RabbitMQOverrides `yaml:"rabbitmq" json:"rabbitmq,omitempty" jsonschema:"description=Overrides of the broker's RabbitMQ settings for this variant (queue_type); broker kind rabbitmq only."`
	NATS     *NATSOverrides     `yaml:"nats" json:"nats,omitempty" jsonschema:"description=Overrides of the broker's NATS settings for this variant (msg_id\\, duplicate_window); broker kind nats only."`
}

func setIfNonZero[T comparable](p *T, v T) {
	var zero T
	if v != zero {
		*p = v
	}
}

// HostPort checks a host:port address (Kafka's bootstrap servers): a host
// with no space in it, and a port from 1 to 65535, what a dial would only
// find out later.
func HostPort(a string) error {
	host, port, err := net.SplitHostPort(a)
	switch {
	case err != nil || port == "":
		return errors.New("not host:port")
	case host == "":
		return errors.New("not host:port: no host")
	case strings.ContainsAny(host, " \t"):
		return fmt.Errorf("not host:port: the host %q has a space in it", host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("not host:port: port %s is not from 1 to 65535", port)
	}
	return nil
}

// AMQPURL checks an amqp:// URL (amqps:// for TLS) with a host
// (RabbitMQ).
func AMQPURL(a string) error {
	u, err := ParseURL(a)
	if errors.Is(err, errUserinfo) {
		return fmt.Errorf("not an AMQP URL (amqp://USER:PASSWORD@HOST:PORT/VHOST): %w", err)
	}
	if err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") {
		return errors.New("not an AMQP URL (amqp://USER:PASSWORD@HOST:PORT/VHOST)")
	}
	if err := HostAndPort(u, false); err != nil {
		return fmt.Errorf("not an AMQP URL (amqp://USER:PASSWORD@HOST:PORT/VHOST): %w", err)
	}
	return nil
}

// MQTTURL checks a tcp:// or mqtt:// URL (ssl:// or mqtts:// for TLS)
// with a host and a port (MQTT).
func MQTTURL(a string) error {
	const want = "not an MQTT URL (tcp://HOST:PORT, or ssl://HOST:PORT for TLS)"
	u, err := ParseURL(a)
	if errors.Is(err, errUserinfo) {
		return fmt.Errorf("%s: %w", want, err)
	}
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "mqtt" && u.Scheme != "ssl" && u.Scheme != "mqtts") {
		return errors.New(want)
	}
	if err := HostAndPort(u, true); err != nil {
		return fmt.Errorf("%s: %w", want, err)
	}
	return nil
}

// ToxiproxyURL checks the API URL of an external toxiproxy.
func ToxiproxyURL(a string) error {
	u, err := ParseURL(a)
	if errors.Is(err, errUserinfo) {
		return fmt.Errorf("not a toxiproxy API URL (http://HOST:8474): %w", err)
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return errors.New("not a toxiproxy API URL (http://HOST:8474)")
	}
	if err := HostAndPort(u, false); err != nil {
		return fmt.Errorf("not a toxiproxy API URL (http://HOST:8474): %w", err)
	}
	return nil
}

// HostAndPort checks that u names a host and, when it has a port (or must
// have one), a port from 1 to 65535: what a dial would only find out later.
func HostAndPort(u *url.URL, portRequired bool) error {
	if u.Hostname() == "" {
		return errors.New("no host")
	}
	p := u.Port()
	if p == "" {
		if portRequired || strings.HasSuffix(u.Host, ":") {
			return errors.New("no port")
		}
		return nil
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %s is not from 1 to 65535", p)
	}
	return nil
}

// ModeOf is the mode a scenario for kind k runs in when it names none.
func ModeOf(k BrokerKind) Mode {
	if b, ok := LookupBroker(k); ok && b.DefaultMode != "" {
		return b.DefaultMode
	}
	return Embedded
}

// Brokers lists every broker kind. Each has an adapter in brokers/, wired
// in brokers/all.
var Brokers = []Broker{
	{
		Kind:           Kafka,
		Doc:            "Kafka: franz-go's kfake in-process (embedded), a real cluster (external) or a throwaway Apache Kafka in KRaft mode, 1 or 3 nodes, that dqbench starts from the broker's jars (managed: dqbench brokers fetch kafka), with the kgo client",
		Modes:          []Mode{Embedded, External, Managed},
		ExampleAddress: "127.0.0.1:9092",
		ValidAddress:   HostPort,
		AuthKeys:       append(slices.Clone(PasswordKeys), "mechanism"),
		NewSettings:    func() any { return new(KafkaSettings) },
		StoredTwice:    "a producer's retry after a lost response without producer idempotence, or a restarted producer's resend, which a new producer id hides from the broker",
		AckedAgain:     "the group had not stored the offset commit that covered it when the partition passed to another consumer (a crash, a rebalance, an expelled member): the new owner reads on from the last commit the group has",
	},
	{
		Kind:           RabbitMQ,
		Doc:            "RabbitMQ: a running broker (external) or a local 3-node cluster dqbench starts from the installed rabbitmq-server (managed), reached with amqp091-go; a durable queue per variant, publisher confirms, manual acks",
		Modes:          []Mode{External, Managed},
		DefaultMode:    External,
		ExampleAddress: "amqp://guest:guest@127.0.0.1:5672/",
		DefaultAddress: "amqp://guest:guest@127.0.0.1:5672/",
		ValidAddress:   AMQPURL,
		AutoAck:        true,
		AuthKeys:       PasswordKeys,
		NewSettings:    func() any { return new(RabbitMQSettings) },
		StoredTwice:    "a republish after a lost publisher confirm: the queue had the message, the producer was not told and published it again, and RabbitMQ keeps every copy it is given",
		AckedAgain:     "the queue had not applied the ack when the consumer went away (a quorum queue holds a channel's acks back once 32 are pending, and a channel that dies drops them: rabbitmq-server #10327; a classic queue drops the acks still unread in a socket that is reset)",
		DeadLetter:     true,
		MaxLength:      true,
		DeliveryLimit: func(settings any) string {
			if s, ok := settings.(*RabbitMQSettings); ok && s.QueueType != QuorumQueue {
				return "RabbitMQ counts deliveries only on quorum queues (x-delivery-limit); set queue_type: quorum on the broker, or in the variant's rabbitmq"
			}
			return ""
		},
	},
	{
		Kind:           MQTT,
		Doc:            "MQTT: mochi-mqtt in-process (embedded) or a throwaway Mosquitto per variant (managed), with eclipse/paho.mqtt.golang or eclipse/paho.golang as the client; a topic per variant, persistent sessions, manual acks",
		Modes:          []Mode{Embedded, External, Managed},
		ExampleAddress: "tcp://127.0.0.1:1883",
		ValidAddress:   MQTTURL,
		AuthKeys:       PasswordKeys,
		NewSettings:    func() any { return new(MQTTSettings) },
		StoredTwice:    "a QoS 1 resend: the publishing client sent the PUBLISH again after its PUBACK was lost or its connection broke, and at QoS 1 the broker takes and forwards every copy",
		AckedAgain:     "its PUBACK never reached the broker (lost with the connection), and the broker sends a persistent session's unacknowledged messages again when the client reconnects",
	},
	{
		Kind:           NATS,
		Doc:            "NATS JetStream: nats-server in-process (embedded), a running server with JetStream (external) or a throwaway 3-node JetStream cluster from the installed nats-server (managed), with nats.go's jetstream client; a stream and a durable pull consumer per variant, publish acks, explicit acks that wait for the server (ack: sync) or not (ack: plain), ack: auto is the AckNone policy, Nats-Msg-Id from the intent; messages given up after max_deliver are read from the server's advisories as dead letters",
		Modes:          []Mode{Embedded, External, Managed},
		ExampleAddress: "nats://127.0.0.1:4222",
		DefaultAddress: "nats://127.0.0.1:4222",
		ValidAddress:   NATSURL,
		AutoAck:        true,
		DeadLetter:     true,
		DeliveryLimit: func(any) string {
			return "NATS counts deliveries with the broker's max_deliver (the consumer's MaxDeliver); set max_deliver on the broker instead"
		},
		AuthKeys:    AuthKeys(),
		NewSettings: func() any { return new(NATSSettings) },
		StoredTwice: "a republish after a lost publish ack that the stream's duplicate window did not drop: the copy carried a Nats-Msg-Id new to the stream, none at all, or one the duplicate_window had already forgotten",
		AckedAgain:  "the server never received the ack (a plain ack is not confirmed: it was lost on the way, or with the consumer's connection), so it delivered the message again once ack_wait had passed",
	},
}

// LookupBroker returns the broker kind k.
func LookupBroker(k BrokerKind) (Broker, bool) {
	for _, b := range Brokers {
		if b.Kind == k {
			return b, true
		}
	}
	return Broker{}, false
}

// Allowed lists the valid values, for strict decoding and the schema.
func (BrokerKind) Allowed() []string {
	out := make([]string, len(Brokers))
	for i, b := range Brokers {
		out[i] = string(b.Kind)
	}
	return out
}

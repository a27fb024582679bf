package scenario_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/scenario"
)

// TestOnlyVariants: run --variant keeps the named variants in the
// scenario's order; an unknown name lists the variants, with a "did you
// mean".
func TestOnlyVariants(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
		err   string
	}{
		{names: []string{"dedup-table-split", "none"}, want: "none,dedup-table-split"},
		{names: []string{"dedup-table", "dedup-table"}, want: "dedup-table"},
		{names: []string{"none", "dedup-tabel", "x"}, err: `scenario quickstart has no variant "dedup-tabel" (did you mean "dedup-table"?), "x"; its variants: none, dedup-table, dedup-table-split`},
	} {
		s, err := scenario.Resolve("quickstart")
		if err != nil {
			t.Fatal(err)
		}
		err = s.OnlyVariants(tc.names)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%v: error %v, want %s", tc.names, err, tc.err)
			}
			if len(s.Variants) != 3 {
				t.Errorf("%v: a refused selection changed the variants", tc.names)
			}
			continue
		}
		var got []string
		for _, v := range s.Variants {
			got = append(got, v.Name)
		}
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("%v: variants %v (err %v), want %s", tc.names, got, err, tc.want)
		}
	}
}

// TestBrokerSettingsFor: each variant gets its kind's own settings, with
// its kind-only producer and consumer keys (the scenario's, overridden by
// the variant's) and its override mapping applied, without changing the
// broker's.
func TestBrokerSettingsFor(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []any // per variant
		broker     any
	}{
		{
			name: "kafka",
			yaml: `
broker: {kind: kafka, partitions: 2}
producer: {client: kafka-go, idempotent: false}
consumer: {isolation: read_committed}
variants:
  - {name: a, strategy: none}
  - {name: b, strategy: none, producer: {client: franz-go}, consumer: {isolation: read_uncommitted}}
`,
			want: []any{
				&catalog.KafkaSettings{Partitions: 2, KafkaProducer: catalog.KafkaProducer{Client: catalog.KafkaGo}, KafkaConsumer: catalog.KafkaConsumer{Isolation: catalog.ReadCommitted}},
				&catalog.KafkaSettings{Partitions: 2, KafkaProducer: catalog.KafkaProducer{Client: catalog.FranzGo}, KafkaConsumer: catalog.KafkaConsumer{Isolation: catalog.ReadUncommitted}},
			},
			broker: &catalog.KafkaSettings{Partitions: 2},
		},
		{
			name: "rabbitmq",
			yaml: `
broker: {kind: rabbitmq, queue_type: quorum}
producer: {max_length: 10}
consumer: {on_failure: reject}
variants:
  - {name: a, strategy: none, consumer: {delivery_limit: 3}}
  - {name: b, strategy: none, rabbitmq: {queue_type: classic}, producer: {overflow: reject-publish}}
`,
			want: []any{
				&catalog.RabbitMQSettings{QueueType: catalog.QuorumQueue, RabbitMQProducer: catalog.RabbitMQProducer{MaxLength: 10}, RabbitMQConsumer: catalog.RabbitMQConsumer{OnFailure: catalog.FailReject, DeliveryLimit: 3}},
				&catalog.RabbitMQSettings{QueueType: catalog.ClassicQueue, RabbitMQProducer: catalog.RabbitMQProducer{MaxLength: 10, Overflow: catalog.RejectPublish}, RabbitMQConsumer: catalog.RabbitMQConsumer{OnFailure: catalog.FailReject}},
			},
			broker: &catalog.RabbitMQSettings{QueueType: catalog.QuorumQueue},
		},
		{
			name: "mqtt",
			yaml: `
broker: {kind: mqtt, qos: 2}
variants:
  - {name: a, strategy: none}
  - {name: b, strategy: none, mqtt: {client: paho.golang, qos: 0}}
`,
			want: []any{
				&catalog.MQTTSettings{QoS: new(2), SubscriptionQoS: new(2), CleanSession: new(false), Client: catalog.Paho},
				&catalog.MQTTSettings{QoS: new(0), SubscriptionQoS: new(2), CleanSession: new(false), Client: catalog.PahoGolang},
			},
			broker: &catalog.MQTTSettings{QoS: new(2), SubscriptionQoS: new(2), CleanSession: new(false), Client: catalog.Paho},
		},
	} {
		s, err := scenario.Parse(tc.name+".yaml", []byte("version: 1\nname: t\n"+strings.TrimPrefix(tc.yaml, "\n")))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, v := range s.Variants {
			if got := s.BrokerSettingsFor(v); !reflect.DeepEqual(got, tc.want[i]) {
				t.Errorf("%s: variant %s: settings %+v, want %+v", tc.name, v.Name, got, tc.want[i])
			}
		}
		if !reflect.DeepEqual(s.Broker.Settings, tc.broker) {
			t.Errorf("%s: broker settings became %+v, want %+v", tc.name, s.Broker.Settings, tc.broker)
		}
	}
}

// TestUseMode: run --broker-mode puts a built-in on its kind's broker in
// another mode, or says which fault cannot act there and changes nothing.
func TestUseMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode catalog.Mode
		err  string
	}{
		{name: "quickstart", mode: catalog.Managed},
		{name: "kafka-transactions", mode: catalog.Managed},
		{name: "kafka-idempotent-producer", mode: catalog.Managed},
		{name: "kafka-leader-move", mode: catalog.Managed},
		{name: "mqtt-subscriber-offline", mode: catalog.Managed, err: "fault subscriber-offline cannot act with mode: managed"},
		{name: "quickstart", mode: catalog.External, err: "give --addresses"},
		{name: "rabbitmq-consumer-crash", mode: catalog.Embedded, err: `broker kind rabbitmq has no mode "embedded"`},
	} {
		s, err := scenario.Resolve(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		before := s.Broker.Mode
		err = s.UseMode(tc.mode)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s --broker-mode %s: %v", tc.name, tc.mode, err)
		case tc.err == "" && s.Broker.Mode != tc.mode:
			t.Errorf("%s --broker-mode %s: the mode is %s", tc.name, tc.mode, s.Broker.Mode)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s --broker-mode %s: error %v, want one saying %q", tc.name, tc.mode, err, tc.err)
		case tc.err != "" && s.Broker.Mode != before:
			t.Errorf("%s --broker-mode %s: refused, yet the mode changed to %s", tc.name, tc.mode, s.Broker.Mode)
		}
	}
}

// TestUseModeNATSReplicas: --broker-mode refuses what a NATS stream's
// replicas cannot be created on, as validation does: more than one on the
// embedded server, more than the managed cluster's three nodes.
func TestUseModeNATSReplicas(t *testing.T) {
	for _, tc := range []struct {
		replicas int
		mode     catalog.Mode
		err      string
	}{
		{3, catalog.Managed, ""},
		{4, catalog.Managed, "replicas: 4 replicas need as many nodes, and the managed JetStream cluster has 3"},
		{3, catalog.Embedded, "replicas: 3 replicas need a JetStream cluster, and the embedded server is one node"},
	} {
		s, err := scenario.Parse("nats.yaml", fmt.Appendf(nil, `version: 1
name: nats
broker: {kind: nats, mode: external, addresses: ["nats://127.0.0.1:4222"], replicas: %d}
variants:
  - {name: none, strategy: none}
`, tc.replicas))
		if err != nil {
			t.Fatal(err)
		}
		err = s.UseMode(tc.mode)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("replicas %d, --broker-mode %s: error %v, want %q", tc.replicas, tc.mode, err, tc.err)
		}
	}
}

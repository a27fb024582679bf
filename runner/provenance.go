package runner

import (
	"slices"
	"strings"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/internal/buildinfo"
	"github.com/dqbench/dqbench/scenario"
)

// serverVersioner is a broker that can say its server's version.
type serverVersioner interface{ ServerVersion() string }

// provenance says what produces a run of s on b (nil before b is open):
// dqbench's build, the broker, and the modules the variants use.
func provenance(s *scenario.Scenario, b brokers.Broker) *history.Provenance {
	p := &history.Provenance{DQBench: buildinfo.Version(), Go: buildinfo.Go(), Broker: brokerName(s, b)}
	var clients, stores []string
	add := func(list *[]string, module string) {
		if m := buildinfo.Module(module); !slices.Contains(*list, m) {
			*list = append(*list, m)
		}
	}
	embedded := s.Broker.Mode == catalog.Embedded || s.Broker.Mode == ""
	for _, v := range s.Variants {
		switch s.Broker.Kind {
		case catalog.Kafka:
			if embedded {
				add(&clients, "github.com/twmb/franz-go/pkg/kfake")
			}
			if s.ProducerFor(v).Client == catalog.KafkaGo {
				add(&clients, "github.com/segmentio/kafka-go")
			}
			add(&clients, "github.com/twmb/franz-go") // the consumers, the stage and the admin client
		case catalog.RabbitMQ:
			add(&clients, "github.com/rabbitmq/amqp091-go")
		case catalog.MQTT:
			if embedded {
				add(&clients, "github.com/mochi-mqtt/server/v2")
			}
			if m, ok := s.BrokerSettingsFor(v).(*catalog.MQTTSettings); ok && m.Client == catalog.PahoGolang {
				add(&clients, "github.com/eclipse/paho.golang")
			} else {
				add(&clients, "github.com/eclipse/paho.mqtt.golang")
			}
		case catalog.NATS:
			if embedded {
				add(&clients, "github.com/nats-io/nats-server/v2")
			}
			add(&clients, "github.com/nats-io/nats.go")
		}
		if v.Process != nil {
			continue // the process's own store
		}
		if strings.HasPrefix(s.StoreFor(v), "postgres") {
			add(&stores, "github.com/jackc/pgx/v5")
		} else {
			add(&stores, "modernc.org/sqlite")
		}
		if st, ok := catalog.LookupStrategy(v.Strategy); ok && st.NeedsRedis {
			add(&stores, "github.com/redis/go-redis/v9")
		}
	}
	slices.Sort(clients)
	p.Clients, p.Stores = clients, stores
	return p
}

// brokerName says which broker a run of s is on: b's name and its
// server's version, or before b is open the scenario's kind and mode.
func brokerName(s *scenario.Scenario, b brokers.Broker) string {
	if b == nil {
		return strings.TrimSpace(string(s.Broker.Kind) + " " + string(s.Broker.Mode))
	}
	name := b.Name()
	if sv, ok := b.(serverVersioner); ok {
		if v := sv.ServerVersion(); v != "" {
			name += " · " + v
		}
	}
	return name
}

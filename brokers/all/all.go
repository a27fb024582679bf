// Package all wires every broker kind in package catalog to its adapter. It
// is the one list a new adapter is added to.
package all

import (
	"context"
	"fmt"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/kafka"
	"github.com/dqbench/dqbench/brokers/mqtt"
	"github.com/dqbench/dqbench/brokers/nats"
	"github.com/dqbench/dqbench/brokers/rabbitmq"
	"github.com/dqbench/dqbench/catalog"
)

// Opener starts (embedded) or connects to (external) a broker.
type Opener func(ctx context.Context, cfg brokers.Config) (brokers.Broker, error)

// Brokers maps each broker kind to its adapter.
var Brokers = map[catalog.BrokerKind]Opener{
	catalog.Kafka:    kafka.Open,
	catalog.RabbitMQ: rabbitmq.Open,
	catalog.MQTT:     mqtt.Open,
	catalog.NATS:     nats.Open,
}

// Open opens the broker cfg describes.
func Open(ctx context.Context, cfg brokers.Config) (brokers.Broker, error) {
	open, ok := Brokers[cfg.Kind]
	if !ok {
		return nil, fmt.Errorf("broker kind %q is not supported by this build", cfg.Kind)
	}
	return open(ctx, cfg)
}

package all

import (
	"slices"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/kafka"
	"github.com/dqbench/dqbench/brokers/mqtt"
	"github.com/dqbench/dqbench/brokers/nats"
	"github.com/dqbench/dqbench/brokers/rabbitmq"
	"github.com/dqbench/dqbench/catalog"
)

// Standing maps each broker kind with a managed mode (catalog.Managed in
// its Modes) to the broker "dqbench brokers up KIND" leaves running.
var Standing = map[catalog.BrokerKind]brokers.Standing{
	catalog.Kafka:    kafka.Standing,
	catalog.RabbitMQ: rabbitmq.Standing,
	catalog.MQTT:     mqtt.Standing,
	catalog.NATS:     nats.Standing,
}

// ManagedKinds lists the kinds with a managed mode, in catalog order.
func ManagedKinds() []catalog.BrokerKind {
	var out []catalog.BrokerKind
	for _, b := range catalog.Brokers {
		if slices.Contains(b.Modes, catalog.Managed) {
			out = append(out, b.Kind)
		}
	}
	return out
}

// LookupStanding returns the standing broker of the kind named name, or
// of the kind whose standing broker is called name ("mosquitto").
func LookupStanding(name string) (catalog.BrokerKind, brokers.Standing, bool) {
	for _, k := range ManagedKinds() {
		s, ok := Standing[k]
		if ok && (name == string(k) || name == s.Name) {
			return k, s, true
		}
	}
	return "", brokers.Standing{}, false
}

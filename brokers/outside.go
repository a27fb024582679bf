package brokers

import (
	"context"
	"net"
)

// Outside is where a consumer outside dqbench (a process variant's
// program) finds a destination.
type Outside struct {
	// Addresses are the broker's host:port.
	Addresses []string
	// URL is what a client dials where the protocol has URLs with
	// credentials (RabbitMQ: amqp://USER:PASSWORD@HOST:PORT/VHOST), or "".
	URL string
	// Topic and Group are the destination's topic (RabbitMQ: queue) and
	// consumer group (where the broker has them).
	Topic, Group string
	// Env are the broker's own DQBENCH_ variables ("DQBENCH_QOS=1").
	Env []string
}

// ConsumerWatcher is a destination that shows dqbench what consumers outside
// it fetch and commit, each with the network connection it came on, and
// can withhold either: the black-box side of a process variant. Only a
// broker whose traffic dqbench sees can do this: the embedded Kafka, where
// kfake's listener is dqbench's; RabbitMQ, MQTT and NATS, whose consumer processes connect
// through dqbench's relay (netfault.Relay).
type ConsumerWatcher interface {
	// Outside says where a consumer outside dqbench connects.
	Outside() Outside
	// WatchConsumers installs w for the destination's topic and group.
	WatchConsumers(w ConsumerWatch)
	// RemoveMembers takes members of the destination's consumer group out
	// of it at once (consumers dqbench killed), as the broker would after
	// their session timeout, so the group rebalances without waiting.
	RemoveMembers(ctx context.Context, members []string) error
}

// ConsumerWatch is what a ConsumerWatcher calls. Either func may block (to
// kill the consumer before the broker goes on); a non-nil error withholds
// the response or request and closes the connection.
type ConsumerWatch struct {
	// Connected is called when any client connects to the broker (it
	// may be one of the watcher's consumers).
	Connected func(remote net.Addr)
	// Member is called with the group member id a client at remote uses
	// in the destination's group (from its join, sync, heartbeat and
	// commit requests).
	Member func(remote net.Addr, member string)
	// Fetched is called before a fetch response of the destination's topic
	// leaves the broker for the client at remote, with the records it
	// carries in log order (none for an empty response).
	Fetched func(remote net.Addr, ds []Delivery) error
	// Committing is called when a commit request for the destination's
	// topic reaches the broker, before the broker applies it, with the
	// records it newly commits (those after the group's last commit, in
	// log order, as fetched).
	Committing func(remote net.Addr, ds []Delivery) error
}

package rabbitmq

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/netfault"
	amqpfault "github.com/dqbench/dqbench/netfault/amqp"
)

// A process variant's consumers (programs outside dqbench) connect to the
// queue through a relay in this process (netfault.Relay) whose AMQP
// watcher (netfault/amqp.Watcher) sees, per connection, each basic.deliver
// before it reaches the consumer and each basic.ack before it reaches the
// broker: where consumer-kill kills (at: delivery, at: ack) and ack-lost
// drops an ack and cuts the connection. The relay is not a toxiproxy proxy:
// a toxic does not know which connection it acts on, and dqbench must tell
// which process an ack comes from.

var _ brokers.ConsumerWatcher = (*queueDest)(nil)

// outside is a queue's relay for consumer processes, made by Outside.
type outside struct {
	relay   *netfault.Relay
	watcher *amqpfault.Watcher

	mu        sync.Mutex
	watch     brokers.ConsumerWatch
	delivered map[int]int // intent → deliveries that reached a consumer
}

// Outside starts the queue's relay and says where a consumer process
// connects: the relay, with the broker's user, password and virtual host.
func (d *queueDest) Outside() brokers.Outside {
	u, err := amqp.ParseURI(d.r.url)
	if err != nil {
		return brokers.Outside{Topic: d.queue}
	}
	if d.out == nil {
		o := &outside{delivered: map[int]int{}}
		o.watcher = &amqpfault.Watcher{Delivered: o.deliver, Acked: func(remote net.Addr, ds []amqpfault.Delivery) error { return o.ack(d, remote, ds) }, CopyHeader: copyHeader}
		relay, err := netfault.NewRelay(net.JoinHostPort(u.Host, strconv.Itoa(u.Port)), o.filters)
		if err != nil {
			return brokers.Outside{Topic: d.queue}
		}
		o.relay = relay
		d.out = o
	}
	host, port, _ := net.SplitHostPort(d.out.relay.Addr)
	u.Host = host
	u.Port, _ = strconv.Atoi(port)
	return brokers.Outside{Addresses: []string{d.out.relay.Addr}, URL: u.String(), Topic: d.queue}
}

// WatchConsumers shows w the deliveries to, and acks from, every
// connection through the relay.
func (d *queueDest) WatchConsumers(w brokers.ConsumerWatch) {
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

// RemoveMembers does nothing: RabbitMQ requeues what a consumer held when
// its connection closes, which the kill did.
func (d *queueDest) RemoveMembers(context.Context, []string) error { return nil }

// filters tells the watch of a new connection and watches it.
func (o *outside) filters(remote net.Addr) (up, down netfault.Filter, closed func()) {
	if w := o.w(); w.Connected != nil {
		w.Connected(remote)
	}
	return o.watcher.Filters(remote)
}

func (o *outside) w() brokers.ConsumerWatch {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.watch
}

// deliver shows a delivery to the watch (which may kill its consumer and
// withhold it); a message that is not a dqbench intent passes unseen.
func (o *outside) deliver(remote net.Addr, d amqpfault.Delivery) error {
	w := o.w()
	intent, err := brokers.ParseKey(d.MessageID)
	if err != nil || w.Fetched == nil {
		return nil
	}
	if err := w.Fetched(remote, []brokers.Delivery{{Intent: intent, Position: d.Copy, Redelivered: d.Redelivered}}); err != nil {
		return err
	}
	o.mu.Lock()
	o.delivered[intent]++
	o.mu.Unlock()
	return nil
}

// ack shows an ack's deliveries to the watch (which may kill its consumer
// and withhold it); then, unless it did, ack-lost may drop the ack and cut
// the connection, leaving the consumer running and believing it acked.
func (o *outside) ack(d *queueDest, remote net.Addr, ads []amqpfault.Delivery) error {
	var ds []brokers.Delivery
	for _, a := range ads {
		if intent, err := brokers.ParseKey(a.MessageID); err == nil {
			ds = append(ds, brokers.Delivery{Intent: intent, Position: a.Copy})
		}
	}
	if len(ds) == 0 {
		return nil
	}
	if w := o.w(); w.Committing != nil {
		if err := w.Committing(remote, ds); err != nil {
			return err
		}
	}
	if d.ackLost == nil {
		return nil
	}
	hit := false
	for _, x := range ds {
		o.mu.Lock()
		attempt := o.delivered[x.Intent]
		o.mu.Unlock()
		if d.ackLost.fires(x.Intent, attempt) {
			d.ackLost.lost(x.Intent, attempt)
			hit = true
		}
	}
	if hit {
		return fmt.Errorf("ack lost")
	}
	return nil
}

// closeOutside stops the relay, closing every consumer connection.
func (d *queueDest) closeOutside() error {
	if d.out == nil {
		return nil
	}
	err := d.out.relay.Close()
	d.out = nil
	return err
}

// outsideBacklog is the queue's backlog with consumer processes: the
// broker's ready messages plus what the watched connections hold.
func (d *queueDest) outsideBacklog() (int64, error) {
	return d.out.watcher.Backlog(func() (int, int, error) {
		q, err := d.inspect()
		return q.Messages, q.Consumers, err
	})
}

package nats

import (
	"context"
	"errors"
	"net"
	neturl "net/url"
	"strconv"
	"sync"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/netfault"
	natsfault "github.com/dqbench/dqbench/netfault/nats"
)

// A process variant's consumers (programs outside dqbench) pull from the
// variant's durable consumer (DQBENCH_GROUP, on the stream DQBENCH_TOPIC)
// through a relay in this process (netfault.Relay) whose NATS watcher
// (netfault/nats.Watcher) sees, per connection, each delivery (a MSG with
// a $JS.ACK reply subject) before it reaches the consumer and each ack to
// that subject before it reaches the server: where consumer-kill kills
// (at: delivery, at: ack), and where ack-lost drops an ack with the
// connection up, as it does for dqbench's own consumers. The server
// delivers what a killed process held again once ack_wait has passed; the
// backlog is the durable consumer's (num_pending + num_ack_pending), which
// counts what the processes hold.

var _ brokers.ConsumerWatcher = (*dest)(nil)

// outside is a stream's relay for consumer processes, made by Outside.
type outside struct {
	relay *netfault.Relay

	mu        sync.Mutex
	watch     brokers.ConsumerWatch
	delivered map[int]int // intent → deliveries that reached a consumer
}

// Outside starts the relay and says where a consumer process connects:
// the server's URL (with its credentials) at the relay's address, the
// stream (Topic) and its durable pull consumer (Group).
func (d *dest) Outside() brokers.Outside {
	where := brokers.Outside{Topic: d.stream, Group: durable, Env: []string{"DQBENCH_SUBJECTS=" + d.prefix + ">"}}
	u, err := neturl.Parse(d.b.firstURL())
	if err != nil {
		return where
	}
	if d.out == nil {
		o := &outside{delivered: map[int]int{}}
		w := &natsfault.Watcher{
			Intent: func(subject string) (int, bool) {
				in, err := d.intentOf(subject)
				return in, err == nil
			},
			Delivered: o.deliver,
			Acked:     func(remote net.Addr, x natsfault.Delivery) (bool, error) { return o.ack(d, remote, x) },
		}
		relay, err := netfault.NewRelay(u.Host, func(remote net.Addr) (up, down netfault.Filter, closed func()) {
			if cw := o.w(); cw.Connected != nil {
				cw.Connected(remote)
			}
			return w.Filters(remote)
		})
		if err != nil {
			return where
		}
		o.relay = relay
		d.out = o
	}
	u.Host = d.out.relay.Addr
	where.Addresses = []string{d.out.relay.Addr}
	where.URL = u.String()
	return where
}

// WatchConsumers shows w the deliveries to, and acks from, every
// connection through the relay.
func (d *dest) WatchConsumers(w brokers.ConsumerWatch) {
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

// RemoveMembers does nothing: a pull consumer has no members, and the
// server delivers what a killed process held again after ack_wait.
func (d *dest) RemoveMembers(context.Context, []string) error { return nil }

func (o *outside) w() brokers.ConsumerWatch {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.watch
}

// deliver shows a delivery to the watch, which may kill its consumer and
// withhold it.
func (o *outside) deliver(remote net.Addr, x natsfault.Delivery) error {
	if w := o.w(); w.Fetched != nil {
		ds := []brokers.Delivery{{Intent: x.Intent, Position: strconv.FormatUint(x.StreamSeq, 10), Redelivered: x.Delivered > 1}}
		if err := w.Fetched(remote, ds); err != nil {
			return err
		}
	}
	o.mu.Lock()
	o.delivered[x.Intent]++
	o.mu.Unlock()
	return nil
}

// ack shows an ack to the watch, which may kill its consumer and withhold
// it (cutting the connection); then, unless it did, ack-lost may drop the
// ack with the connection up, leaving the consumer running and believing
// it acked.
func (o *outside) ack(d *dest, remote net.Addr, x natsfault.Delivery) (drop bool, err error) {
	if w := o.w(); w.Committing != nil {
		if err := w.Committing(remote, []brokers.Delivery{{Intent: x.Intent, Position: strconv.FormatUint(x.StreamSeq, 10)}}); err != nil {
			return false, err
		}
	}
	if lose := d.ackLost; lose != nil {
		o.mu.Lock()
		attempt := o.delivered[x.Intent]
		o.mu.Unlock()
		if lose.fires(x.Intent, attempt) {
			lose.lost(x.Intent, attempt)
			return true, nil
		}
	}
	return false, nil
}

// closeOutside stops the relay, closing every consumer connection.
func (d *dest) closeOutside() error {
	if d.out == nil {
		return nil
	}
	err := d.out.relay.Close()
	d.out = nil
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

package mqtt

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
)

// received is one PUBLISH as the client library handed it over.
type received struct {
	intent int
	body   []byte
	qos    byte
	dup    bool
	// retained: the RETAIN flag, set on a message the broker sends from
	// its retained messages for a new subscription (and cleared on
	// routing, MQTT-3.3.1-9; paho.golang subscribes with retain as
	// published off, the default).
	retained bool
	pid      uint16
	handle   any
}

// inbox queues a consumer's deliveries without bound, so that the client
// library's router never blocks (MQTT 3.1.1 has no prefetch; the broker's
// in-flight limit bounds what is unacked).
type inbox struct {
	d        *dest
	s        *subSession // the session the deliveries come on
	mu       sync.Mutex
	q        []received
	err      error
	dead     bool // lost: nothing more is queued
	ready    chan struct{}
	lost     chan struct{}
	lostOnce sync.Once
}

func newInbox(d *dest, s *subSession) *inbox {
	return &inbox{d: d, s: s, ready: make(chan struct{}, 1), lost: make(chan struct{})}
}

func (in *inbox) push(r received) {
	in.mu.Lock()
	if in.dead {
		in.mu.Unlock()
		return
	}
	if r.qos == 0 {
		in.d.qos0Queued.Add(1)
		in.d.qos0Seen()
	}
	in.q = append(in.q, r)
	in.mu.Unlock()
	select {
	case in.ready <- struct{}{}:
	default:
	}
}

func (in *inbox) fail(err error) {
	in.mu.Lock()
	if in.err == nil {
		in.err = err
	}
	in.mu.Unlock()
	in.markLost()
}

// markLost ends the instance: what it had queued is dropped (the broker
// redelivers QoS 1 and 2; QoS 0 is gone).
func (in *inbox) markLost() {
	in.lostOnce.Do(func() {
		close(in.lost)
		in.mu.Lock()
		in.dead = true
		for _, r := range in.q {
			if r.qos == 0 {
				in.d.qos0Queued.Add(-1)
			}
		}
		in.q = nil
		in.mu.Unlock()
	})
}

var errLost = errors.New("mqtt consumer connection lost")

func (in *inbox) lostErr() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.err != nil {
		return in.err
	}
	return errLost
}

// next returns the next delivery, naming the copy it carries
// (dest.position) as the application takes it; once the connection is
// lost it returns errLost, leaving what is queued unhandled, as a process
// whose connection died would.
func (in *inbox) next(ctx context.Context) (brokers.Delivery, error) {
	for {
		select {
		case <-in.lost:
			return brokers.Delivery{}, in.lostErr()
		default:
		}
		in.mu.Lock()
		if len(in.q) > 0 {
			r := in.q[0]
			in.q = in.q[1:]
			in.mu.Unlock()
			if r.qos == 0 {
				in.d.qos0Queued.Add(-1)
				in.d.qos0Seen()
			}
			pos, redelivered := in.d.position(in.s, r.intent, r.qos, r.dup, r.pid)
			return brokers.Delivery{
				Intent: r.intent, Body: r.body, Position: pos, Tag: strconv.Itoa(int(r.pid)), Redelivered: redelivered,
				QoS: strconv.Itoa(int(r.qos)), Retained: r.retained, Handle: r.handle,
			}, nil
		}
		in.mu.Unlock()
		select {
		case <-in.ready:
		case <-in.lost:
		case <-ctx.Done():
			return brokers.Delivery{}, ctx.Err()
		}
	}
}

// qos0Settle is how long after the last QoS 0 message seen on its way (sent
// by the publisher, routed by the embedded broker, received or handled by
// a consumer) the backlog still counts one: a QoS 0 message is
// acknowledged by nobody, so nothing says it is still on the wire. Since a
// QoS 0 message not delivered when the drain ends counts as lost (cause
// unconfirmed), this is long enough for a pipeline stalled on a loaded
// machine (150 ms was not: a run during a parallel go test ./... counted
// 37 of 100 QoS 0 messages still on their way as lost).
const qos0Settle = time.Second

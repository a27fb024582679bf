package rabbitmq_test

// The raw-client evidence for the lesson of the built-in
// rabbitmq-quorum-acked-redelivery: a consumer that acked a message and
// then died can get that message back, on a quorum queue even when a
// synchronous round trip followed the acks. Only amqp091-go is used here,
// no dqbench code, so the numbers are the broker's, to compare with what
// dqbench counts (docs/scenario.md, "Acked, and delivered again").
//
// make quorum-evidence runs it with bigger numbers and prints the table.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

var (
	acklossMessages = flag.Int("ackloss.messages", 600, "messages per queue in TestAckedRedelivery")
	acklossKills    = flag.Int("ackloss.kills", 5, "consumer kills per queue in TestAckedRedelivery")
	acklossAcks     = flag.Int("ackloss.acks", 80, "acks per consumer before each kill in TestAckedRedelivery")
	// dqbench applies each message's effect (a SQLite transaction) before
	// its ack, about a millisecond: the slower the acks, the fewer a
	// quorum queue's channel holds back when the consumer dies.
	acklossQueues     = flag.String("ackloss.queues", "quorum,classic", "queue types in TestAckedRedelivery")
	acklossPrefetch   = flag.String("ackloss.prefetch", "1,10,100", "prefetch counts in TestAckedRedelivery")
	acklossConcurrent = flag.Bool("ackloss.concurrent", false, "publish while the consumer consumes (as dqbench does) in TestAckedRedelivery, instead of publishing everything first")
	acklossWork       = flag.Duration("ackloss.work", 0, "time the consumer spends on each message before its ack in TestAckedRedelivery (0: ack at once)")
)

// settle is what the consumer does between its last ack and its death.
type settle string

const (
	settleNone      settle = "none"       // close the socket right after the last ack
	settleRoundTrip settle = "round-trip" // a basic.qos round trip, then close
	settleWait      settle = "wait-50ms"  // sleep 50 ms, then close
)

// ackLossResult is one configuration's outcome.
type ackLossResult struct {
	queueType string
	prefetch  int
	settle    settle
	kills     int
	acks      int // acks sent, in all
	// ackedAgain counts deliveries of a message the consumer had already
	// acked (each one is a message the broker gave back after its ack).
	ackedAgain int
	// flagged counts the other deliveries flagged redelivered: messages
	// the dead consumer had been sent (its prefetch) and not acked, which
	// every queue must deliver again.
	flagged int
}

// TestAckedRedelivery publishes messages to a quorum and a classic queue,
// consumes them with prefetch 1, 10 and 100, acks every one, and kills
// the consumer (its TCP socket closed under the AMQP connection, as when
// the process dies) after every -ackloss.acks acks, a number of times;
// then it counts the acked messages that were delivered again. It asserts
// only what holds on every run (prefetch 1 gives none; a classic queue
// gives none once a synchronous round trip follows the acks) and logs
// the rest.
func TestAckedRedelivery(t *testing.T) {
	url := os.Getenv("DQBENCH_RABBITMQ_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	admin, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(3 * time.Second)})
	if err != nil {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatalf("DQBENCH_REQUIRE_BROKERS=1 but RabbitMQ does not answer at %s: %v", url, err)
		}
		t.Skipf("no RabbitMQ at %s (%v); start one (docker compose up -d rabbitmq) or set DQBENCH_RABBITMQ_URL", url, err)
	}
	defer admin.Close()
	if v, ok := admin.Properties["version"].(string); ok {
		t.Logf("RabbitMQ %s", v)
	}
	prefix := fmt.Sprintf("dqbench-ackloss-%d-%x", os.Getpid(), rand.Uint32())
	var results []ackLossResult
	for _, qt := range strings.Split(*acklossQueues, ",") {
		for _, ps := range strings.Split(*acklossPrefetch, ",") {
			p, err := strconv.Atoi(ps)
			if err != nil {
				t.Fatalf("-ackloss.prefetch: %v", err)
			}
			for _, s := range []settle{settleNone, settleRoundTrip, settleWait} {
				q := fmt.Sprintf("%s-%s-p%d-%s", prefix, qt, p, s)
				res, err := runAckLoss(t.Context(), url, admin, q, qt, p, s, *acklossMessages, *acklossKills, *acklossAcks)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				results = append(results, res)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d messages, %d kills after %d acks each (raw socket close), %v of work per message, published while consuming: %v:\n", *acklossMessages, *acklossKills, *acklossAcks, *acklossWork, *acklossConcurrent)
	fmt.Fprintf(&b, "%-8s %8s %-11s %14s %9s %18s\n", "queue", "prefetch", "settle", "acked-again", "per kill", "flagged (unacked)")
	for _, r := range results {
		fmt.Fprintf(&b, "%-8s %8d %-11s %14d %9.1f %18d\n", r.queueType, r.prefetch, r.settle, r.ackedAgain,
			float64(r.ackedAgain)/float64(max(r.kills, 1)), r.flagged)
	}
	t.Log("\n" + b.String())
	for _, r := range results {
		name := fmt.Sprintf("%s prefetch %d settle %s", r.queueType, r.prefetch, r.settle)
		if r.kills != *acklossKills {
			t.Errorf("%s: %d kills, want %d", name, r.kills, *acklossKills)
		}
		// With one unacked message at a time the broker applies each ack
		// before it sends the next, so only the last ack before a kill can
		// be lost, and only when nothing settled it (a fresh-clone CI run
		// saw 1 in 5 kills with settle none).
		if r.prefetch == 1 && (r.settle == settleNone && r.ackedAgain > r.kills || r.settle != settleNone && r.ackedAgain != 0) {
			t.Errorf("%s: %d acked messages delivered again, want 0 (at most one per kill with settle none: the last ack, unread when the socket closed)", name, r.ackedAgain)
		}
		if r.queueType == "classic" && r.settle == settleRoundTrip && r.ackedAgain != 0 {
			t.Errorf("%s: %d acked messages delivered again, want 0 (a classic queue has applied every ack a round trip followed)", name, r.ackedAgain)
		}
	}
}

// runAckLoss runs one configuration on queue q, which it declares and
// deletes.
func runAckLoss(ctx context.Context, url string, admin *amqp.Connection, q, queueType string, prefetch int, s settle, n, kills, acksPerKill int) (ackLossResult, error) {
	res := ackLossResult{queueType: queueType, prefetch: prefetch, settle: s}
	ch, err := admin.Channel()
	if err != nil {
		return res, err
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(q, true, false, false, false, amqp.Table{amqp.QueueTypeArg: queueType}); err != nil {
		return res, fmt.Errorf("declare: %w", err)
	}
	defer func() { _, _ = ch.QueueDelete(q, false, false, false) }()
	published := make(chan error, 1)
	if *acklossConcurrent {
		pch, err := admin.Channel()
		if err != nil {
			return res, err
		}
		defer pch.Close()
		go func() { published <- publishN(ctx, pch, q, n) }()
	} else if err := publishN(ctx, ch, q, n); err != nil {
		return res, err
	} else {
		published <- nil
	}
	// Enough messages must remain for every kill to find its acks.
	if kills*acksPerKill > n {
		return res, fmt.Errorf("%d kills × %d acks exceed %d messages", kills, acksPerKill, n)
	}
	acked := make(map[int]bool, n)
	for res.kills < kills {
		if err := consumeCycle(ctx, url, q, n, prefetch, s, acksPerKill, acked, &res); err != nil {
			return res, err
		}
		res.kills++
	}
	// The rest, with no kill: ack everything, wait until the queue holds
	// nothing, ready or unacked, then close.
	if err := consumeCycle(ctx, url, q, n, prefetch, s, 0, acked, &res); err != nil {
		return res, err
	}
	if err := <-published; err != nil {
		return res, err
	}
	if len(acked) != n {
		return res, fmt.Errorf("%d of %d messages acked", len(acked), n)
	}
	return res, nil
}

func publishN(ctx context.Context, ch *amqp.Channel, q string, n int) error {
	if err := ch.Confirm(false); err != nil {
		return err
	}
	var last *amqp.DeferredConfirmation
	for i := 1; i <= n; i++ {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", q, false, false, amqp.Publishing{
			DeliveryMode: amqp.Persistent, MessageId: strconv.Itoa(i), Body: []byte(strconv.Itoa(i)),
		})
		if err != nil {
			return fmt.Errorf("publish %d: %w", i, err)
		}
		last = dc
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ok, err := last.WaitContext(cctx) // confirms arrive in order (multiple)
	if err != nil || !ok {
		return fmt.Errorf("publish not confirmed: ok=%v %v", ok, err)
	}
	return nil
}

// consumeCycle runs one consumer: it acks every delivery and, once it has
// sent acksBeforeKill acks (0: never), settles as s says and closes its
// socket. With acksBeforeKill 0 it stops once every message was acked and
// the queue has nothing left, and closes cleanly.
func consumeCycle(ctx context.Context, url, q string, n, prefetch int, s settle, acksBeforeKill int, acked map[int]bool, res *ackLossResult) error {
	var (
		mu  sync.Mutex
		raw net.Conn
	)
	conn, err := amqp.DialConfig(url, amqp.Config{
		Heartbeat: 10 * time.Second,
		Dial: func(network, addr string) (net.Conn, error) {
			c, err := net.DialTimeout(network, addr, 3*time.Second)
			mu.Lock()
			raw = c
			mu.Unlock()
			return c, err
		},
	})
	if err != nil {
		return err
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	kill := func() {
		mu.Lock()
		_ = raw.Close()
		mu.Unlock()
		<-closed // the library has seen it
	}
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Qos(prefetch, 0, false)
	}
	var msgs <-chan amqp.Delivery
	if err == nil {
		msgs, err = ch.Consume(q, "", false, false, false, false, nil)
	}
	if err != nil {
		conn.Close()
		return err
	}
	acks := 0
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for {
		if acksBeforeKill == 0 && len(acked) == n {
			// Every message acked: wait for the queue to say it holds
			// nothing (a message acked but given back shows here).
			idle.Reset(150 * time.Millisecond)
		}
		select {
		case d, ok := <-msgs:
			if !ok {
				return errors.New("delivery channel closed")
			}
			id, _ := strconv.Atoi(string(d.Body))
			switch {
			case acked[id]:
				res.ackedAgain++
			case d.Redelivered:
				res.flagged++
			}
			// Work without sleeping: a sleep parks the goroutine for far
			// longer than short works ask, and paces the acks differently.
			for start := time.Now(); time.Since(start) < *acklossWork; {
			}
			if err := ch.Ack(d.DeliveryTag, false); err != nil {
				conn.Close()
				return err
			}
			acked[id] = true
			res.acks++
			acks++
			if acksBeforeKill > 0 && acks == acksBeforeKill {
				switch s {
				case settleRoundTrip:
					if err := ch.Qos(prefetch, 0, false); err != nil {
						conn.Close()
						return err
					}
				case settleWait:
					time.Sleep(50 * time.Millisecond)
				}
				kill()
				return nil
			}
		case <-idle.C:
			// Quiet, and everything acked: does the queue agree?
			probe, err := conn.Channel()
			if err != nil {
				conn.Close()
				return err
			}
			qi, err := probe.QueueDeclarePassive(q, true, false, false, false, nil)
			probe.Close()
			if err != nil {
				conn.Close()
				return err
			}
			if qi.Messages == 0 {
				time.Sleep(50 * time.Millisecond) // let the last acks apply before the close
				return conn.Close()
			}
			idle.Reset(150 * time.Millisecond)
		case <-ctx.Done():
			conn.Close()
			return ctx.Err()
		case <-time.After(20 * time.Second):
			conn.Close()
			return fmt.Errorf("no delivery for 20s (%d acked)", len(acked))
		}
	}
}

package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/brokers/rabbitmq"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/netfault"
	amqp "github.com/rabbitmq/amqp091-go"
)

// amqp091 stops every goroutine it starts once a connection is closed;
// toxiproxy can leave one per broken connection (netfault.StuckInToxiproxy).
func TestMain(m *testing.M) {
	var opts []goleak.Option
	for _, f := range netfault.StuckInToxiproxy {
		opts = append(opts, goleak.IgnoreTopFunction(f))
	}
	goleak.VerifyTestMain(m, opts...)
}

// envURL names the RabbitMQ to run the contract against (default the local
// one, amqp://guest:guest@127.0.0.1:5672/).
const envURL = "DQBENCH_RABBITMQ_URL"

func brokerURL() string {
	if v := os.Getenv(envURL); v != "" {
		return v
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

func config(url string, qt catalog.QueueType) brokers.Config {
	return brokers.Config{
		Kind: catalog.RabbitMQ, Mode: catalog.External, Addresses: []string{url},
		Settings: &catalog.RabbitMQSettings{QueueType: qt},
	}
}

// reachable skips the test when no RabbitMQ answers, unless
// DQBENCH_REQUIRE_BROKERS=1 (CI), where that is a failure.
func reachable(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := rabbitmq.Open(ctx, config(brokerURL(), catalog.ClassicQueue))
	if err != nil {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatalf("DQBENCH_REQUIRE_BROKERS=1 but: %v", err)
		}
		t.Skipf("no RabbitMQ to test against (%v); set %s or start one (docker compose up -d rabbitmq)", err, envURL)
	}
	b.Close()
}

func open(qt catalog.QueueType) func(t *testing.T) brokers.Broker {
	return func(t *testing.T) brokers.Broker {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		b, err := rabbitmq.Open(ctx, config(brokerURL(), qt))
		if err != nil {
			t.Fatalf("rabbitmq.Open: %v", err)
		}
		return b
	}
}

func TestClassicQueue(t *testing.T) {
	reachable(t)
	brokertest.Run(t, open(catalog.ClassicQueue))
}

func TestQuorumQueue(t *testing.T) {
	reachable(t)
	brokertest.Run(t, open(catalog.QuorumQueue))
}

// TestUnreachable: a closed port is ErrUnreachable, naming the address
// with its password masked and saying how to start a broker.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	start := time.Now()
	_, err = rabbitmq.Open(t.Context(), config("amqp://guest:s3cret-pw@"+addr+"/", catalog.ClassicQueue))
	if !errors.Is(err, brokers.ErrUnreachable) {
		t.Fatalf("Open on a closed port: %v, want ErrUnreachable", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "s3cret-pw") {
		t.Errorf("error %q shows the password", msg)
	}
	for _, want := range []string{"amqp://guest:***@" + addr, "docker compose up -d rabbitmq"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Open took %s to fail", d)
	}
}

// TestSilentPeer: a port that accepts and never answers fails within the
// dial timeout, not at the run's deadline.
func TestSilentPeer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err = rabbitmq.Open(ctx, config("amqp://u:pw-xyz@"+l.Addr().String()+"/", catalog.ClassicQueue))
	if !errors.Is(err, brokers.ErrUnreachable) || strings.Contains(err.Error(), "pw-xyz") {
		t.Fatalf("Open on a silent peer: %v, want ErrUnreachable without the password", err)
	}
}

// A RabbitMQ that answers but refuses the login or the virtual host says
// so, names the user and what to fix, and never says "start one".
func TestRefused(t *testing.T) {
	reachable(t)
	tests := []struct{ url, want string }{
		{"amqp://guest:wrong@127.0.0.1:5672/", `refused the login of user "guest" (403 ACCESS_REFUSED`},
		{"amqp://guest:guest@127.0.0.1:5672/dqbench-no-such-vhost", `refused virtual host "dqbench-no-such-vhost" to user "guest"`},
	}
	for _, tc := range tests {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		b, err := rabbitmq.Open(ctx, config(tc.url, catalog.ClassicQueue))
		cancel()
		if err == nil {
			b.Close()
			t.Fatalf("%s: connected", tc.url)
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "start one") || strings.Contains(err.Error(), ":wrong@") {
			t.Errorf("%s: error %q, want it to contain %q, mask the password and not say \"start one\"", tc.url, err, tc.want)
		}
	}
}

// TestVariantQueueType: a variant's rabbitmq: {queue_type: ...} override
// (DestinationSpec.Settings) decides its queue's type, whatever the
// broker's: the queue exists with that type (declaring it again with the
// other type is refused, PRECONDITION_FAILED).
func TestVariantQueueType(t *testing.T) {
	reachable(t)
	for _, tc := range []struct{ broker, variant, other catalog.QueueType }{
		{catalog.ClassicQueue, catalog.QuorumQueue, catalog.ClassicQueue},
		{catalog.QuorumQueue, catalog.ClassicQueue, catalog.QuorumQueue},
	} {
		b := open(tc.broker)(t)
		name := fmt.Sprintf("qtype-%d-%s", os.Getpid(), tc.variant)
		s := catalog.RabbitMQSettings{QueueType: tc.broker}.ForVariant(catalog.VariantKeys{
			Overrides: catalog.BrokerOverrides{RabbitMQ: &catalog.RabbitMQOverrides{QueueType: tc.variant}},
		})
		d, err := b.Open(t.Context(), brokers.DestinationSpec{Name: name, Prefetch: 1, Settings: s})
		if err != nil {
			b.Close()
			t.Fatal(err)
		}
		conn, err := amqp.Dial(brokerURL())
		if err != nil {
			t.Fatal(err)
		}
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		_, err = ch.QueueDeclare("dqbench-"+name, true, false, false, false, amqp.Table{amqp.QueueTypeArg: string(tc.other)})
		var aerr *amqp.Error
		if !errors.As(err, &aerr) || aerr.Code != amqp.PreconditionFailed {
			t.Errorf("broker %s, variant %s: declaring it %s gave %v, want PRECONDITION_FAILED (the queue is %s)", tc.broker, tc.variant, tc.other, err, tc.variant)
		}
		conn.Close()
		if err := d.Close(t.Context()); err != nil {
			t.Error(err)
		}
		b.Close()
	}
}

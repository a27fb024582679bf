package kafka_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/brokers/kafka"
	"github.com/dqbench/dqbench/brokers/kafka/cluster"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/testenv"
)

// kgo and kfake stop every goroutine they start on Close, so nothing needs
// ignoring.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// envAddrs names a real Kafka cluster to run the contract against, e.g.
// DQBENCH_KAFKA_ADDRS=127.0.0.1:9092 (docker compose up -d kafka).
const envAddrs = "DQBENCH_KAFKA_ADDRS"

func openKafka(t *testing.T, cfg brokers.Config) brokers.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := kafka.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("kafka.Open(%+v): %v", cfg, err)
	}
	return b
}

func TestEmbedded(t *testing.T) {
	brokertest.Run(t, func(t *testing.T) brokers.Broker {
		return openKafka(t, brokers.Config{Kind: catalog.Kafka, Mode: catalog.Embedded})
	})
}

// startCluster is an "external" cluster: kfake started apart from the
// adapter, reached only by address.
func startCluster(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func external(addrs []string) brokers.Config {
	return brokers.Config{Kind: catalog.Kafka, Mode: catalog.External, Addresses: addrs}
}

func TestExternal(t *testing.T) {
	addrs := startCluster(t)
	brokertest.Run(t, func(t *testing.T) brokers.Broker { return openKafka(t, external(addrs)) })
}

// TestRealKafka runs the broker contract against a real Apache Kafka,
// through dqbench's relays and Kafka protocol filter: the cluster at
// $DQBENCH_KAFKA_ADDRS, else a one-node managed cluster started from the
// jars (dqbench brokers fetch kafka).
func TestRealKafka(t *testing.T) {
	testenv.SkipShort(t, "Apache Kafka")
	addrs := strings.Split(os.Getenv(envAddrs), ",")
	if addrs[0] == "" {
		if _, err := cluster.FindInstall(); err != nil {
			testenv.Unavailable(t, "%v; or set %s=host:port[,host:port] to a running Kafka", err, envAddrs)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c, err := cluster.Start(ctx, cluster.Options{Dir: t.TempDir() + "/kafka", Nodes: 1, Owned: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Stop()
		addrs = c.Addrs()
	}
	brokertest.Run(t, func(t *testing.T) brokers.Broker { return openKafka(t, external(addrs)) })
}

// TestExternalCloseDeletesTopic: a run leaves nothing behind on a cluster
// it does not own.
func TestExternalCloseDeletesTopic(t *testing.T) {
	addrs := startCluster(t)
	b := openKafka(t, external(addrs))
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	// A fresh admin client for every look: kgo answers metadata requests
	// from a cache for a few seconds (MetadataMinAge).
	admin := func() *kadm.Client {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	topics := func() []string {
		t.Helper()
		td, err := admin().ListTopics(ctx)
		if err != nil {
			t.Fatalf("list topics: %v", err)
		}
		return td.Names()
	}
	groups := func() []string {
		t.Helper()
		gs, err := admin().ListGroups(ctx)
		if err != nil {
			t.Fatalf("list groups: %v", err)
		}
		return gs.Groups()
	}

	spec := brokertest.Spec(t, true)
	d, err := b.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	topic := "dqbench-" + spec.Name
	if got := topics(); !slices.Contains(got, topic) {
		t.Fatalf("after Open, topics %v lack %s", got, topic)
	}
	// Commit an offset so the group exists too.
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Publish(ctx, brokers.Message{Intent: 1, Attempt: 1, Key: brokers.Key(1)}, func(error) {})
	p.Close(ctx)
	c, err := d.Consumer(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	del, err := c.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ctx, del); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	if got := groups(); !slices.Contains(got, topic+"-group") {
		t.Fatalf("after a commit, groups %v lack %s-group", got, topic)
	}

	if err := d.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := topics(); slices.Contains(got, topic) {
		t.Errorf("after Close, topic %s is still there: %v", topic, got)
	}
	if got := groups(); slices.Contains(got, topic+"-group") {
		t.Errorf("after Close, group %s-group is still there: %v", topic, got)
	}
}

// TestExternalUnreachable: a closed port is ErrUnreachable, said in words.
func TestExternalUnreachable(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	addrs := c.ListenAddrs()
	c.Close() // nothing listens there now
	_, err = kafka.Open(t.Context(), external(addrs))
	if !errors.Is(err, brokers.ErrUnreachable) {
		t.Fatalf("Open on a closed port: %v, want ErrUnreachable", err)
	}
	if !strings.Contains(err.Error(), addrs[0]) {
		t.Errorf("error %q does not name the address %s", err, addrs[0])
	}
}

package cluster

import (
	"context"
	"errors"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dqbench/dqbench/brokers/localcluster"
	"github.com/dqbench/dqbench/internal/testenv"
)

// needKafka skips (or, where the services are required, fails) a test
// when no Kafka jars or Java are here.
func needKafka(t *testing.T) {
	t.Helper()
	if _, err := FindInstall(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
}

// TestPomVersion: the release Fetch copies is the one Version names.
func TestPomVersion(t *testing.T) {
	m := regexp.MustCompile(`<kafka.version>([^<]+)</kafka.version>`).FindSubmatch(pom)
	if m == nil || string(m[1]) != Version {
		t.Fatalf("pom.xml's kafka.version %q, Version %q: one fact, keep them equal", m, Version)
	}
}

// TestNotInstalled: without jars the error names the way to get them.
func TestNotInstalled(t *testing.T) {
	t.Setenv(HomeEnv, "")
	t.Setenv(CacheEnv, t.TempDir())
	_, err := FindInstall()
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("FindInstall in an empty cache: %v, want ErrNotInstalled", err)
	}
	for _, want := range []string{"dqbench brokers fetch kafka", HomeEnv} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(err.Error()) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// TestOneNode starts a one-node cluster, writes and reads a record through
// a group, and stops it: no process and no directory left.
func TestOneNode(t *testing.T) {
	testenv.SkipShort(t, "Apache Kafka")
	needKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir() + "/kafka"
	c, err := Start(ctx, Options{Dir: dir, Nodes: 1, Owned: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	t.Logf("started in %s (Kafka %s)", c.StartDur, c.Install.Version)
	if !c.Healthy() {
		t.Fatalf("not healthy after Start: %+v", c.Status())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	if n := fs.NumRecords(); n != 1 {
		t.Fatalf("read %d records, want 1", n)
	}
	cl.Close()
	pid := c.Nodes[0].PID
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if !localcluster.Gone(pid) {
		t.Errorf("node pid %d still runs after Stop", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Stop: %v", dir, err)
	}
}

// TestThreeNodesKillRestart: a three-node cluster, node 2 killed as a
// crash does (its pid gone, Status says so) and started again on its
// ports and data: the cluster is whole again.
func TestThreeNodesKillRestart(t *testing.T) {
	needKafka(t)
	if testing.Short() {
		t.Skip("-short: three JVMs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: t.TempDir() + "/kafka", Nodes: 3, Owned: true, TransactionVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	t.Logf("started in %s", c.StartDur)
	pid, err := c.Kill(1)
	if err != nil {
		t.Fatal(err)
	}
	if !localcluster.Gone(pid) {
		t.Fatalf("pid %d runs after Kill", pid)
	}
	if st := c.Status(); st[1].Running || !st[0].Running || !st[2].Running {
		t.Fatalf("after killing node 2: %+v", st)
	}
	began := time.Now()
	if err := c.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted in %s", time.Since(began))
	if !c.Healthy() {
		t.Fatalf("not healthy after Restart: %+v", c.Status())
	}
}

// TestClusterIDNeverAnOption: one id in 64 would start with "-", which
// kafka-storage format took for an option (a managed run failed so).
func TestClusterIDNeverAnOption(t *testing.T) {
	for range 5000 {
		if id := newClusterID(); id[0] == '-' || len(id) != 22 {
			t.Fatalf("cluster id %q", id)
		}
	}
}

package kafka

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/netfault"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bench is a kfake cluster of three brokers with a netfault.Relay in front
// of each, all running one filter set that rewrites every broker's address
// to its relay's; and a record of where the clients dialed.
type bench struct {
	relays   []*netfault.Relay
	accepted []atomic.Int32 // connections each relay took

	mu      sync.Mutex
	relayOf map[string]string // a broker's address → its relay's
	dialed  []string
	events  []Event
}

// newBench starts the cluster (topics of one partition each, unless
// partitions says otherwise) and the relays; fs gets its Rewrite and
// Observe from the bench.
func newBench(t *testing.T, fs *Filters, partitions int32, topics ...string) *bench {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	b := &bench{relayOf: map[string]string{}}
	fs.Rewrite = b.rewrite
	fs.Observe = b.observe
	addrs := cluster.ListenAddrs()
	b.accepted = make([]atomic.Int32, len(addrs))
	for i, addr := range addrs {
		r, err := netfault.NewRelay(addr, func(remote net.Addr) (up, down netfault.Filter, closed func()) {
			b.accepted[i].Add(1)
			return fs.Conn(remote)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		b.relays = append(b.relays, r)
		b.mu.Lock()
		b.relayOf[addr] = r.Addr
		b.mu.Unlock()
	}
	return b
}

// rewrite sends a client to the relay in front of the broker at host:port.
func (b *bench) rewrite(_ int32, host string, port int32) (string, int32) {
	b.mu.Lock()
	relay, ok := b.relayOf[net.JoinHostPort(host, strconv.Itoa(int(port)))]
	b.mu.Unlock()
	if !ok {
		return host, port
	}
	h, p, _ := net.SplitHostPort(relay)
	n, _ := strconv.Atoi(p)
	return h, int32(n)
}

func (b *bench) observe(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, e)
}

// fates lists the fates of the requests and responses of key observed.
func (b *bench) fates(key kmsg.Key) (requests, responses []Fate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.events {
		switch {
		case e.Key != key:
		case e.Response:
			responses = append(responses, e.Fate)
		default:
			requests = append(requests, e.Fate)
		}
	}
	return requests, responses
}

// client is a kgo client given the first relay as its only seed, which
// retries at once, and refreshes its metadata as often as asked (a cut
// produce request has kgo refresh metadata before it retries, by default
// no sooner than 5 s after the last refresh).
func (b *bench) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(b.relays[0].Addr),
		kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			b.mu.Lock()
			b.dialed = append(b.dialed, host)
			b.mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, host)
		}),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }),
		kgo.MetadataMinAge(10 * time.Millisecond),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// checkThroughRelays: every connection the clients opened went to a relay
// (kgo dials through the bench's Dialer, and each dial is one connection a
// relay took): none went to a broker directly.
func (b *bench) checkThroughRelays(t *testing.T) {
	t.Helper()
	relays := map[string]bool{}
	for _, r := range b.relays {
		relays[r.Addr] = true
	}
	b.mu.Lock()
	dialed := slices.Clone(b.dialed)
	b.mu.Unlock()
	for _, d := range dialed {
		if !relays[d] {
			t.Errorf("a client dialed %s, not a relay", d)
		}
	}
	// A relay takes a connection on its own goroutine, a moment after the
	// client's dial returned: wait for the last ones.
	taken := 0
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		taken = 0
		for i := range b.accepted {
			taken += int(b.accepted[i].Load())
		}
		if taken >= len(dialed) || time.Now().After(deadline) {
			break
		}
	}
	if taken != len(dialed) {
		t.Errorf("the relays took %d connections, the clients dialed %d", taken, len(dialed))
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// consume reads the topic's records from the start until n have come.
func consume(t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx(t))
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v (after %d records of %d)", err, len(recs), n)
		}
		recs = append(recs, fs.Records()...)
	}
	return recs
}

// TestThroughRelays: a producer and a group consumer given one relay as
// their seed reach the cluster's three brokers only through the relays:
// the metadata, the coordinator and the cluster's description they read
// name relays, and every connection they open is to one.
func TestThroughRelays(t *testing.T) {
	fs := &Filters{}
	b := newBench(t, fs, 3, "t")
	producer := b.client(t, kgo.DefaultProduceTopic("t"))
	const n = 30
	for i := 1; i <= n; i++ {
		if err := producer.ProduceSync(ctx(t), kgo.StringRecord(strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumer := b.client(t, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consume(t, consumer, n)
	if err := consumer.CommitUncommittedOffsets(ctx(t)); err != nil {
		t.Fatal(err)
	}
	described, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx(t), producer)
	if err != nil {
		t.Fatal(err)
	}
	relays := map[string]bool{}
	for _, r := range b.relays {
		relays[r.Addr] = true
	}
	for _, br := range described.Brokers {
		if addr := net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))); !relays[addr] {
			t.Errorf("DescribeCluster names broker %d at %s, not a relay", br.NodeID, addr)
		}
	}
	b.checkThroughRelays(t)
	for i := range b.accepted {
		if b.accepted[i].Load() == 0 {
			t.Errorf("no connection went through relay %d: the clients did not reach every broker", i)
		}
	}
	for _, key := range []kmsg.Key{kmsg.Metadata, kmsg.FindCoordinator, kmsg.DescribeCluster} {
		if _, resp := b.fates(key); !slices.Contains(resp, Rewritten) {
			t.Errorf("no %s response was rewritten (fates %v)", key.Name(), resp)
		}
	}
	versions := map[string]int16{}
	b.mu.Lock()
	for _, e := range b.events {
		versions[e.Key.Name()] = e.Version
	}
	b.mu.Unlock()
	t.Logf("versions the clients and kfake spoke: %v", versions)
}

// TestLostProduceResponse: the response to the first produce request
// carrying intent 1 is lost and the connection cut; the producer sends
// the record again on a new connection. Without idempotence the broker
// appends it twice, with idempotence once (it knows the retry by its
// sequence number). Lost is told of the intent; the retry, the intent's
// second attempt, is not hit.
func TestLostProduceResponse(t *testing.T) {
	for _, c := range []struct {
		name     string
		opts     []kgo.Opt
		appended int
	}{
		{"not idempotent", []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks())}, 2},
		{"idempotent", nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked [][2]int
			var lost [][]int
			fs := &Filters{LoseProduce: &LoseProduce{
				Intent: intentOf,
				Fires: func(intent, attempt int) bool {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, [2]int{intent, attempt})
					return intent == 1 && attempt == 1
				},
				Lost: func(intents []int) {
					mu.Lock()
					defer mu.Unlock()
					lost = append(lost, intents)
				},
			}}
			b := newBench(t, fs, 1, "lost")
			producer := b.client(t, append([]kgo.Opt{kgo.DefaultProduceTopic("lost")}, c.opts...)...)
			if err := producer.ProduceSync(ctx(t), &kgo.Record{Key: []byte("1"), Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if !slices.Equal(asked, [][2]int{{1, 1}, {1, 2}}) || len(lost) != 1 || !slices.Equal(lost[0], []int{1}) {
				t.Errorf("Fires was asked %v and Lost told %v; want [[1 1] [1 2]] and [[1]]", asked, lost)
			}
			mu.Unlock()
			if _, resp := b.fates(kmsg.Produce); !slices.Equal(resp, []Fate{Dropped, Passed}) {
				t.Errorf("produce responses %v, want one dropped, then one passed", resp)
			}

			ends, err := kadm.NewClient(producer).ListEndOffsets(ctx(t), "lost")
			if err != nil {
				t.Fatal(err)
			}
			end, _ := ends.Lookup("lost", 0)
			consumer := b.client(t, kgo.ConsumeTopics("lost"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			recs := consume(t, consumer, int(end.Offset))
			for _, r := range recs {
				if string(r.Key) != "1" {
					t.Errorf("a record with key %q", r.Key)
				}
			}
			if len(recs) != c.appended {
				t.Errorf("the record was appended %d times, want %d", len(recs), c.appended)
			}
			b.checkThroughRelays(t)
		})
	}
}

// TestOffsetCommitFaults: each action on the second OffsetCommit request
// (Seen 2): the client's commit still lands (it retries on a new
// connection after a cut), and the observer saw what the rule did. The
// second, because kgo does not retry when a connection's first request
// meets a closed connection (it takes that for missing SASL; AlwaysRetryEOF
// overrides), and the first commit is the first request on kgo's
// connection to the coordinator.
func TestOffsetCommitFaults(t *testing.T) {
	for _, c := range []struct {
		action    Action
		requests  []Fate // of the OffsetCommit requests
		responses []Fate // of their responses
	}{
		{DropRequest, []Fate{Passed, Dropped, Passed}, []Fate{Passed, Passed}},
		{CutAfterRequest, []Fate{Passed, CutAfter, Passed}, []Fate{Passed, Passed}},
		{DropResponse, []Fate{Passed, Passed, Passed}, []Fate{Passed, Dropped, Passed}},
		{DelayResponse, []Fate{Passed, Passed}, []Fate{Passed, Delayed}},
	} {
		t.Run(c.action.String(), func(t *testing.T) {
			var mu sync.Mutex
			var decided []string
			fs := &Filters{Rules: []Rule{{
				Key: kmsg.OffsetCommit, Action: c.action, Delay: 10 * time.Millisecond,
				When: func(r Request) bool {
					mu.Lock()
					defer mu.Unlock()
					decided = append(decided, fmt.Sprintf("%s %d", r.Body.(*kmsg.OffsetCommitRequest).Group, r.Seen))
					return r.Seen == 2
				},
			}}}
			b := newBench(t, fs, 1, "c")
			adm := kadm.NewClient(b.client(t))
			for _, at := range []int64{5, 7} {
				offsets := kadm.Offsets{}
				offsets.Add(kadm.Offset{Topic: "c", Partition: 0, At: at, LeaderEpoch: -1})
				resp, err := adm.CommitOffsets(ctx(t), "committer", offsets)
				if err == nil {
					err = resp.Error()
				}
				if err != nil {
					t.Fatalf("commit %d: %v", at, err)
				}
			}
			fetched, err := adm.FetchOffsets(ctx(t), "committer")
			if err != nil {
				t.Fatal(err)
			}
			if o, ok := fetched.Lookup("c", 0); !ok || o.At != 7 {
				t.Errorf("committed %+v, want offset 7", o)
			}
			requests, responses := b.fates(kmsg.OffsetCommit)
			if !slices.Equal(requests, c.requests) || !slices.Equal(responses, c.responses) {
				t.Errorf("OffsetCommit requests %v and responses %v, want %v and %v", requests, responses, c.requests, c.responses)
			}
			want := []string{"committer 1", "committer 2", "committer 3"}[:len(c.requests)]
			mu.Lock()
			if !slices.Equal(decided, want) {
				t.Errorf("When decided on %v, want %v", decided, want)
			}
			mu.Unlock()
			b.checkThroughRelays(t)
		})
	}
}

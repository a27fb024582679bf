package runner

import (
	"context"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/scenarios"
)

// TestEveryEmbeddedBuiltinMeetsItsExpectations runs each built-in scenario
// on an embedded broker as shipped (its message count and seed) and holds
// it to its own expectations: what `dqbench run NAME` promises. Built-ins
// on external brokers have their own tests. Skipped under the race
// detector, which the shorter runs in TestBuiltins cover.
//
// builtinsAtOnce of them run at a time: most of a built-in's time is
// waiting (a group rebalance after a crash, an ack_wait, a backoff), not
// CPU, and the built-ins share nothing but the machine. Their expectations
// are meant to hold on a loaded machine too.
func TestEveryEmbeddedBuiltinMeetsItsExpectations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("full-size built-in runs: not with -short or -race")
	}
	t.Parallel() // beside the managed-node and RabbitMQ built-in tests: all mostly waiting
	turns := newTurns(t, builtinsAtOnce)
	defer turns.wait()
	for _, name := range scenarios.Names() {
		s, err := scenario.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Broker.Mode != catalog.Embedded {
			continue
		}
		// The deadline guards a hung run, it is not an expectation: at
		// load 22 on 2 cores delivery-guarantees' 60 s ended a run at 5874
		// of 6000 acks. (TestBuiltins runs them as shipped, smaller.)
		s.Deadline = max(s.Deadline, scenario.Duration(10*time.Minute))
		turns.run(name, func(t *testing.T) { meetsItsExpectations(t, name, s) })
	}
}

// builtinsAtOnce is how many built-in runs a test makes at a time.
const builtinsAtOnce = 3

// turns runs a test's subtests n at a time (t.Run from several
// goroutines; -parallel bounds only t.Parallel tests).
type turns struct {
	t     *testing.T
	slots chan struct{}
	wg    sync.WaitGroup
}

func newTurns(t *testing.T, n int) *turns {
	return &turns{t: t, slots: make(chan struct{}, n)}
}

// run starts subtest name once a slot is free.
func (g *turns) run(name string, f func(*testing.T)) {
	g.slots <- struct{}{}
	g.wg.Go(func() {
		defer func() { <-g.slots }()
		g.t.Run(name, f)
	})
}

// wait waits for every subtest started; defer it, so that a t.Fatal of
// the parent waits too.
func (g *turns) wait() { g.wg.Wait() }

func meetsItsExpectations(t *testing.T, name string, s *scenario.Scenario) {
	if needsRedis(s) && !reachable(s.Redis) {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatalf("%s needs Redis at %s, which is not reachable", name, s.Redis)
		}
		t.Skipf("%s needs Redis at %s, which is not reachable", name, s.Redis)
	}
	res, err := runJudged(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if failedByKfakeReadCommitted(s, res) {
		// kfake's, under load: a read_committed consumer of the embedded
		// broker now and then gets records of aborted transactions, or
		// both copies of a restarted transactional producer's publish
		// (3 runs in 200 of kafka-eos-to-database, 0 in 200 on Apache
		// Kafka: docs/kafka-diff.md). Counted and shown in such a run;
		// here the lesson is run once more.
		t.Logf("%s: a read_committed variant failed on kfake's known read_committed anomaly (docs/kafka-diff.md); running it once more", name)
		if res, err = runJudged(t, context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	if !res.Run.Passed || !res.Run.Valid() {
		for _, v := range res.Run.Variants {
			t.Errorf("variant %s: passed %v, invalid %v, counts %+v, expectations %+v", v.Name, v.Passed, v.Invalid, v.Counts, v.Expectations)
		}
	}
}

// failedByKfakeReadCommitted says whether a run on the embedded Kafka
// failed only in read_committed variants, each only by records it should
// not have seen (duplicates or aborted records read).
func failedByKfakeReadCommitted(s *scenario.Scenario, res *judged) bool {
	if s.Broker.Kind != catalog.Kafka || s.Broker.Mode != catalog.Embedded || res.Run.Passed || !res.Run.Valid() {
		return false
	}
	byName := map[string]scenario.Variant{}
	for _, v := range s.Variants {
		byName[v.Name] = v
	}
	for _, v := range res.Run.Variants {
		if v.Passed {
			continue
		}
		ks, _ := s.BrokerSettingsFor(byName[v.Name]).(*catalog.KafkaSettings)
		if ks == nil || ks.Isolation != catalog.ReadCommitted || v.Counts.Lost != 0 || v.Counts.Duplicates == 0 && v.Counts.AbortedSeen == 0 {
			return false
		}
	}
	return true
}

func needsRedis(s *scenario.Scenario) bool {
	for _, v := range s.Variants {
		if st, ok := catalog.LookupStrategy(v.Strategy); ok && st.NeedsRedis {
			return true
		}
	}
	return false
}

func reachable(redisURL string) bool {
	u, err := url.Parse(redisURL)
	if err != nil || catalog.ParseRedis(redisURL) != nil {
		return false
	}
	c, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// TestFailedByKfakeReadCommitted: only a failure of read_committed
// variants by records they should not have seen is taken for kfake's
// anomaly; a failure elsewhere, or by a loss, is not.
func TestFailedByKfakeReadCommitted(t *testing.T) {
	s, err := scenario.Resolve("kafka-producer-restart")
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, c check.Counts) *judged {
		return &judged{Run: check.Run{Variants: []check.Variant{{Name: name, Passed: false, Counts: c}}}}
	}
	for _, tc := range []struct {
		res  *judged
		want bool
	}{
		{run("transactional", check.Counts{Duplicates: 4}), true},
		{run("transactional", check.Counts{Duplicates: 4, Lost: 1}), false},
		{run("idempotent", check.Counts{Duplicates: 4}), false}, // read_uncommitted
		{run("transactional", check.Counts{}), false},
	} {
		if got := failedByKfakeReadCommitted(s, tc.res); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.res.Run.Variants[0], got, tc.want)
		}
	}
}

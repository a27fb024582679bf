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
	if !res.Run.Passed || !res.Run.Valid() {
		for _, v := range res.Run.Variants {
			t.Errorf("variant %s: passed %v, invalid %v, counts %+v, expectations %+v", v.Name, v.Passed, v.Invalid, v.Counts, v.Expectations)
		}
	}
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

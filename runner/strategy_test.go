package runner

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/store"
	"github.com/dqbench/dqbench/strategy"
)

// memoryDedup is a strategy with in-memory state, as a test of the seam:
// each variant's instance remembers the message ids it applied, and
// forgets them when a consumer restarts, as a restarted process would.
type memoryDedup struct{}

func (memoryDedup) Setup(context.Context, strategy.Env) error { return nil }

func (memoryDedup) New(strategy.Env) (strategy.Instance, error) {
	inst := &memoryInstance{seen: map[string]bool{}}
	instances = append(instances, inst)
	return inst, nil
}

// instances are the memoryDedup instances made, for the test to inspect.
var instances []*memoryInstance

type memoryInstance struct {
	mu       sync.Mutex
	seen     map[string]bool
	restarts []int
	closed   int
}

var (
	_ strategy.Stateful        = memoryDedup{}
	_ strategy.RestartObserver = (*memoryInstance)(nil)
)

func (m *memoryInstance) Process(ctx context.Context, env strategy.Env, msg strategy.Message, _ strategy.CrashHook) (strategy.Outcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[msg.ID] {
		return strategy.Outcome{Reason: "duplicate: seen in memory"}, nil
	}
	if err := env.Store.Tx(ctx, func(tx store.Tx) error { return tx.Apply(msg.Effect) }); err != nil {
		return strategy.Outcome{}, err
	}
	m.seen[msg.ID] = true
	return strategy.Outcome{Applied: true}, nil
}

func (m *memoryInstance) ConsumerRestarted(gen int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.restarts = append(m.restarts, gen)
	clear(m.seen)
}

func (m *memoryInstance) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed++
	return nil
}

// TestStatefulStrategy: a strategy with state gets one instance per
// variant, is told of every consumer restart (the generation that
// crashed) and closed once. Its memory dies with the consumer, so each
// crash after the effect and before the ack duplicates, as with none;
// a variant whose consumers never crash applies each intent once.
func TestStatefulStrategy(t *testing.T) {
	const name catalog.StrategyName = "test-memory"
	catalog.Strategies = append(catalog.Strategies, catalog.Strategy{Name: name, Doc: "ids seen, in memory"})
	strategy.All[name] = memoryDedup{}
	t.Cleanup(func() {
		catalog.Strategies = catalog.Strategies[:len(catalog.Strategies)-1]
		delete(strategy.All, name)
		instances = nil
	})
	s := parse(t, `version: 1
name: stateful
messages: 200
broker: {kind: kafka}
faults:
  - {type: consumer-crash, at: after-effect-before-ack, every: 20}
variants:
  - {name: memory, strategy: test-memory}
`)
	res, err := runJudged(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	v := res.Run.Variants[0]
	if v.Duplicates != 10 || v.Lost != 0 || v.FaultsInjected != 10 {
		t.Errorf("want 10 duplicates (one per crash), 0 lost, 10 faults; got %+v", v.Counts)
	}
	if len(instances) != 1 {
		t.Fatalf("%d instances for one variant, want 1", len(instances))
	}
	inst := instances[0]
	if want := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}; !slices.Equal(inst.restarts, want) {
		t.Errorf("restarts told: %v, want the crashed generations %v", inst.restarts, want)
	}
	if inst.closed != 1 {
		t.Errorf("instance closed %d times, want 1", inst.closed)
	}
}

package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dqbench/dqbench/brokers"
)

// restartFault names broker-restart's meetings among the failovers (the
// power carries no fault name: one broker-restart per run).
const restartFault = "broker-restart"

// restartRule is broker-restart on a managed one-node Kafka: once the
// broker confirmed a publish of an intent the schedule picks, the node is
// killed (SIGKILL) and started again on its ports and directory, once for
// every variant that reaches the intent (they meet, as for a failover),
// while the producer that got the confirm waits. The other publishes in
// flight meet a dead broker and are retried by the client.
type restartRule struct {
	fires     func(intent, attempt int) bool
	restarted func(intent int)

	mu   sync.Mutex
	seen map[int]int // intent → confirms so far
}

// restartAfter arms broker-restart on the destination.
func (c proxiedDest) restartAfter(p brokers.RestartAfter) error {
	if c.k.managed == nil || len(c.k.managed.c.Nodes) != 1 {
		return errors.New("broker-restart kills and restarts the node of a one-node managed Kafka: use mode: managed with brokers: 1 (leader-failover kills a node of three)")
	}
	c.k.managed.failovers.join(restartFault)
	c.restart = &restartRule{fires: p.Fires, restarted: p.Restarted, seen: map[int]int{}}
	return nil
}

// confirmed is called once the broker confirmed intent's publish: it
// restarts the node where broker-restart says so.
func (c *topicDest) confirmed(intent int) {
	r := c.restart
	if r == nil {
		return
	}
	r.mu.Lock()
	r.seen[intent]++
	attempt := r.seen[intent]
	r.mu.Unlock()
	if !r.fires(intent, attempt) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), restartWait)
	defer cancel()
	f := &c.k.managed.failovers
	if _, err := f.once(ctx, round{restartFault, intent, attempt}, c, func(*topicDest) (string, error) {
		return c.k.restartNode(ctx)
	}); err == nil {
		r.restarted(intent)
	}
	// A node that does not come back shows as a drain that gives up.
}

// restartNode kills the one node of the managed cluster and starts it
// again.
func (k *Kafka) restartNode(ctx context.Context) (string, error) {
	c := k.managed.c
	pid, err := c.Kill(0)
	if err != nil {
		return "", fmt.Errorf("broker-restart: kill Kafka node %s: %w", c.Nodes[0].Name, err)
	}
	if err := c.Restart(ctx, 0); err != nil {
		return "", fmt.Errorf("broker-restart: start Kafka node %s again: %w", c.Nodes[0].Name, err)
	}
	return fmt.Sprintf("killed Kafka node %s (pid %d) with SIGKILL and started it again", c.Nodes[0].Name, pid), nil
}

package kafka

import (
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderMoves is a destination's leader-move fault: the moves run on their
// own goroutine (kfake's When callback may not call back into the cluster),
// one at a time, and Close waits for them.
type leaderMoves struct {
	fault   *kfake.FaultHandle
	mu      sync.Mutex // one move at a time
	wg      sync.WaitGroup
	startMu sync.Mutex // orders starting a move with stop
	stopped bool
}

// start runs move on its own goroutine unless the fault was stopped.
func (m *leaderMoves) start(move func()) {
	m.startMu.Lock()
	defer m.startMu.Unlock()
	if m.stopped {
		return
	}
	m.wg.Go(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		move()
	})
}

func (m *leaderMoves) stop() {
	m.startMu.Lock()
	m.stopped = true
	m.startMu.Unlock()
	if m.fault != nil {
		m.fault.Remove()
	}
	m.wg.Wait()
}

// MoveLeaders watches the produce requests to the variant's topic (without
// faulting them) and, for each that carries an intent fires picks, moves
// the leader of every partition of the variant's topics (the output topic
// too, with a stage) to the next broker.
func (c embeddedDest) MoveLeaders(fires func(intent, attempt int) bool, moved func(intent int, moves []string)) {
	var mu sync.Mutex
	sightings := map[int]int{}
	var last kmsg.Request
	nodes := int32(len(c.k.cluster.ListenAddrs()))
	topics := []string{c.topic}
	if c.stage != nil {
		topics = append(topics, c.stage.out)
	}
	c.moves.fault = c.k.cluster.Fault(kfake.Fault{
		Keys:    []kmsg.Key{kmsg.Produce},
		Topic:   c.topic,
		Count:   -1,
		Observe: true,
		When: func(req kmsg.Request) bool {
			mu.Lock()
			defer mu.Unlock()
			// kfake asks once per partition of a request: sight its
			// intents once.
			if req == last {
				return true
			}
			last = req
			for _, in := range producedIntents(req.(*kmsg.ProduceRequest)) {
				sightings[in]++
				if !fires(in, sightings[in]) {
					continue
				}
				c.moves.start(func() {
					var done []string
					for _, t := range topics {
						for p := range c.k.partitions {
							from := c.k.cluster.LeaderFor(t, p)
							to := (from + 1) % nodes
							if from < 0 || c.k.cluster.MoveTopicPartition(t, p, to) != nil {
								continue
							}
							done = append(done, fmt.Sprintf("%s[%d]: broker %d → %d", t, p, from, to))
						}
					}
					moved(in, done)
				})
			}
			return true
		},
	})
}

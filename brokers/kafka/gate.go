package kafka

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// gate lets the group rebalance only where the consumer owns nothing it has
// not committed: between polls, with every ack returned. A consumer that
// polled records, lost their partition in a rebalance and committed them
// afterwards would have them fetched again by the partition's new owner:
// duplicates that depend on when the rebalance came, not on any fault. With
// the gate (kgo's BlockRebalanceOnPoll), a rebalance that wants this member
// waits until the records it polled are processed and acked, and a
// partition moves only with its commits in.
type gate struct {
	cl *kgo.Client

	mu       sync.Mutex
	acked    *sync.Cond // signalled when acks reaches 0
	acks     int        // acks (commits) under way
	wanted   bool       // a rebalance waits for this member
	stopPoll context.CancelFunc
}

// opts are the client options the gate needs.
func (g *gate) opts() []kgo.Opt {
	g.acked = sync.NewCond(&g.mu)
	return []kgo.Opt{kgo.BlockRebalanceOnPoll(), kgo.OnPartitionsCallbackBlocked(g.wait)}
}

// wait is kgo's signal that a rebalance is blocked on this member: the
// poll under way, if any, stops so that the next one lets it through.
func (g *gate) wait(context.Context, *kgo.Client) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.wanted = true
	if g.stopPoll != nil {
		g.stopPoll()
	}
}

// poll polls up to max records once every record polled before has been
// handed out (the caller's buffer is empty). A rebalance waiting for this
// member goes first, once the acks under way have returned.
func (g *gate) poll(ctx context.Context, max int) kgo.Fetches {
	g.mu.Lock()
	if g.wanted {
		for g.acks > 0 {
			g.acked.Wait()
		}
		g.wanted = false
		g.cl.AllowRebalance()
	}
	pctx, stop := context.WithCancel(ctx)
	g.stopPoll = stop
	g.mu.Unlock()
	fs := g.cl.PollRecords(pctx, max)
	g.mu.Lock()
	g.stopPoll = nil
	g.mu.Unlock()
	stop()
	return fs
}

// ack runs commit, an ack of polled records, as one of those under way.
func (g *gate) ack(commit func() error) error {
	g.mu.Lock()
	g.acks++
	g.mu.Unlock()
	err := commit()
	g.mu.Lock()
	if g.acks--; g.acks == 0 {
		g.acked.Broadcast()
	}
	g.mu.Unlock()
	return err
}

// open lets any rebalance through: the member leaves or dies, and commits
// nothing more.
func (g *gate) open() { g.cl.AllowRebalance() }

package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// gate lets the group rebalance only where the consumer owns nothing it has
// not committed: between polls, with every record it handed out acked. A
// consumer that polled records, lost their partition in a rebalance and
// committed them afterwards would have them fetched again by the
// partition's new owner: duplicates that depend on when the rebalance
// came, not on any fault. With the gate (kgo's BlockRebalanceOnPoll), a
// rebalance that wants this member waits until the records it polled are
// processed and their acks have returned, and a partition moves only with
// its commits in.
//
// On Kafka every delivery is acked or its instance ends (a crash, a
// zombie, the run's end: open); the wait is bounded all the same
// (gateWait), so a delivery left unacked by a bug delays a rebalance
// instead of hanging the group.
type gate struct {
	cl *kgo.Client

	mu       sync.Mutex
	settled  *sync.Cond // signalled when out reaches 0
	out      int        // records handed out and not yet acked
	wanted   bool       // a rebalance waits for this member
	stopPoll context.CancelFunc
}

// gateWait bounds how long a rebalance waits for the acks of the records
// this member handed out; kgo's rebalance timeout is 60 s.
const gateWait = 10 * time.Second

// opts are the client options the gate needs.
func (g *gate) opts() []kgo.Opt {
	g.settled = sync.NewCond(&g.mu)
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
// member goes first, once the records handed out are acked.
func (g *gate) poll(ctx context.Context, max int) kgo.Fetches {
	g.mu.Lock()
	if g.wanted {
		if g.out > 0 {
			t := time.AfterFunc(gateWait, func() {
				g.mu.Lock()
				g.out = 0
				g.settled.Broadcast()
				g.mu.Unlock()
			})
			for g.out > 0 {
				g.settled.Wait()
			}
			t.Stop()
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
	g.out += fs.NumRecords()
	g.mu.Unlock()
	stop()
	return fs
}

// ack runs commit, the ack of n records handed out.
func (g *gate) ack(n int, commit func() error) error {
	err := commit()
	g.mu.Lock()
	if g.out = max(g.out-n, 0); g.out == 0 {
		g.settled.Broadcast()
	}
	g.mu.Unlock()
	return err
}

// open lets any rebalance through: the member leaves or dies, and commits
// nothing more.
func (g *gate) open() { g.cl.AllowRebalance() }

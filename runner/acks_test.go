package runner

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/recording"
)

// batchConsumer is a consumer whose acks are batches; the first batch
// blocks until release is closed.
type batchConsumer struct {
	entered chan struct{} // closed when the first batch is taken
	release chan struct{}
	mu      sync.Mutex
	batches [][]int
}

func (c *batchConsumer) Next(context.Context) (brokers.Delivery, error) {
	return brokers.Delivery{}, io.EOF
}
func (c *batchConsumer) Ack(context.Context, brokers.Delivery) error { panic("Ack on a batch acker") }
func (c *batchConsumer) Abandon()                                    {}
func (c *batchConsumer) Close(context.Context)                       {}
func (c *batchConsumer) AckBatch(_ context.Context, ds []brokers.Delivery) error {
	c.mu.Lock()
	first := len(c.batches) == 0
	var intents []int
	for _, d := range ds {
		intents = append(intents, d.Intent)
	}
	c.batches = append(c.batches, intents)
	c.mu.Unlock()
	if first {
		close(c.entered)
		<-c.release
	}
	return nil
}

// TestAckBatches: with one commit in flight, what is settled meanwhile goes
// out in one batch after it, in order; wait returns once every ack is
// done, each recorded once, and the in-flight count is back to zero.
func TestAckBatches(t *testing.T) {
	inner := &batchConsumer{entered: make(chan struct{}), release: make(chan struct{})}
	rec := history.NewRecorder(time.Now(), io.Discard).Variant("v")
	c := recording.NewConsumer(inner, 1, recording.NewDeliveries(10), rec)
	r := &variantRun{progress: new(Progress), start: time.Now(), rec: rec}
	r.flow.init(10)
	b := &ackBatcher{ctx: context.Background(), r: r, c: c}
	b.idle = sync.NewCond(&b.mu)
	p := &pendingAck{batch: b}
	for i := 1; i <= 4; i++ {
		r.flow.inflight.Add(1)
		p.start(context.Background(), r, c, brokers.Delivery{Intent: i, Attempt: 1})
		if err := p.beforeNext(); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			<-inner.entered // the first commit is in flight
		}
	}
	close(inner.release)
	if err := p.wait(); err != nil {
		t.Fatal(err)
	}
	if want := [][]int{{1}, {2, 3, 4}}; !slices.EqualFunc(inner.batches, want, slices.Equal) {
		t.Errorf("batches %v, want %v", inner.batches, want)
	}
	if n := r.flow.inflight.Load(); n != 0 {
		t.Errorf("in flight %d after wait, want 0", n)
	}
	if n := r.flow.acked.Load(); n != 4 {
		t.Errorf("%d intents acked, want 4", n)
	}
}

// TestAckPaceCutShort: with a pace between commit requests, what is settled
// after the first request waits for the next one; a wait (a crash point
// where a fault is armed, the end of the instance) sends it at once instead
// of waiting out the pace.
func TestAckPaceCutShort(t *testing.T) {
	inner := &batchConsumer{entered: make(chan struct{}), release: make(chan struct{})}
	close(inner.release)
	rec := history.NewRecorder(time.Now(), io.Discard).Variant("v")
	c := recording.NewConsumer(inner, 1, recording.NewDeliveries(10), rec)
	r := &variantRun{progress: new(Progress), start: time.Now(), rec: rec}
	r.flow.init(10)
	b := &ackBatcher{ctx: context.Background(), r: r, c: c, pace: time.Hour, hurry: make(chan struct{}, 1)}
	b.idle = sync.NewCond(&b.mu)
	p := &pendingAck{batch: b}
	for i := 1; i <= 3; i++ {
		r.flow.inflight.Add(1)
		p.start(context.Background(), r, c, brokers.Delivery{Intent: i, Attempt: 1})
		if i == 1 {
			<-inner.entered // the first request went out without a pause
		}
	}
	waited := make(chan error, 1)
	go func() { waited <- p.wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not cut the pace (an hour) short")
	}
	if want := [][]int{{1}, {2, 3}}; !slices.EqualFunc(inner.batches, want, slices.Equal) {
		t.Errorf("batches %v, want %v", inner.batches, want)
	}
	if n := r.flow.inflight.Load(); n != 0 {
		t.Errorf("in flight %d after wait, want 0", n)
	}
}

package runner

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/recording"
	"github.com/dqbench/dqbench/scenario"
)

// silentFirst never answers an intent's first attempt until released, and
// confirms every later attempt at once.
type silentFirst struct {
	mu      sync.Mutex
	pending []func(error)
}

func (p *silentFirst) Publish(_ context.Context, m brokers.Message, done func(error)) {
	if m.Attempt == 1 {
		p.mu.Lock()
		p.pending = append(p.pending, done)
		p.mu.Unlock()
		return
	}
	done(nil)
}

func (p *silentFirst) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, done := range p.pending {
		done(nil)
	}
	p.pending = nil
}

func (p *silentFirst) Close(context.Context) {}

// TestSendRetriesAfterConfirmTimeout: an attempt with no confirm within
// the timeout is given up (pub-failed), the intent is published again with
// the next attempt number, and the late confirm of the first attempt is
// still recorded.
func TestSendRetriesAfterConfirmTimeout(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(time.Now(), &buf)
	r := &variantRun{s: &scenario.Scenario{Seed: 1}, rec: rec.Variant("v")}
	raw := &silentFirst{}
	p := recording.NewProducer(raw, r.rec)
	outcome := make(chan error, 1)
	r.send(context.Background(), p, 7, retryPolicy{retries: 2, timeout: 10 * time.Millisecond}, func(err error) { outcome <- err })
	if err := <-outcome; err != nil {
		t.Fatalf("send: %v, want the second attempt confirmed", err)
	}
	raw.release()
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	events, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, string(e.Type)+"#"+string(rune('0'+e.Attempt)))
	}
	want := []string{"publish#1", "pub-failed#1", "publish#2", "confirm#2", "confirm#1"}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
}

// TestSendGivesUpAfterRetries: with every attempt failing, the intent is
// published retries+1 times and done gets the last error.
func TestSendGivesUpAfterRetries(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(time.Now(), &buf)
	r := &variantRun{s: &scenario.Scenario{Seed: 1}, rec: rec.Variant("v")}
	p := recording.NewProducer(failing{}, r.rec)
	outcome := make(chan error, 1)
	r.send(context.Background(), p, 3, retryPolicy{retries: 2}, func(err error) { outcome <- err })
	if err := <-outcome; err == nil {
		t.Fatal("send succeeded, want the last attempt's error")
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	events, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	publishes := 0
	for _, e := range events {
		if e.Type == history.Publish {
			publishes++
			if e.Attempt != publishes {
				t.Errorf("publish %d has attempt %d", publishes, e.Attempt)
			}
		}
	}
	if publishes != 3 {
		t.Errorf("%d publishes, want 3 (1 + 2 retries)", publishes)
	}
}

// failing fails every publish with an unknown outcome.
type failing struct{}

func (failing) Publish(_ context.Context, _ brokers.Message, done func(error)) {
	done(errors.New("channel closed before the publisher confirm: outcome unknown"))
}

func (failing) Close(context.Context) {}

// TestSendNeverRetriesFireAndForget: a send without confirmation (Kafka
// acks: none, RabbitMQ confirms: false) tells the application nothing, so
// it is published once whatever producer.retries says.
func TestSendNeverRetriesFireAndForget(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(time.Now(), &buf)
	r := &variantRun{s: &scenario.Scenario{Seed: 1}, rec: rec.Variant("v")}
	p := recording.NewProducer(unconfirmed{}, r.rec)
	outcome := make(chan error, 1)
	r.send(context.Background(), p, 3, retryPolicy{retries: 2}, func(err error) { outcome <- err })
	if err := <-outcome; !errors.Is(err, brokers.ErrUnconfirmed) {
		t.Fatalf("send ended with %v, want ErrUnconfirmed", err)
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	events, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	publishes := 0
	for _, e := range events {
		if e.Type == history.Publish {
			publishes++
		}
	}
	if publishes != 1 {
		t.Errorf("%d publishes, want 1 (nothing to retry on)", publishes)
	}
}

// unconfirmed sends without confirmation.
type unconfirmed struct{}

func (unconfirmed) Publish(_ context.Context, _ brokers.Message, done func(error)) {
	done(brokers.ErrUnconfirmed)
}

func (unconfirmed) Close(context.Context) {}

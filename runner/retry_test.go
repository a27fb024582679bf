package runner

import (
	"bytes"
	"context"
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

type failing struct{}

func (failing) Publish(_ context.Context, _ brokers.Message, done func(error)) {
	done(brokers.ErrUnconfirmed)
}

func (failing) Close(context.Context) {}

// TestSendWaitsTheBackoff: each retry is sent no earlier than the
// backoff's wait after the attempt before it failed, and the jittered
// waits are the same on every run of a seed.
func TestSendWaitsTheBackoff(t *testing.T) {
	b := &scenario.Backoff{Policy: scenario.ExponentialBackoff, Delay: scenario.Duration(20 * time.Millisecond), Jitter: 0.5}
	policy := retryPolicy{retries: 2, backoff: b}
	var buf bytes.Buffer
	rec := history.NewRecorder(time.Now(), &buf)
	r := &variantRun{s: &scenario.Scenario{Seed: 7}, rec: rec.Variant("v")}
	p := recording.NewProducer(failing{}, r.rec)
	outcome := make(chan error, 1)
	r.send(context.Background(), p, 3, policy, func(err error) { outcome <- err })
	<-outcome
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	events, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var failed time.Duration
	retries := 0
	for _, e := range events {
		switch e.Type {
		case history.PubFailed:
			failed = e.T
		case history.Publish:
			if e.Attempt == 1 {
				continue
			}
			want := policy.wait(7, 3, e.Attempt)
			retries++
			if want < 10*time.Millisecond<<(e.Attempt-2) {
				t.Fatalf("attempt %d: wait %v, want at least half of %v (jitter 0.5)", e.Attempt, want, 20*time.Millisecond<<(e.Attempt-2))
			}
			if gap := e.T - failed; gap < want {
				t.Errorf("attempt %d sent %v after the failure before it, want at least the backoff's %v", e.Attempt, gap, want)
			}
		}
	}
	if retries != 2 {
		t.Errorf("%d retries, want 2", retries)
	}
}

// crashedFirst fails an intent's first attempt as a producer-crash would,
// and confirms the later ones.
type crashedFirst struct{}

func (crashedFirst) Publish(_ context.Context, m brokers.Message, done func(error)) {
	if m.Attempt == 1 {
		done(brokers.ErrProducerCrashed)
		return
	}
	done(nil)
}

func (crashedFirst) Close(context.Context) {}

// TestSendResendsAfterAProducerCrash: with no retries, a publish ended by
// a producer crash is still sent again (the restarted producer resends),
// at once.
func TestSendResendsAfterAProducerCrash(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(time.Now(), &buf)
	r := &variantRun{s: &scenario.Scenario{Seed: 1}, rec: rec.Variant("v")}
	p := recording.NewProducer(crashedFirst{}, r.rec)
	outcome := make(chan error, 1)
	r.send(context.Background(), p, 5, retryPolicy{backoff: &scenario.Backoff{Delay: scenario.Duration(time.Hour)}}, func(err error) { outcome <- err })
	select {
	case err := <-outcome:
		if err != nil {
			t.Fatalf("send: %v, want the resend confirmed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the resend waited: a restarted producer resends at once, without the retry backoff")
	}
}

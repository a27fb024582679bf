package recording_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/recording"
)

// heldProducer keeps each publish's done, to answer it later.
type heldProducer struct{ done []func(error) }

func (h *heldProducer) Publish(_ context.Context, _ brokers.Message, done func(error)) {
	h.done = append(h.done, done)
}
func (h *heldProducer) Close(context.Context) {}

// TestGaveUpRecordedOnce: an attempt the application gave up at
// confirm_timeout is one pub-failed, also when the client fails it later
// (at Close); a late confirm of another given-up attempt is recorded.
func TestGaveUpRecordedOnce(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(time.Now(), &buf)
	held := &heldProducer{}
	p := recording.NewProducer(held, rec.Variant("v"))
	for intent := 1; intent <= 2; intent++ {
		p.Publish(context.Background(), brokers.Message{Intent: intent, Attempt: 1}, func(error) {})
		p.GaveUp(intent, 1, "no confirm within producer.confirm_timeout")
	}
	held.done[0](errors.New("channel closed before its confirm"))
	held.done[1](nil)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	events, err := history.Read(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[history.Type]int{}
	for _, e := range events {
		got[e.Type]++
	}
	if got[history.PubFailed] != 2 || got[history.Confirm] != 1 {
		t.Errorf("events %v: want 2 pub-failed (one per given-up attempt) and the late confirm", got)
	}
}

// TestFireAndForgetRecorded: a send that asks for no confirm
// (brokers.ErrUnconfirmed, wrapped or not) is a pub-failed with
// fire_and_forget; another failure is not.
func TestFireAndForgetRecorded(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(time.Now(), &buf)
	held := &heldProducer{}
	p := recording.NewProducer(held, rec.Variant("v"))
	for intent := 1; intent <= 2; intent++ {
		p.Publish(context.Background(), brokers.Message{Intent: intent, Attempt: 1}, func(error) {})
	}
	held.done[0](fmt.Errorf("mqtt: %w", brokers.ErrUnconfirmed))
	held.done[1](errors.New("timed out"))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	want := map[int]bool{1: true, 2: false}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if !strings.Contains(line, `"type":"pub-failed"`) {
			continue
		}
		intent := 1
		if strings.Contains(line, `"intent":2`) {
			intent = 2
		}
		if got := strings.Contains(line, `"fire_and_forget":true`); got != want[intent] {
			t.Errorf("intent %d: %s; want fire_and_forget %v", intent, line, want[intent])
		}
		delete(want, intent)
	}
	if len(want) > 0 {
		t.Errorf("no pub-failed for intents %v", want)
	}
}

package recording_test

import (
	"bytes"
	"context"
	"errors"
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

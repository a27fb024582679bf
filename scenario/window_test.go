package scenario

import (
	"testing"
	"time"

	"github.com/dqbench/dqbench/check"
)

// Plan gives each variant the dedup window of its strategy (redis-setnx
// ttl, with its default; dedup-table retention), or none when its ids are
// kept for good, for the report to set against the redelivery gap.
func TestPlanWindow(t *testing.T) {
	s, err := Parse("window.yaml", []byte(`version: 1
name: window
broker: {kind: kafka}
variants:
  - {name: ttl, strategy: redis-setnx, ttl: 5ms}
  - {name: ttl-default, strategy: redis-setnx}
  - {name: retention, strategy: dedup-table, retention: 1h}
  - {name: forever, strategy: dedup-table}
  - {name: none, strategy: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []*check.Window{
		{Key: "ttl", D: 5 * time.Millisecond},
		{Key: "ttl", D: time.Minute},
		{Key: "retention", D: time.Hour},
		nil,
		nil,
	}
	for i, v := range s.Plan().Variants {
		got := v.Window
		if (got == nil) != (want[i] == nil) || got != nil && *got != *want[i] {
			t.Errorf("%s: window %+v, want %+v", v.Name, got, want[i])
		}
		if v.PublishWindow != nil {
			t.Errorf("%s: publish window %+v on kafka, want none", v.Name, v.PublishWindow)
		}
	}
}

// On NATS with msg_id business the stream's duplicate_window (the
// variant's own, else the broker's, else JetStream's 2m) is the publish
// window; with another msg_id the stream drops no retry: none.
func TestPlanPublishWindow(t *testing.T) {
	s, err := Parse("window.yaml", []byte(`version: 1
name: window
broker: {kind: nats, duplicate_window: 30s}
variants:
  - {name: business, strategy: none}
  - {name: short, strategy: none, nats: {duplicate_window: 1s}}
  - {name: none, strategy: none, nats: {msg_id: none}}
  - {name: per-send, strategy: none, nats: {msg_id: per-send-uuid}}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []*check.Window{
		{Key: "duplicate_window", D: 30 * time.Second},
		{Key: "duplicate_window", D: time.Second},
		nil,
		nil,
	}
	for i, v := range s.Plan().Variants {
		got := v.PublishWindow
		if (got == nil) != (want[i] == nil) || got != nil && *got != *want[i] {
			t.Errorf("%s: publish window %+v, want %+v", v.Name, got, want[i])
		}
	}
}

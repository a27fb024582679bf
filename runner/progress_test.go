package runner

import (
	"context"
	"testing"
)

// TestProgressPerVariant: each variant counts its own publishes and acks
// against its own total (the messages), not the run's sum.
func TestProgressPerVariant(t *testing.T) {
	s := parse(t, `
version: 1
name: progress
messages: 300
broker: {kind: kafka}
variants:
  - {name: a, strategy: none}
  - {name: b, strategy: dedup-table}
`)
	p := &Progress{}
	if p.Variants() != nil {
		t.Fatal("variants before the run began")
	}
	if _, err := Run(context.Background(), s, Options{History: discard{}, Progress: p}); err != nil {
		t.Fatal(err)
	}
	vs := p.Variants()
	if len(vs) != 2 || vs[0].Name != "a" || vs[1].Name != "b" {
		t.Fatalf("variants %+v, want a and b", vs)
	}
	for _, v := range vs {
		if v.Total != 300 || v.Published.Load() != 300 || v.Consumed.Load() < 300 {
			t.Errorf("variant %s: total %d, published %d, acked %d; want 300, 300, at least 300", v.Name, v.Total, v.Published.Load(), v.Consumed.Load())
		}
	}
	if p.Total.Load() != 600 || p.Published.Load() != 600 {
		t.Errorf("run: total %d, published %d; want 600, 600", p.Total.Load(), p.Published.Load())
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

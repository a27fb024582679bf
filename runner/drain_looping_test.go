package runner

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/internal/testenv"
	"github.com/dqbench/dqbench/scenario"
)

// TestRequeuedThenAckedNotLooping: a delivery requeued after a transient
// failure, and acked when it came back, is not left looping. The drain of
// consumer-transient-failure, whose only failures are transient, ends
// drained with no looping messages and no reason; it once waited out its
// whole period and claimed 20 "poison messages left looping", all acked.
func TestRequeuedThenAckedNotLooping(t *testing.T) {
	s, err := scenario.Resolve("consumer-transient-failure")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:5672", time.Second); err != nil {
		testenv.Unavailable(t, "consumer-transient-failure needs RabbitMQ at 127.0.0.1:5672: %v", err)
	} else {
		c.Close()
	}
	res := passed(t, s)
	events, err := history.Read(strings.NewReader(string(res.History)))
	if err != nil {
		t.Fatal(err)
	}
	drains := 0
	for _, e := range events {
		if e.Type != history.Drain {
			continue
		}
		drains++
		if !e.Drained || len(e.Intents) > 0 || e.Reason != "" {
			t.Errorf("%s: drain drained %v, looping %v, reason %q: want drained, nothing looping", e.Variant, e.Drained, e.Intents, e.Reason)
		}
	}
	if drains != len(s.Variants) {
		t.Errorf("%d drain events for %d variants", drains, len(s.Variants))
	}
}

package runner

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/scenario"
)

// TestInterruptInventsNoLoss interrupts built-ins mid-run (their context
// cancelled, as Ctrl-C does, once some deliveries were acked): the run is
// INCOMPLETE, every variant's history says it was interrupted, no
// expectation is judged (SKIP, never FAIL), and no loss has a cause the
// variant cannot produce: a consumer that acks after processing never
// loses a delivery unprocessed (the one in its hands at the interrupt was
// in flight, not lost), and a strategy that holds loses nothing.
func TestInterruptInventsNoLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("several runs of built-ins: not with -short")
	}
	for _, tc := range []struct {
		name string
		// holds are the variants that lose nothing, whenever the run ends.
		holds []string
	}{
		{"quickstart", []string{"none", "dedup-table"}},
		{"delivery-guarantees", []string{"at-least-once", "effectively-once"}},
	} {
		for _, acked := range []int64{50, 400, 1500} {
			s, err := scenario.Resolve(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			s.Messages = 100000 // far from its end when interrupted
			s.Deadline = scenario.Duration(time.Minute)
			ctx, cancel := context.WithCancel(context.Background())
			progress := &Progress{}
			go func() {
				defer cancel()
				for progress.Consumed.Load() < acked {
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Millisecond):
					}
				}
			}()
			var buf bytes.Buffer
			res, runErr := Run(ctx, s, Options{History: &buf, Progress: progress})
			cancel()
			if res == nil {
				t.Fatalf("%s: no result: %v", tc.name, runErr)
			}
			interrupted := map[string]bool{}
			for e, err := range history.Scan(bytes.NewReader(buf.Bytes())) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Type == history.Interrupted {
					interrupted[e.Variant] = true
				}
			}
			run, err := check.Judge(s.Plan(), res.Meta, history.Scan(&buf), res.Audits)
			if err != nil {
				t.Fatal(err)
			}
			if run.Verdict() != check.VerdictIncomplete {
				t.Errorf("%s interrupted after %d acks: verdict %s (%v), want INCOMPLETE", tc.name, acked, run.Verdict(), runErr)
			}
			for _, v := range run.Variants {
				if !interrupted[v.Name] {
					t.Errorf("%s, variant %s: no interrupted event in its history", tc.name, v.Name)
				}
				for _, e := range v.Expectations {
					if !e.Skipped || e.Passed {
						t.Errorf("%s interrupted after %d acks, variant %s: %s %s (got %d), want SKIP", tc.name, acked, v.Name, e.Verdict(), e.Check, e.Actual)
					}
				}
				ack := s.ConsumerFor(variantNamed(s, v.Name)).Ack
				if n := v.LostByCause[string(check.LostUnprocessed)]; n > 0 && ack == catalog.AckAfterProcess {
					t.Errorf("%s interrupted after %d acks, variant %s (ack %s): %d lost unprocessed, a cause it cannot produce", tc.name, acked, v.Name, ack, n)
				}
				for _, name := range tc.holds {
					if v.Name == name && v.Lost > 0 {
						t.Errorf("%s interrupted after %d acks, variant %s: lost %d (%v), want 0", tc.name, acked, v.Name, v.Lost, v.LostByCause)
					}
				}
			}
		}
	}
}

func variantNamed(s *scenario.Scenario, name string) scenario.Variant {
	for _, v := range s.Variants {
		if v.Name == name {
			return v
		}
	}
	return scenario.Variant{}
}

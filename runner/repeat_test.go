package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/testenv"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/scenarios"
)

// TestBuiltinsRepeat runs every built-in DQBENCH_REPEAT times with its own
// seed (`make repeat`) and fails when a count differs between the runs
// without the variant's `varies` naming it: the same seed gives the same
// counts, or the scenario says which count does not, and why. Minutes
// long, so not in `go test ./...`. DQBENCH_REPEAT_ONLY=a,b limits it to
// those built-ins; a built-in whose broker is not here is skipped.
func TestBuiltinsRepeat(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("DQBENCH_REPEAT"))
	if runs < 2 {
		t.Skip("set DQBENCH_REPEAT=N (N >= 2) to run every built-in N times: make repeat")
	}
	only := os.Getenv("DQBENCH_REPEAT_ONLY")
	for _, name := range scenarios.Names() {
		if only != "" && !slices.Contains(strings.Split(only, ","), name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var seen []map[string]check.Variant
			for i := range runs {
				s, err := scenario.Resolve(name)
				if err != nil {
					t.Fatal(err)
				}
				if needsRedis(s) && !reachable(s.Redis) {
					testenv.Unavailable(t, "needs Redis at %s", s.Redis)
				}
				ctx, cancel := context.WithTimeout(context.Background(), s.Deadline.D()+time.Minute)
				res, err := runJudged(t, ctx, s)
				cancel()
				if errors.Is(err, brokers.ErrUnreachable) {
					t.Skipf("broker not here: %v", err)
				}
				if err != nil {
					t.Fatalf("run %d: %v", i+1, err)
				}
				byName := map[string]check.Variant{}
				for _, v := range res.Run.Variants {
					byName[v.Name] = v
				}
				seen = append(seen, byName)
			}
			var report []string
			for vname, first := range seen[0] {
				varies := map[string]bool{}
				for _, vr := range first.Varies {
					varies[vr.Count] = true
				}
				for _, c := range check.Table {
					vals := make([]int, len(seen))
					for i, run := range seen {
						vals[i] = c.Value(run[vname].Counts)
					}
					if slices.Min(vals) == slices.Max(vals) {
						continue
					}
					line := fmt.Sprintf("%s.%s %v", vname, c.Name, vals)
					if !varies[c.Name] {
						t.Errorf("%s: same seed, different counts, and the scenario does not say this count varies", line)
					}
					report = append(report, line)
				}
			}
			slices.Sort(report)
			if len(report) == 0 {
				t.Logf("%d runs: every count identical", runs)
			} else {
				t.Logf("%d runs: %s", runs, strings.Join(report, "; "))
			}
		})
	}
}

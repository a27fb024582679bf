package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenario"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []int64
		err  string
	}{
		{spec: "1..5", want: []int64{1, 2, 3, 4, 5}},
		{spec: "7", want: []int64{7}},
		{spec: "1..3, 9,2..4", want: []int64{1, 2, 3, 4, 9}},
		{spec: "-2..1", want: []int64{-2, -1, 0, 1}},
		{spec: "", err: "--seeds is empty"},
		{spec: "5..1", err: "5..1 ends below its start"},
		{spec: "1..x", err: `"1..x" is not a range`},
		{spec: "a", err: `"a" is not a seed`},
		{spec: "1..2000000", err: "more than 1000000 seeds"},
		{spec: "-9223372036854775808..9223372036854775807", err: "more than 1000000 seeds"},
	} {
		got, err := ParseSeeds(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSeeds(%q) = %v, %v; want an error saying %q", tc.spec, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
}

func TestShard(t *testing.T) {
	for _, bad := range []string{"0/3", "4/3", "1/0", "x/2", "2", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	seeds, _ := ParseSeeds("1..10")
	for n := 1; n <= 12; n++ {
		var all []int64
		for i := 1; i <= n; i++ {
			sh, err := ParseShard(fmt.Sprintf("%d/%d", i, n))
			if err != nil {
				t.Fatal(err)
			}
			part := sh.Of(seeds)
			if len(part) > (len(seeds)+n-1)/n {
				t.Errorf("shard %s has %d seeds, more than its share", sh, len(part))
			}
			all = append(all, part...)
		}
		if !slices.Equal(all, seeds) {
			t.Errorf("%d shards together are %v, want each seed once, in order: %v", n, all, seeds)
		}
	}
}

func TestSparkline(t *testing.T) {
	for _, tc := range []struct {
		values [][2]int
		want   string
	}{
		{nil, ""},
		{[][2]int{{0, 5}}, "█"},
		{[][2]int{{1, 1}, {2, 8}, {4, 4}}, "▁█ ▄"},
		// 0..15 in 8 characters: two values each.
		{[][2]int{{0, 1}, {1, 1}, {15, 2}}, "█      █"},
	} {
		if got := Sparkline(tc.values, 8); got != tc.want {
			t.Errorf("Sparkline(%v) = %q, want %q", tc.values, got, tc.want)
		}
	}
}

func TestDistribution(t *testing.T) {
	byValue := map[int]int{}
	for v := 1; v <= 100; v++ {
		byValue[v] = 1
	}
	got := distribution("lost", byValue)
	if got.Min != 1 || got.Median != 50 || got.P99 != 99 || got.Max != 100 {
		t.Errorf("1..100: min %d median %d p99 %d max %d, want 1 50 99 100", got.Min, got.Median, got.P99, got.Max)
	}
	// Nearest rank: the 99th percentile of 200 runs is the 198th value.
	got = distribution("lost", map[int]int{0: 198, 7: 2})
	if got.Median != 0 || got.P99 != 0 || got.Max != 7 || !reflect.DeepEqual(got.Values, [][2]int{{0, 198}, {7, 2}}) {
		t.Errorf("198 zeros and two 7s: %+v, want median 0, p99 0, max 7", got)
	}
	if got = distribution("lost", map[int]int{0: 197, 7: 3}); got.P99 != 7 {
		t.Errorf("197 zeros and three 7s: p99 %d, want 7", got.P99)
	}
	if got = distribution("lost", map[int]int{}); got.Min != 0 || got.Max != 0 || len(got.Values) != 0 {
		t.Errorf("no runs: %+v, want zeros and no values", got)
	}
}

// sweepYAML has a variant whose duplicates the fake runner makes depend on
// the seed, and one whose effects move between repeats. Over seeds 1..10
// none's sweep expectations hold (duplicates: 7 of 10 runs, no loss in
// any); other's holds in 5 of 10 runs, but not with fakeRun.bySeed (no
// redelivery in any).
const sweepYAML = `version: 1
name: fake
messages: 3
broker:
  kind: kafka
variants:
  - name: none
    strategy: none
    expect:
      duplicates: 0
    sweep_expect:
      duplicates: "== 0 in at least 70% of runs"
      lost: 0
  - name: other
    strategy: none
    varies:
      redelivered: the fake's timing
    sweep_expect:
      redelivered: "> 0 in at least 50% of runs"
`

// fakeRun writes a history in which intents 1..3 of every variant are
// published, confirmed and delivered; intent 2 of variant none applies
// twice when the seed is a multiple of 3; variant other redelivers intent
// 1 in every second call (declared in varies:) and applies intent 3 twice
// in every third call with seed 4 (not declared).
type fakeRun struct {
	calls atomic.Int64
	// block, when set, makes every run wait for ctx to end.
	block bool
	// bySeed, when set, leaves variant other alone: every count depends on
	// the seed only, whatever the order of the calls.
	bySeed bool
}

func (f *fakeRun) run(ctx context.Context, s *scenario.Scenario, opts runner.Options) (*runner.Result, error) {
	call := f.calls.Add(1)
	if f.block {
		<-ctx.Done()
		return &runner.Result{Meta: check.Meta{Scenario: s.Name, Seed: s.Seed, Incomplete: "interrupted"}}, runner.ErrInterrupted
	}
	var events []history.Event
	audits := map[string]history.Audit{}
	for _, v := range s.Variants {
		applied := map[int]int{1: 1, 2: 1, 3: 1}
		for i := 1; i <= 3; i++ {
			events = append(events,
				history.Event{Variant: v.Name, Type: history.Publish, Intent: i, Attempt: 1},
				history.Event{Variant: v.Name, Type: history.Confirm, Intent: i, Attempt: 1},
				history.Event{Variant: v.Name, Type: history.Deliver, Intent: i, Attempt: 1, Consumer: 1, Position: fmt.Sprintf("0@%d", i)},
			)
		}
		if v.Name == "none" && s.Seed%3 == 0 {
			applied[2] = 2
			events = append(events, history.Event{Variant: v.Name, Type: history.Deliver, Intent: 2, Attempt: 2, Consumer: 2, Position: "0@2", Redelivered: true})
		}
		if v.Name == "other" && !f.bySeed && call%2 == 0 {
			events = append(events, history.Event{Variant: v.Name, Type: history.Deliver, Intent: 1, Attempt: 2, Consumer: 2, Position: "0@1", Redelivered: true})
		}
		if v.Name == "other" && !f.bySeed && s.Seed == 4 && call%3 == 0 {
			applied[3] = 2
			events = append(events, history.Event{Variant: v.Name, Type: history.Deliver, Intent: 3, Attempt: 2, Consumer: 2, Position: "0@3", Redelivered: true})
		}
		events = append(events, history.Event{Variant: v.Name, Type: history.Drain, Drained: true})
		audits[v.Name] = history.Audit{Applied: applied}
	}
	if err := history.Write(opts.History, events); err != nil {
		return nil, err
	}
	return &runner.Result{Meta: check.Meta{Scenario: s.Name, Seed: s.Seed, Messages: s.Messages, Broker: "fake"}, Audits: audits}, nil
}

func fakeConfig(t *testing.T, f *fakeRun, spec string) Config {
	t.Helper()
	seeds, err := ParseSeeds(spec)
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Seeds: seeds, SeedSpec: spec, Repeat: 1, Parallel: 2,
		Scenario:  func(int64) (*scenario.Scenario, error) { return scenario.Parse("fake.yaml", []byte(sweepYAML)) },
		Run:       f.run,
		Reproduce: func(seed int64) string { return fmt.Sprintf("dqbench run fake.yaml --seed %d", seed) },
	}
}

func TestRunListsTheFailingSeeds(t *testing.T) {
	f := &fakeRun{}
	cfg := fakeConfig(t, f, "1..10")
	cfg.Out = t.TempDir()
	sum, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var seeds []int64
	for _, fl := range sum.Failures {
		seeds = append(seeds, fl.Seed)
		if want := fmt.Sprintf("dqbench run fake.yaml --seed %d", fl.Seed); fl.Reproduce != want {
			t.Errorf("seed %d: reproducer %q, want %q", fl.Seed, fl.Reproduce, want)
		}
		if !slices.Equal(fl.Problems, []string{"none: duplicates == 0 (got 1)"}) {
			t.Errorf("seed %d: problems %q", fl.Seed, fl.Problems)
		}
		if _, err := os.Stat(filepath.Join(fl.Saved, "history.jsonl")); err != nil || filepath.Base(fl.Saved) != fmt.Sprintf("fake-seed-%d", fl.Seed) {
			t.Errorf("seed %d: saved in %q (%v), want a run directory fake-seed-%d under --out", fl.Seed, fl.Saved, err, fl.Seed)
		}
	}
	if !slices.Equal(seeds, []int64{3, 6, 9}) {
		t.Errorf("failing seeds %v, want 3, 6, 9", seeds)
	}
	if entries, _ := os.ReadDir(cfg.Out); len(entries) != 3 {
		t.Errorf("--out holds %d runs, want the 3 failing ones", len(entries))
	}
	if sum.Verdict != check.VerdictFail || sum.Runs != 10 || sum.Finished != 10 || sum.Verdicts[check.VerdictPass] != 7 {
		t.Errorf("verdict %s, %d/%d runs, verdicts %v; want FAIL, 10/10, 7 PASS", sum.Verdict, sum.Finished, sum.Runs, sum.Verdicts)
	}
	e := sum.Variants[0].Expectations[0]
	if e.Check != "duplicates == 0" || e.Held != 7 || e.Failed != 3 || len(e.FailedIn) != 3 {
		t.Errorf("expectation %+v, want duplicates == 0 held 7 failed 3", e)
	}
	dup := sum.Variants[0].Counts[slices.IndexFunc(check.Table, func(c check.Count) bool { return c.Name == "duplicates" })]
	if !reflect.DeepEqual(dup.Values, [][2]int{{0, 7}, {1, 3}}) || dup.Max != 1 || dup.Median != 0 {
		t.Errorf("duplicates of none: %+v, want 7 runs at 0 and 3 at 1", dup)
	}
}

// TestSweepExpectations: a sweep expectation is judged over the valid
// runs, lists the runs it missed with their reproducers, and fails the
// sweep although every run passed.
func TestSweepExpectations(t *testing.T) {
	sum, err := Run(t.Context(), fakeConfig(t, &fakeRun{bySeed: true}, "1..10"))
	if err != nil {
		t.Fatal(err)
	}
	got := func(sum Summary) []string {
		var out []string
		for _, v := range sum.Variants {
			for _, e := range v.SweepExpectations {
				var missed []string
				for _, m := range e.Missed {
					missed = append(missed, fmt.Sprintf("%d:%d=%d", m.Seed, m.Repeat, m.Got))
					if want := fmt.Sprintf("dqbench run fake.yaml --seed %d", m.Seed); m.Reproduce != want {
						t.Errorf("%s: seed %d: reproducer %q, want %q", e.Check, m.Seed, m.Reproduce, want)
					}
				}
				out = append(out, fmt.Sprintf("%s: %s %v %d/%d %v", v.Name, e.Check, e.Passed, e.Held, e.Runs, missed))
			}
		}
		return out
	}
	want := []string{
		"none: duplicates == 0 in at least 70% of runs true 7/10 [3:1=1 6:1=1 9:1=1]",
		"none: lost == 0 in every run true 10/10 []",
		"other: redelivered > 0 in at least 50% of runs false 0/10 [1:1=0 2:1=0 3:1=0 4:1=0 5:1=0 6:1=0 7:1=0 8:1=0 9:1=0 10:1=0]",
	}
	if g := got(sum); !slices.Equal(g, want) {
		t.Errorf("sweep expectations:\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
	if sum.Verdict != check.VerdictFail || SweepFailed(sum) != 1 {
		t.Errorf("verdict %s with %d sweep expectations failed, want FAIL and 1", sum.Verdict, SweepFailed(sum))
	}

	// Every run passes, but other never redelivers: its sweep expectation
	// fails the sweep.
	cfg := fakeConfig(t, &fakeRun{bySeed: true}, "1,2,4,5")
	sum, err = Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		"none: duplicates == 0 in at least 70% of runs true 4/4 []",
		"none: lost == 0 in every run true 4/4 []",
		"other: redelivered > 0 in at least 50% of runs false 0/4 [1:1=0 2:1=0 4:1=0 5:1=0]",
	}
	if g := got(sum); !slices.Equal(g, want) {
		t.Errorf("sweep expectations:\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
	if sum.Verdict != check.VerdictFail || sum.Passed || sum.Verdicts[check.VerdictPass] != 4 || len(sum.Failures) != 0 || SweepFailed(sum) != 1 {
		t.Errorf("verdict %s (passed %v), verdicts %v, %d failing runs, %d sweep expectations failed; want FAIL, 4 PASS runs, none failing, 1 failed",
			sum.Verdict, sum.Passed, sum.Verdicts, len(sum.Failures), SweepFailed(sum))
	}
}

// TestSweepMissedBounded: a sweep expectation keeps the first MaxMissed
// runs it missed, by seed, whatever order they finish in.
func TestSweepMissedBounded(t *testing.T) {
	cfg := fakeConfig(t, &fakeRun{bySeed: true}, "1..150")
	cfg.Parallel = 4
	sum, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := sum.Variants[1].SweepExpectations[0]
	if e.Passed || e.Held != 0 || e.Runs != 150 || len(e.Missed) != MaxMissed || e.Missed[0].Seed != 1 || e.Missed[MaxMissed-1].Seed != MaxMissed {
		t.Errorf("%s: passed %v, held %d of %d, %d missed (%v … %v); want failed, 0 of 150, seeds 1 to %d listed",
			e.Check, e.Passed, e.Held, e.Runs, len(e.Missed), e.Missed[0].RunID, e.Missed[len(e.Missed)-1].RunID, MaxMissed)
	}
}

func TestRunRepeatsReportUndeclaredMoves(t *testing.T) {
	f := &fakeRun{}
	cfg := fakeConfig(t, f, "3..5")
	cfg.Repeat, cfg.Parallel = 3, 1 // one at a time: the calls are numbered in seed and repeat order
	sum, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Seed 4 is calls 4, 5, 6: intent 3 of other applies twice in call 6
	// only. redelivered moves too, in every seed, but is declared.
	var got []string
	for _, m := range sum.Moved {
		got = append(got, fmt.Sprintf("%d %s %s %v", m.Seed, m.Variant, m.Count, m.Values))
	}
	want := []string{"4 other effects [3 3 4]", "4 other duplicates [0 0 1]"}
	if !slices.Equal(got, want) {
		t.Errorf("moved %q, want %q", got, want)
	}
	if sum.Runs != 9 || sum.Finished != 9 {
		t.Errorf("%d/%d runs, want 9/9", sum.Finished, sum.Runs)
	}
}

func TestRunInterrupted(t *testing.T) {
	f := &fakeRun{block: true}
	ctx, cancel := context.WithCancel(t.Context())
	cfg := fakeConfig(t, f, "1..100")
	go func() {
		for f.calls.Load() < 2 {
			runtime.Gosched()
		}
		cancel()
	}()
	sum, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted || sum.Finished != 0 || sum.Verdict != check.VerdictIncomplete || len(sum.Failures) != 0 {
		t.Errorf("interrupted sweep: interrupted %v, finished %d, verdict %s, failures %v; want interrupted, 0 finished, INCOMPLETE, none",
			sum.Interrupted, sum.Finished, sum.Verdict, sum.Failures)
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("%d runs started, want the 2 in flight only", n)
	}
}

// TestShardsMergeToTheWholeSweep: three shards of a sweep, merged, are
// the whole sweep's summary, timing aside; two of them say which is
// missing.
func TestShardsMergeToTheWholeSweep(t *testing.T) {
	whole, err := Run(t.Context(), fakeConfig(t, &fakeRun{bySeed: true}, "1..10"))
	if err != nil {
		t.Fatal(err)
	}
	var shards []Summary
	for _, i := range []int{3, 1, 2} { // in any order
		cfg := fakeConfig(t, &fakeRun{bySeed: true}, "1..10")
		cfg.Shard = Shard{I: i, N: 3}
		s, err := Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s.Shard != cfg.Shard.String() || s.Runs != len(cfg.Shard.Of(cfg.Seeds)) {
			t.Errorf("shard %s: summary says shard %q, %d runs", cfg.Shard, s.Shard, s.Runs)
		}
		shards = append(shards, s)
	}
	merged, err := Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := timeless(t, merged), timeless(t, whole); got != want {
		t.Errorf("merged shards differ from the whole sweep:\n--- merged\n%s\n--- whole\n%s", got, want)
	}
	if whole.Verdict != check.VerdictFail || len(whole.Failures) != 3 {
		t.Errorf("whole sweep: %s with %d failures, want FAIL with 3 (seeds 3, 6, 9)", whole.Verdict, len(whole.Failures))
	}
	// other never redelivers with bySeed: its sweep expectation fails
	// over the merged runs as over the whole sweep's, every run listed.
	if e := merged.Variants[1].SweepExpectations[0]; e.Passed || e.Runs != 10 || len(e.Missed) != 10 {
		t.Errorf("merged: %s: passed %v, %d runs, %d missed; want failed in all 10", e.Check, e.Passed, e.Runs, len(e.Missed))
	}
	// A shard's sweep expectation is judged over its runs only: in shard
	// 1/3 (seeds 1, 2, 3) none duplicates in seed 3, 2 of 3 runs hold,
	// below 70 %; the merge, over all ten, holds it.
	if e := shards[1].Variants[0].SweepExpectations[0]; e.Passed || e.Held != 2 || e.Runs != 3 {
		t.Errorf("shard 1/3: %s: passed %v, held %d of %d; want failed, 2 of 3", e.Check, e.Passed, e.Held, e.Runs)
	}
	if e := merged.Variants[0].SweepExpectations[0]; !e.Passed || e.Held != 7 || e.Runs != 10 {
		t.Errorf("merged: %s: passed %v, held %d of %d; want passed, 7 of 10", e.Check, e.Passed, e.Held, e.Runs)
	}

	partial, err := Merge(shards[:2])
	if err != nil {
		t.Fatal(err)
	}
	if partial.Verdict != check.VerdictIncomplete || !slices.Equal(partial.MissingShards, []string{"2/3"}) || partial.Runs != 10 {
		t.Errorf("shards 3 and 1 merged: verdict %s, missing %v, runs %d; want INCOMPLETE, 2/3 missing, 10 runs", partial.Verdict, partial.MissingShards, partial.Runs)
	}
	for _, bad := range []struct {
		shards []Summary
		err    string
	}{
		{[]Summary{shards[0], shards[0]}, "shard 3/3 is given twice"},
		{[]Summary{shards[0], whole}, "is a whole sweep, not a shard"},
		{[]Summary{shards[0], func() Summary { s := shards[1]; s.Seeds = "1..11"; return s }()}, "is of another sweep"},
		{[]Summary{shards[0], {SchemaVersion: 99}}, "schema_version 99"},
		{nil, "no summaries"},
	} {
		if _, err := Merge(bad.shards); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("Merge: %v, want an error saying %q", err, bad.err)
		}
	}
}

// timeless is s as JSON without its timing.
func timeless(t *testing.T, s Summary) string {
	t.Helper()
	s.DurationMS, s.RunsPerSecond = 0, 0
	var b strings.Builder
	if err := JSON(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

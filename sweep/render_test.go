package sweep

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	junit "github.com/joshdk/go-junit"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/ansi"
	"github.com/dqbench/dqbench/scenario"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenSummary is a sweep of seeds 1..4 twice each: variant none fails
// duplicates == 0 in seed 3 (both repeats), and so its sweep expectation
// of 80 % (5 of 7 valid runs); seed 4's second repeat could not start,
// and none's effects moved between seed 2's repeats.
func goldenSummary() Summary {
	plan := check.Plan{Variants: []check.PlanVariant{
		{Name: "none", Strategy: "none", Expect: []check.Expect{{Count: "duplicates", Text: "== 0", Holds: func(n int) bool { return n == 0 }}}},
		{Name: "dedup-table", Strategy: "dedup-table", Expect: []check.Expect{{Count: "lost", Text: "== 0", Holds: func(n int) bool { return n == 0 }}},
			Varies: []check.Varies{{Count: "redelivered", Why: "timing"}}},
	}}
	sweeps := [][]scenario.SweepExpect{
		{{Count: "duplicates", SweepExpectation: mustSweepExpectation("== 0 in at least 80% of runs")}},
		{{Count: "lost", SweepExpectation: mustSweepExpectation("0")}},
	}
	a := newAggregate(plan, sweeps, Summary{Scenario: "golden", Seeds: "1..4", Repeat: 2, Messages: 100, Runs: 8})
	run := func(seed int64, repeat, dups, effects, redelivered int) check.Run {
		r := check.Run{Meta: check.Meta{Scenario: "golden", Seed: seed, Messages: 100, Broker: "kafka (embedded kfake)"}, Passed: dups == 0}
		r.Variants = []check.Variant{
			{Name: "none", Strategy: "none", Passed: dups == 0,
				Counts:       check.Counts{Attempted: 100, Delivered: 100, Redelivered: redelivered, Effects: effects, Duplicates: dups, FaultsInjected: redelivered},
				Expectations: []check.ExpectationResult{{Check: "duplicates == 0", Passed: dups == 0, Actual: dups}}},
			{Name: "dedup-table", Strategy: "dedup-table", Passed: true,
				Counts:       check.Counts{Attempted: 100, Delivered: 100, Redelivered: redelivered + repeat, Effects: 100, FaultsInjected: redelivered},
				Expectations: []check.ExpectationResult{{Check: "lost == 0", Passed: true}}},
		}
		return r
	}
	reproduce := func(seed int64) string { return "dqbench run golden.yaml --seed " + string(rune('0'+seed)) }
	a.add(RunID{1, 1}, run(1, 1, 0, 100, 2), reproduce(1), "")
	a.add(RunID{1, 2}, run(1, 2, 0, 100, 2), reproduce(1), "")
	a.add(RunID{2, 2}, run(2, 2, 0, 101, 3), reproduce(2), "")
	a.add(RunID{2, 1}, run(2, 1, 0, 100, 3), reproduce(2), "")
	a.add(RunID{3, 1}, run(3, 1, 2, 102, 4), reproduce(3), "runs/golden-seed-3-repeat-1")
	a.add(RunID{3, 2}, run(3, 2, 2, 102, 4), reproduce(3), "runs/golden-seed-3-repeat-2")
	a.add(RunID{4, 1}, run(4, 1, 0, 100, 1), reproduce(4), "")
	a.add(RunID{4, 2}, check.Run{Meta: check.Meta{Scenario: "golden", Seed: 4, Error: "cannot reach Kafka at 127.0.0.1:1: connection refused"}}, reproduce(4), "")
	return a.finish(2 * time.Second)
}

func mustSweepExpectation(s string) scenario.SweepExpectation {
	x, err := scenario.ParseSweepExpectation(s)
	if err != nil {
		panic(err)
	}
	return x
}

func TestGolden(t *testing.T) {
	s := goldenSummary()
	for _, f := range Formats {
		if f.Name == "html" {
			continue // it names the build: TestHTML
		}
		t.Run(f.Name, func(t *testing.T) {
			var b bytes.Buffer
			if err := f.Write(&b, s, Options{}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", f.Name+".golden")
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./sweep -update to create it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("%s output differs from %s (run go test ./sweep -update if the change is intended)\n--- got\n%s\n--- want\n%s", f.Name, path, b.String(), want)
			}
		})
	}
}

func TestGoldenSummary(t *testing.T) {
	s := goldenSummary()
	if s.Verdict != check.VerdictError || s.Valid || s.Finished != 8 {
		t.Errorf("verdict %s valid %v finished %d, want ERROR (a run could not start), invalid, 8", s.Verdict, s.Valid, s.Finished)
	}
	if len(s.Moved) != 1 || s.Moved[0].Seed != 2 || s.Moved[0].Count != "effects" || s.Moved[0].Values[0] != 100 {
		t.Errorf("moved %+v, want none's effects in seed 2, 100 then 101 (repeat order), and not dedup-table's declared redelivered", s.Moved)
	}
	if len(s.Failures) != 3 || s.Failures[2].Verdict != check.VerdictError || s.Variants[0].Runs != 7 {
		t.Errorf("failures %+v, none over %d runs; want seed 3 twice and seed 4's ERROR, and 7 valid runs", s.Failures, s.Variants[0].Runs)
	}
}

func TestTableFits80Columns(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, goldenSummary(), Options{}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "    dqbench ") {
			continue // commands stay whole
		}
		if w := ansi.Width(l); w > 80 {
			t.Errorf("%d columns: %q", w, l)
		}
	}
}

func TestJUnitParses(t *testing.T) {
	var b bytes.Buffer
	if err := JUnit(&b, goldenSummary()); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(b.Bytes())
	if err != nil || len(suites) != 1 {
		t.Fatalf("JUnit does not parse as one suite: %v, %d suites", err, len(suites))
	}
	status := map[string]junit.Status{}
	for _, tc := range suites[0].Tests {
		status[tc.Name] = tc.Status
	}
	want := map[string]junit.Status{
		"none: duplicates == 0":          junit.StatusFailed,
		"dedup-table: lost == 0":         junit.StatusPassed,
		"every run completed and counts": junit.StatusError,
	}
	for name, st := range want {
		if status[name] != st {
			t.Errorf("testcase %q: %q, want %q (all: %v)", name, status[name], st, status)
		}
	}
	if !strings.Contains(b.String(), "dqbench run golden.yaml --seed 3") {
		t.Errorf("the failure does not carry the reproducer:\n%s", b.String())
	}
}

// TestHTML: the page has a section and a histogram per variant and count
// shown, marks the bars of the failing runs and links each to the run's
// entry, which has its reproducer; every link lands on an element.
func TestHTML(t *testing.T) {
	var b strings.Builder
	if err := Write(&b, "html", goldenSummary(), Options{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"<title>dqbench sweep · ERROR · golden</title>",
		`<section class="variant" data-variant="none">`,
		`<section class="variant" data-variant="dedup-table">`,
		`<figure class="hist" data-count="duplicates">`,
		// seeds 3's two repeats duplicated 2 intents: the bar at 2 is red
		// and links to the first.
		`<a href="#run-3-1"><rect class="hbar bad"`,
		`failing: <a href="#run-3-1">seed 3 repeat 1</a> (2), <a href="#run-3-2">seed 3 repeat 2</a> (2)`,
		`<li class="run" id="run-3-1" data-seed="3" data-repeat="1"><span class="FAIL">FAIL</span> seed 3 repeat 1<br>none: duplicates == 0 (got 2)<br>none: duplicates 2, and the sweep expects duplicates == 0 in at least 80% of runs`,
		`<pre class="cmd">dqbench run golden.yaml --seed 3</pre><pre class="cmd">dqbench check runs/golden-seed-3-repeat-1</pre>`,
		`<li class="run" id="run-4-2"`,
		`<span class="FAIL">FAIL</span> variant none: the sweep expects duplicates == 0 in at least 80% of runs; it held in 5 of 7 runs (71.4%)`,
		`<span class="ERROR">ERROR</span> 1 of 8 runs: could not start`,
		`<li>seed 2: none effects: 100, 101</li>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<svg class="hist"`); n != 7 {
		t.Errorf("%d histograms, want 7 (the counts the table shows: 4 of none, 3 of dedup-table)", n)
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("the page has a script or fetches something")
	}
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("link to #%s, which no element has", m[1])
		}
	}
}

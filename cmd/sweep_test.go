package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenarios"
	seedsweep "github.com/dqbench/dqbench/sweep"
)

// sweepCLI runs dqbench with args in-process against the real runner
// (embedded brokers).
func sweepCLI(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(t.Context(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, runner.Run)
	return result{code: code, out: out.String(), err: errOut.String()}
}

// tightScenario is the quickstart with a bound on none's duplicates that
// seeds 2, 4 and 5 of 1..6 break at 100 messages (they duplicate 4, 5 and
// 4 intents; the others 2 or 3): a scenario that fails for some seeds.
func tightScenario(t *testing.T) string {
	t.Helper()
	data, ok := scenarios.Read("quickstart")
	if !ok {
		t.Fatal("no built-in quickstart")
	}
	y := strings.Replace(string(data), "name: quickstart", "name: tight", 1)
	y = strings.Replace(y, "      duplicates: \">0\"", "      duplicates: \"<=3\"", 1)
	if !strings.Contains(y, `"<=3"`) {
		t.Fatal("the quickstart no longer expects none's duplicates > 0: update tightScenario")
	}
	path := filepath.Join(t.TempDir(), "tight.yaml")
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSweepQuickstart(t *testing.T) {
	r := sweepCLI(t, "sweep", "quickstart", "--seeds", "1..3", "--messages", "100")
	if r.code != ExitPass {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	for _, want := range []string{
		"sweep quickstart · seeds 1..3 · 100 messages · kafka (embedded kfake)",
		"variant none · strategy none · 3 valid runs",
		"PASS duplicates > 0 in 3 of 3 runs",
		"PASS lost > 0 in 3 of 3 runs",
		"\nPASS  3/3 runs · 3 PASS · ",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.out)
		}
	}
	// none duplicates 3, 4, 3 intents in seeds 1, 2, 3.
	if !regexp.MustCompile(`(?m)^  duplicates +3 +3 +4 +4  `).MatchString(r.out) {
		t.Errorf("none's duplicates row is not min 3 median 3 p99 4 max 4:\n%s", r.out)
	}
	for i, l := range strings.Split(r.out, "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line %d is %d columns wide, more than 80: %q", i+1, n, l)
		}
	}
	if strings.Contains(r.out, "runs that did not pass") {
		t.Errorf("a passing sweep lists failing runs:\n%s", r.out)
	}
}

func TestSweepListsTheFailingSeeds(t *testing.T) {
	tight := tightScenario(t)
	out := filepath.Join(t.TempDir(), "failing")
	r := sweepCLI(t, "sweep", tight, "--seeds", "1..6", "--messages", "100", "--parallel", "2", "--out", out)
	if r.code != ExitFail {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, ExitFail, r.out, r.err)
	}
	reproducers := regexp.MustCompile(`(?m)^    (dqbench run .*)$`).FindAllStringSubmatch(r.out, -1)
	var got []string
	for _, m := range reproducers {
		got = append(got, m[1])
	}
	var want []string
	for _, seed := range []string{"2", "4", "5"} {
		want = append(want, "dqbench run "+tight+" --seed "+seed+" --messages 100")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("reproducers %q, want %q\n%s", got, want, r.out)
	}
	if !strings.Contains(r.out, "FAIL duplicates <= 3 failed in 3 of 6 runs: seeds 2, 4, 5") {
		t.Errorf("the report lacks the failed expectation's seeds:\n%s", r.out)
	}
	saved, _ := filepath.Glob(filepath.Join(out, "*"))
	if want := []string{filepath.Join(out, "tight-seed-2"), filepath.Join(out, "tight-seed-4"), filepath.Join(out, "tight-seed-5")}; !slices.Equal(saved, want) {
		t.Errorf("--out holds %q, want the failing runs %q", saved, want)
	}
	// Each reproducer fails on its own, and a seed the sweep passed passes.
	for _, cmd := range got {
		args := strings.Fields(strings.TrimPrefix(cmd, "dqbench "))
		if rr := sweepCLI(t, append(args, "--quiet")...); rr.code != ExitFail {
			t.Errorf("%s: exit %d, want %d\n%s", cmd, rr.code, ExitFail, rr.out)
		}
	}
	if rr := sweepCLI(t, "run", tight, "--seed", "3", "--messages", "100", "--quiet"); rr.code != ExitPass {
		t.Errorf("seed 3, which passed in the sweep: exit %d\n%s", rr.code, rr.out)
	}
	if rr := sweepCLI(t, "check", filepath.Join(out, "tight-seed-4")); rr.code != ExitFail || !strings.Contains(rr.out, "FAIL none: duplicates <= 3 (got 5)") {
		t.Errorf("check of the saved seed 4: exit %d, want %d\n%s", rr.code, ExitFail, rr.out)
	}
}

func TestSweepFlags(t *testing.T) {
	cli, _ := scenarioFiles(t)
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"sweep", cli, "--seeds", "9..1"}, "9..1 ends below its start"},
		{[]string{"sweep", cli, "--repeat", "0"}, "must be at least 1"},
		{[]string{"sweep", cli, "--parallel", "0"}, "must be at least 1"},
		{[]string{"sweep", cli, "--keep-all"}, "give --out DIR too"},
		{[]string{"sweep", cli, "--messages", "0"}, "--messages 0: must be at least 1"},
		{[]string{"sweep", "no-such-scenario"}, "no-such-scenario"},
		{[]string{"sweep", cli, cli}, "accepts 1 arg"},
		{[]string{"sweep", cli, "-o", "pdf"}, `--output "pdf" is not allowed (allowed: table, json, markdown, junit, html)`},
		{[]string{"sweep", cli, "--html", "/no/such/dir/sweep.html"}, `--html /no/such/dir/sweep.html: directory /no/such/dir does not exist`},
		{[]string{"sweep", cli, "--junit", "/no/such/dir/sweep.xml"}, `--junit /no/such/dir/sweep.xml: directory /no/such/dir does not exist`},
		{[]string{"sweep", cli, "--expect", "nne: lost 0"}, `--expect "nne: lost 0": scenario cli has no variant "nne"`},
		{[]string{"sweep", cli, "--expect", "none: lots 0"}, `no count named "lots" (did you mean "lost"?)`},
		{[]string{"sweep", cli, "--expect", "lost 0"}, `write VARIANT: COUNT EXPECTATION`},
		{[]string{"sweep", cli, "--expect", "none: lost > 0 in most runs"}, `bad sweep expectation "> 0 in most runs"`},
	} {
		r := run(t, nil, tc.args...)
		if r.code != ExitUsage || len(r.fake.calls) != 0 || !strings.Contains(r.err, tc.err) {
			t.Errorf("%q: exit %d after %d runs, stderr %q; want %d before any run, saying %q", tc.args, r.code, len(r.fake.calls), r.err, ExitUsage, tc.err)
		}
	}
	// The fake's history applies intent 2 twice: cli passes, failing fails,
	// in every seed; each run has the seed of the sweep.
	_, failing := scenarioFiles(t)
	r := run(t, nil, "sweep", failing, "--seeds", "3,5..6", "--repeat", "2", "--parallel", "3", "--timeout", "90s")
	if r.code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", r.code, ExitFail, r.out, r.err)
	}
	var seeds []int64
	for _, c := range r.fake.calls {
		seeds = append(seeds, c.s.Seed)
	}
	slices.Sort(seeds)
	if !slices.Equal(seeds, []int64{3, 3, 5, 5, 6, 6}) {
		t.Errorf("runs with seeds %v, want 3, 5 and 6 twice each", seeds)
	}
	if !strings.Contains(r.out, "dqbench run "+failing+" --seed 6 --timeout 1m30s") {
		t.Errorf("reproducer lacks --timeout:\n%s", r.out)
	}

	r = run(t, nil, "sweep", failing, "--seeds", "1..2", "-o", "json")
	var sum seedsweep.Summary
	if err := json.Unmarshal([]byte(r.out), &sum); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.out)
	}
	if r.code != ExitFail || sum.SchemaVersion != seedsweep.SchemaVersion || sum.Verdict != "FAIL" || len(sum.Failures) != 2 || sum.Failures[1].Reproduce != "dqbench run "+failing+" --seed 2" {
		t.Errorf("-o json: exit %d, %+v; want 1, schema %d, FAIL, seeds 1 and 2 failing with their reproducers", r.code, sum, seedsweep.SchemaVersion)
	}
}

// TestSweepShardsMerge: a sweep sharded 3 ways and merged is the unsharded
// sweep's JSON, timing aside, with its exit code; merge -o junit and the
// table say the same.
func TestSweepShardsMerge(t *testing.T) {
	tight := tightScenario(t)
	dir := t.TempDir()
	args := []string{"sweep", tight, "--seeds", "1..7", "--messages", "100", "-o", "json"}
	whole := sweepCLI(t, args...)
	if whole.code != ExitFail {
		t.Fatalf("unsharded: exit %d, want %d\n%s", whole.code, ExitFail, whole.err)
	}
	var files []string
	for _, shard := range []string{"1/3", "2/3", "3/3"} {
		// The table on stdout, the JSON for merge in a file (--json).
		f := filepath.Join(dir, "shard-"+shard[:1]+".json")
		r := sweepCLI(t, append(args, "--shard", shard, "-o", "table", "--json", f)...)
		want := ExitFail // 1..2 fails on seed 2, 3..4 on 4, 5..7 on 5
		if r.code != want || !strings.Contains(r.out, "FAIL duplicates <= 3") || !strings.Contains(r.err, "wrote the JSON report to "+f) {
			t.Fatalf("shard %s: exit %d, want %d, a table on stdout and the JSON in %s\n%s%s", shard, r.code, want, f, r.out, r.err)
		}
		files = append(files, f)
	}
	reports := t.TempDir()
	junitFile, mdFile := filepath.Join(reports, "sweep.xml"), filepath.Join(reports, "sweep.md")
	merged := sweepCLI(t, append([]string{"merge", "-o", "json", "--junit", junitFile, "--markdown", mdFile}, files...)...)
	if merged.code != whole.code {
		t.Errorf("merge: exit %d, the unsharded sweep %d\n%s", merged.code, whole.code, merged.err)
	}
	if got, want := withoutTiming(t, merged.out), withoutTiming(t, whole.out); got != want {
		t.Errorf("merged shards differ from the unsharded sweep:\n--- merged\n%s\n--- unsharded\n%s", got, want)
	}
	// --junit and --markdown FILE hold what -o junit and -o markdown print.
	for file, format := range map[string]string{junitFile: "junit", mdFile: "markdown"} {
		b, err := os.ReadFile(file)
		want := sweepCLI(t, append([]string{"merge", "-o", format}, files...)...).out
		if err != nil || string(b) != want {
			t.Errorf("merge --%s: %v\n%s\nwant what -o %s prints:\n%s", format, err, b, format, want)
		}
	}
	if !strings.Contains(whole.out, `"seed": 5`) || strings.Contains(whole.out, `"seed": 3,`) {
		t.Errorf("the unsharded sweep does not fail seed 5 alone of 3..5:\n%s", whole.out)
	}

	// A directory stands for its .json files; a missing shard is named
	// and makes the merge incomplete.
	table := sweepCLI(t, "merge", dir)
	if table.code != ExitFail || !strings.Contains(table.out, "FAIL duplicates <= 3 failed in 3 of 7 runs: seeds 2, 4, 5") {
		t.Errorf("merge DIR: exit %d\n%s%s", table.code, table.out, table.err)
	}
	partial := sweepCLI(t, "merge", files[0], files[2])
	if partial.code != ExitIncomplete || !strings.Contains(partial.out, "missing shards 2/3") {
		t.Errorf("two shards of three: exit %d, want %d and the missing shard named\n%s", partial.code, ExitIncomplete, partial.out)
	}
	if r := sweepCLI(t, "merge", files[0], files[0]); r.code != ExitUsage || !strings.Contains(r.err, "shard 1/3 is given twice") {
		t.Errorf("one shard twice: exit %d\n%s", r.code, r.err)
	}
	notSweep := filepath.Join(dir, "run.json")
	if r := sweepCLI(t, "run", tight, "--messages", "100", "-o", "json"); os.WriteFile(notSweep, []byte(r.out), 0o644) != nil {
		t.Fatal("write run.json")
	}
	if r := sweepCLI(t, "merge", notSweep); r.code != ExitUsage || !strings.Contains(r.err, "not the -o json of a sweep") {
		t.Errorf("a run's JSON: exit %d\n%s", r.code, r.err)
	}
}

// TestSweepExpectations: a sweep expectation over the quickstart that
// every run passes fails the sweep (exit 1) in every format, lists the
// runs it missed with their reproducers, and is judged over the merged
// runs by merge; --expect adds one, or replaces the scenario's.
func TestSweepExpectations(t *testing.T) {
	data, ok := scenarios.Read("quickstart")
	if !ok {
		t.Fatal("no built-in quickstart")
	}
	// none duplicates 3, 4, 3, 5, 4, 3 intents in seeds 1..6 at 100
	// messages: <= 3 holds in 3 of 6 runs.
	y := strings.Replace(string(data), "      duplicates: \">0\"\n      lost: 0\n",
		"      duplicates: \">0\"\n      lost: 0\n    sweep_expect:\n      duplicates: \"<= 3 in at least 60% of runs\"\n      lost: 0\n", 1)
	if !strings.Contains(y, "sweep_expect") {
		t.Fatal("the quickstart's none no longer expects duplicates > 0 and lost 0: update this test")
	}
	sixty := filepath.Join(t.TempDir(), "sixty.yaml")
	if err := os.WriteFile(sixty, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"sweep", sixty, "--seeds", "1..6", "--messages", "100", "--parallel", "2"}
	r := sweepCLI(t, args...)
	if r.code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", r.code, ExitFail, r.out, r.err)
	}
	for _, want := range []string{
		"FAIL sweep: duplicates <= 3 in at least 60% of runs: held in 3 of 6 runs\n      (50%): not in seeds 2, 4, 5",
		"PASS sweep: lost == 0 in every run: held in 6 of 6 runs",
		"sweep expectations that failed: 1\n  none: duplicates <= 3 in at least 60% of runs: held in 3 of 6 runs (50%)\n" +
			"    seed 2: duplicates 4\n      dqbench run " + sixty + " --seed 2 --messages 100\n",
		"\nFAIL  6/6 runs · 6 PASS · 1 sweep expectation failed · ",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "runs that did not pass") {
		t.Errorf("every run passed, but the report lists failing runs:\n%s", r.out)
	}
	page := filepath.Join(t.TempDir(), "sweep.html")
	junitOut := sweepCLI(t, append(args, "-o", "junit", "--html", page)...)
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), `<figure class="hist" data-count="duplicates">`) ||
		!strings.Contains(string(b), `<li class="run" id="run-2" data-seed="2" data-repeat="1">`) {
		t.Errorf("--html: %v\n%s", err, b)
	}
	if junitOut.code != ExitFail || !strings.Contains(junitOut.out, `<testcase name="none: sweep: duplicates &lt;= 3 in at least 60% of runs"`) ||
		!strings.Contains(junitOut.out, `<failure message="held in 3 of 6 runs (50%)" type="sweep expectation">`) {
		t.Errorf("-o junit: exit %d\n%s", junitOut.code, junitOut.out)
	}

	// --expect replaces the scenario's on duplicates, and adds one.
	r = sweepCLI(t, append(args, "--expect", "none: duplicates <= 3 in at least 50% of runs", "--expect", "dedup-table: duplicates 0 in every run")...)
	if r.code != ExitPass || !strings.Contains(r.out, "PASS sweep: duplicates <= 3 in at least 50% of runs: held in 3 of 6 runs") ||
		!strings.Contains(r.out, "PASS sweep: duplicates == 0 in every run: held in 6 of 6 runs") || strings.Contains(r.out, "60%") {
		t.Errorf("--expect: exit %d, want 0 with both sweep expectations held\n%s\n%s", r.code, r.out, r.err)
	}

	// Shards: each holds 1 of its 2 runs (50%) and fails; so does the merge.
	dir := t.TempDir()
	whole := sweepCLI(t, append(args, "-o", "json")...)
	var files []string
	for _, shard := range []string{"1/3", "2/3", "3/3"} {
		r := sweepCLI(t, append(args, "-o", "json", "--shard", shard)...)
		if r.code != ExitFail {
			t.Fatalf("shard %s: exit %d, want %d\n%s", shard, r.code, ExitFail, r.err)
		}
		f := filepath.Join(dir, "shard-"+shard[:1]+".json")
		if err := os.WriteFile(f, []byte(r.out), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	merged := sweepCLI(t, "merge", "-o", "json", dir)
	if merged.code != ExitFail || whole.code != ExitFail {
		t.Errorf("merge: exit %d, the unsharded sweep %d; want %d", merged.code, whole.code, ExitFail)
	}
	if got, want := withoutTiming(t, merged.out), withoutTiming(t, whole.out); got != want {
		t.Errorf("merged shards differ from the unsharded sweep:\n--- merged\n%s\n--- unsharded\n%s", got, want)
	}
	if page := sweepCLI(t, "merge", "-o", "html", dir); page.code != ExitFail || !strings.Contains(page.out, `<a href="#run-2"><rect class="hbar bad"`) {
		t.Errorf("merge -o html: exit %d, want %d and seed 2's bar marked and linked\n%s", page.code, ExitFail, page.out)
	}
	var sum seedsweep.Summary
	if err := json.Unmarshal([]byte(merged.out), &sum); err != nil {
		t.Fatal(err)
	}
	e := sum.Variants[0].SweepExpectations[0]
	if e.Passed || e.Held != 3 || e.Runs != 6 || len(e.Missed) != 3 || e.Missed[2].Seed != 5 || e.Missed[2].Got != 4 {
		t.Errorf("merged: %+v, want failed, held in 3 of 6, missed seeds 2, 4, 5 (seed 5: 4 duplicates)", e)
	}
}

// withoutTiming is a sweep's -o json without duration_ms and
// runs_per_second.
func withoutTiming(t *testing.T, doc string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	delete(m, "duration_ms")
	delete(m, "runs_per_second")
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

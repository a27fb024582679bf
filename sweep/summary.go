package sweep

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/scenario"
)

// SchemaVersion is the version of the JSON document a sweep writes (-o
// json) and merge reads. It changes when a field changes meaning or goes.
const SchemaVersion = 1

// Summary is what a sweep found: the distribution of every count per
// variant, how often each expectation held, and the runs that failed. It
// holds aggregates only, so its size does not grow with the runs that
// passed; it is the -o json document, and merge adds shards' summaries.
type Summary struct {
	SchemaVersion int    `json:"schema_version"`
	Scenario      string `json:"scenario"`
	// Seeds is the sweep's --seeds, whatever the shard.
	Seeds  string `json:"seeds"`
	Repeat int    `json:"repeat"`
	// Shard is "I/N" for one shard's summary, empty for a whole sweep
	// (also a merged one).
	Shard    string `json:"shard,omitempty"`
	Messages int    `json:"messages"`
	Broker   string `json:"broker"`
	// Runs is how many runs the sweep (or shard) was to make; Finished
	// how many it judged. Runs that an interruption cut short are not
	// judged.
	Runs     int `json:"runs"`
	Finished int `json:"finished"`
	// Verdict is the sweep's verdict, the word its exit code agrees with:
	// the worst of its runs', INCOMPLETE when runs are missing.
	Verdict string `json:"verdict"`
	Passed  bool   `json:"passed"`
	// Valid is false when a run could not start, was cut short or does
	// not count, or runs are missing (exit code 3).
	Valid bool `json:"valid"`
	// Verdicts counts the finished runs by verdict.
	Verdicts    map[string]int `json:"verdicts"`
	Interrupted bool           `json:"interrupted,omitempty"`
	// MissingShards lists the shards a merge did not get.
	MissingShards []string `json:"missing_shards,omitempty"`
	// DurationMS and RunsPerSecond are timing: they differ from sweep to
	// sweep. A merge keeps the slowest shard's duration.
	DurationMS    int64            `json:"duration_ms"`
	RunsPerSecond float64          `json:"runs_per_second"`
	Variants      []VariantSummary `json:"variants"`
	// Failures are the runs that did not pass, by seed and repeat.
	Failures []Failure `json:"failures"`
	// Moved are counts that differed between repeats of one seed although
	// the scenario does not declare them in the variant's varies: list.
	Moved []Moved `json:"moved"`
}

// VariantSummary is one variant over the valid runs (those that passed or
// failed an expectation; a run that could not start, was cut short or
// does not count is only listed in Failures).
type VariantSummary struct {
	Name     string `json:"name"`
	Strategy string `json:"strategy"`
	// Runs is how many valid runs the distributions are over.
	Runs         int                  `json:"runs"`
	Expectations []ExpectationSummary `json:"expectations"`
	// SweepExpectations are the variant's sweep_expect: checks over the
	// sweep's runs, not over one.
	SweepExpectations []SweepExpectationSummary `json:"sweep_expectations"`
	Counts            []CountSummary            `json:"counts"`
	// Varies are the counts the scenario says may differ between runs
	// with one seed.
	Varies []string `json:"varies,omitempty"`
}

// ExpectationSummary is how often one expectation held.
type ExpectationSummary struct {
	Check  string `json:"check"` // e.g. "duplicates > 0"
	Held   int    `json:"held"`
	Failed int    `json:"failed"`
	// FailedIn are the runs it failed in, by seed and repeat.
	FailedIn []RunID `json:"failed_in"`
}

// SweepExpectationSummary is one expectation over the sweep's runs
// (sweep_expect: in the scenario): in how many valid runs its comparison
// held, and whether that is enough.
type SweepExpectationSummary struct {
	Check string `json:"check"` // e.g. "duplicates > 0 in at least 95% of runs"
	// Passed: the comparison held in enough of the valid runs (and there
	// was one).
	Passed bool `json:"passed"`
	Held   int  `json:"held"`
	Runs   int  `json:"runs"`
	// Missed are the first runs, by seed and repeat, whose count did not
	// meet the comparison (at most MaxMissed; Runs - Held is how many).
	Missed []Miss `json:"missed"`
}

// MaxMissed bounds the runs a sweep expectation lists where its
// comparison did not hold: the first by seed and repeat.
const MaxMissed = 100

// Miss is a run whose count did not meet a sweep expectation's
// comparison, and how to run it again.
type Miss struct {
	RunID
	Got       int    `json:"got"`
	Reproduce string `json:"reproduce"`
}

// RunID names one run of a sweep.
type RunID struct {
	Seed   int64 `json:"seed"`
	Repeat int   `json:"repeat"`
}

func (r RunID) compare(o RunID) int {
	return cmp.Or(cmp.Compare(r.Seed, o.Seed), cmp.Compare(r.Repeat, o.Repeat))
}

// CountSummary is the distribution of one count over the valid runs:
// min, median, 99th percentile (nearest rank) and max, and every value
// seen with the number of runs that had it, [value, runs], by value.
type CountSummary struct {
	Name   string   `json:"name"`
	Min    int      `json:"min"`
	Median int      `json:"median"`
	P99    int      `json:"p99"`
	Max    int      `json:"max"`
	Values [][2]int `json:"values"`
}

// Failure is a run that did not pass, and how to run it again.
type Failure struct {
	RunID
	Verdict string `json:"verdict"`
	// Problems say why: each failed expectation ("none: lost == 0 (got
	// 2)"), why the run could not start or was cut short, why a variant
	// does not count.
	Problems []string `json:"problems"`
	// Reproduce is the command that runs it again: dqbench run SCENARIO
	// --seed S, with the sweep's flags that change the scenario.
	Reproduce string `json:"reproduce"`
	// Saved is the run's directory under --out, for dqbench check.
	Saved string `json:"saved,omitempty"`
}

// Moved is a count that differed between the repeats of one seed
// although the variant does not declare it in varies:.
type Moved struct {
	Variant string `json:"variant"`
	Count   string `json:"count"`
	Seed    int64  `json:"seed"`
	// Values are the count in each valid repeat, in repeat order.
	Values []int `json:"values"`
}

// aggregate folds judged runs into a Summary, keeping per count only how
// many runs had each value.
type aggregate struct {
	sum   Summary
	plan  check.Plan
	index map[string]int // variant name → index in plan
	// values[v][c] counts the runs by value of count c (check.Table) of
	// variant v.
	values  [][]map[int]int
	expects []map[string]*ExpectationSummary
	// sweeps[v] are the sweep expectations of variant v, each with the
	// runs it missed so far.
	sweeps [][]sweepExpect
	// repeats holds, per seed whose repeats are not all judged, the
	// counts of its valid repeats so far.
	repeats map[int64]*seedRepeats
	// brokerOf is the run whose broker name the summary shows: the first
	// by seed and repeat, so a merge shows the same.
	brokerOf *RunID
}

// sweepExpect is one sweep expectation being aggregated.
type sweepExpect struct {
	scenario.SweepExpect
	count  int // index in check.Table
	missed []Miss
}

// miss notes run id as one where the comparison did not hold, keeping
// the first MaxMissed by seed and repeat: the same whatever order the
// runs finish in and however the sweep is sharded.
func (e *sweepExpect) miss(ms ...Miss) {
	e.missed = append(e.missed, ms...)
	slices.SortFunc(e.missed, func(x, y Miss) int { return x.compare(y.RunID) })
	if len(e.missed) > MaxMissed {
		e.missed = e.missed[:MaxMissed]
	}
}

type seedRepeats struct {
	judged int
	valid  []repeatCounts
}

type repeatCounts struct {
	repeat int
	counts map[string]check.Counts // by variant
}

// newAggregate starts the summary of a sweep of plan; sweeps[v] are the
// sweep expectations of plan's variant v.
func newAggregate(plan check.Plan, sweeps [][]scenario.SweepExpect, sum Summary) *aggregate {
	a := &aggregate{sum: sum, plan: plan, index: map[string]int{}, repeats: map[int64]*seedRepeats{}}
	a.sum.SchemaVersion = SchemaVersion
	a.sum.Verdicts = map[string]int{}
	for i, v := range plan.Variants {
		a.index[v.Name] = i
		vs := VariantSummary{Name: v.Name, Strategy: v.Strategy}
		for _, vr := range v.Varies {
			vs.Varies = append(vs.Varies, vr.Count)
		}
		a.sum.Variants = append(a.sum.Variants, vs)
		counts := make([]map[int]int, len(check.Table))
		for c := range counts {
			counts[c] = map[int]int{}
		}
		a.values = append(a.values, counts)
		exp := map[string]*ExpectationSummary{}
		for _, e := range v.Expect {
			exp[e.Count+" "+e.Text] = &ExpectationSummary{Check: e.Count + " " + e.Text}
		}
		a.expects = append(a.expects, exp)
		var se []sweepExpect
		if i < len(sweeps) {
			for _, x := range sweeps[i] {
				se = append(se, sweepExpect{SweepExpect: x, count: countIndex(x.Count)})
			}
		}
		a.sweeps = append(a.sweeps, se)
	}
	return a
}

// add folds in run r, the repeat-th run of seed.
func (a *aggregate) add(id RunID, r check.Run, reproduce, saved string) {
	a.sum.Finished++
	verdict := r.Verdict()
	a.sum.Verdicts[verdict]++
	if r.Broker != "" && (a.brokerOf == nil || id.compare(*a.brokerOf) < 0) {
		a.sum.Broker, a.brokerOf = r.Broker, &id
	}
	if verdict != check.VerdictPass {
		a.sum.Failures = append(a.sum.Failures, Failure{RunID: id, Verdict: verdict, Problems: problems(r), Reproduce: reproduce, Saved: saved})
	}
	var counts map[string]check.Counts
	if r.Valid() {
		counts = map[string]check.Counts{}
		for _, v := range r.Variants {
			i, ok := a.index[v.Name]
			if !ok {
				continue
			}
			counts[v.Name] = v.Counts
			a.sum.Variants[i].Runs++
			for c, row := range check.Table {
				a.values[i][c][row.Value(v.Counts)]++
			}
			for j := range a.sweeps[i] {
				e := &a.sweeps[i][j]
				if got := check.Table[e.count].Value(v.Counts); !e.Each.Holds(got) {
					e.miss(Miss{RunID: id, Got: got, Reproduce: reproduce})
				}
			}
			for _, e := range v.Expectations {
				es := a.expects[i][e.Check]
				if es == nil {
					continue
				}
				if e.Passed {
					es.Held++
				} else {
					es.Failed++
					es.FailedIn = append(es.FailedIn, id)
				}
			}
		}
	}
	if a.sum.Repeat > 1 {
		sr := a.repeats[id.Seed]
		if sr == nil {
			sr = &seedRepeats{}
			a.repeats[id.Seed] = sr
		}
		sr.judged++
		if counts != nil {
			sr.valid = append(sr.valid, repeatCounts{repeat: id.Repeat, counts: counts})
		}
		if sr.judged == a.sum.Repeat {
			a.compareRepeats(id.Seed, sr)
			delete(a.repeats, id.Seed)
		}
	}
}

// compareRepeats notes the counts not declared in varies: that differ
// between the valid repeats of seed.
func (a *aggregate) compareRepeats(seed int64, sr *seedRepeats) {
	if len(sr.valid) < 2 {
		return
	}
	slices.SortFunc(sr.valid, func(x, y repeatCounts) int { return cmp.Compare(x.repeat, y.repeat) })
	for i, v := range a.plan.Variants {
		declared := a.sum.Variants[i].Varies
		for _, row := range check.Table {
			if slices.Contains(declared, row.Name) {
				continue
			}
			var values []int
			for _, rc := range sr.valid {
				if c, ok := rc.counts[v.Name]; ok {
					values = append(values, row.Value(c))
				}
			}
			if len(values) > 1 && slices.Min(values) != slices.Max(values) {
				a.sum.Moved = append(a.sum.Moved, Moved{Variant: v.Name, Count: row.Name, Seed: seed, Values: values})
			}
		}
	}
}

// problems says why r did not pass, one problem a line.
func problems(r check.Run) []string {
	switch {
	case r.Error != "":
		return []string{"could not run: " + firstLine(r.Error)}
	case r.Incomplete != "":
		return []string{"incomplete: " + firstLine(r.Incomplete)}
	}
	var out []string
	for _, v := range r.Variants {
		for _, why := range v.Invalid {
			out = append(out, fmt.Sprintf("%s: does not count: %s", v.Name, firstLine(why)))
		}
		for _, e := range v.Expectations {
			if !e.Passed {
				out = append(out, fmt.Sprintf("%s: %s (got %d)", v.Name, e.Check, e.Actual))
			}
		}
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// absorb folds in a shard's summary.
func (a *aggregate) absorb(s Summary) {
	a.sum.Runs += s.Runs
	a.sum.Finished += s.Finished
	a.sum.Interrupted = a.sum.Interrupted || s.Interrupted
	a.sum.DurationMS = max(a.sum.DurationMS, s.DurationMS)
	for v, n := range s.Verdicts {
		a.sum.Verdicts[v] += n
	}
	if a.sum.Broker == "" {
		a.sum.Broker = s.Broker
	}
	a.sum.Failures = append(a.sum.Failures, s.Failures...)
	a.sum.Moved = append(a.sum.Moved, s.Moved...)
	for _, vs := range s.Variants {
		i, ok := a.index[vs.Name]
		if !ok {
			continue
		}
		a.sum.Variants[i].Runs += vs.Runs
		for _, cs := range vs.Counts {
			c := slices.IndexFunc(check.Table, func(row check.Count) bool { return row.Name == cs.Name })
			if c < 0 {
				continue
			}
			for _, vr := range cs.Values {
				a.values[i][c][vr[0]] += vr[1]
			}
		}
		for _, se := range vs.SweepExpectations {
			for j := range a.sweeps[i] {
				if e := &a.sweeps[i][j]; e.Check() == se.Check {
					e.miss(se.Missed...)
				}
			}
		}
		for _, e := range vs.Expectations {
			if es := a.expects[i][e.Check]; es != nil {
				es.Held += e.Held
				es.Failed += e.Failed
				es.FailedIn = append(es.FailedIn, e.FailedIn...)
			}
		}
	}
}

// finish computes the distributions and the verdict, and puts the lists
// in a fixed order: the summary of a sweep does not depend on the order
// its runs finished in, nor on how it was sharded.
func (a *aggregate) finish(elapsed time.Duration) Summary {
	for _, seed := range slices.Sorted(maps.Keys(a.repeats)) {
		a.compareRepeats(seed, a.repeats[seed]) // an interrupted sweep's last seeds
	}
	a.repeats = map[int64]*seedRepeats{}
	s := a.sum
	if elapsed > 0 {
		s.DurationMS = elapsed.Milliseconds()
	}
	if s.DurationMS > 0 {
		s.RunsPerSecond = math.Round(float64(s.Finished)*1000/float64(s.DurationMS)*100) / 100
	}
	s.Variants = slices.Clone(s.Variants)
	for i, v := range a.plan.Variants {
		vs := &s.Variants[i]
		vs.Counts = nil
		for c, row := range check.Table {
			vs.Counts = append(vs.Counts, distribution(row.Name, a.values[i][c]))
		}
		vs.Expectations = []ExpectationSummary{}
		for _, e := range v.Expect {
			es := *a.expects[i][e.Count+" "+e.Text]
			es.FailedIn = slices.SortedFunc(slices.Values(es.FailedIn), RunID.compare)
			if es.FailedIn == nil {
				es.FailedIn = []RunID{}
			}
			vs.Expectations = append(vs.Expectations, es)
		}
		vs.SweepExpectations = []SweepExpectationSummary{}
		for _, e := range a.sweeps[i] {
			held := 0
			for value, runs := range a.values[i][e.count] {
				if e.Each.Holds(value) {
					held += runs
				}
			}
			missed := slices.Clone(e.missed)
			if missed == nil {
				missed = []Miss{}
			}
			vs.SweepExpectations = append(vs.SweepExpectations, SweepExpectationSummary{
				Check: e.Check(), Passed: e.HoldsOver(held, vs.Runs), Held: held, Runs: vs.Runs, Missed: missed,
			})
		}
	}
	s.Failures = slices.SortedFunc(slices.Values(s.Failures), func(x, y Failure) int { return x.compare(y.RunID) })
	if s.Failures == nil {
		s.Failures = []Failure{}
	}
	variantAt := func(name string) int { return a.index[name] }
	countAt := countIndex
	s.Moved = slices.SortedFunc(slices.Values(s.Moved), func(x, y Moved) int {
		return cmp.Or(cmp.Compare(x.Seed, y.Seed), cmp.Compare(variantAt(x.Variant), variantAt(y.Variant)), cmp.Compare(countAt(x.Count), countAt(y.Count)))
	})
	if s.Moved == nil {
		s.Moved = []Moved{}
	}
	s.Verdict = verdictOf(s)
	s.Passed = s.Verdict == check.VerdictPass
	s.Valid = s.Verdict == check.VerdictPass || s.Verdict == check.VerdictFail
	return s
}

// countIndex is the index of count name in check.Table, -1 if none.
func countIndex(name string) int {
	return slices.IndexFunc(check.Table, func(row check.Count) bool { return row.Name == name })
}

// verdictOf is the worst verdict of the finished runs, FAIL at least when
// a sweep expectation failed, and INCOMPLETE at least when runs are
// missing.
func verdictOf(s Summary) string {
	worst := len(check.Verdicts) - 1
	for v, n := range s.Verdicts {
		if i := slices.Index(check.Verdicts, v); n > 0 && i >= 0 {
			worst = min(worst, i)
		}
	}
	if SweepFailed(s) > 0 {
		worst = min(worst, slices.Index(check.Verdicts, check.VerdictFail))
	}
	if s.Finished < s.Runs || s.Interrupted || len(s.MissingShards) > 0 {
		worst = min(worst, slices.Index(check.Verdicts, check.VerdictIncomplete))
	}
	return check.Verdicts[worst]
}

// SweepFailed is how many sweep expectations of s failed, over every
// variant.
func SweepFailed(s Summary) int {
	n := 0
	for _, v := range s.Variants {
		for _, e := range v.SweepExpectations {
			if !e.Passed {
				n++
			}
		}
	}
	return n
}

// distribution summarizes runs by value of one count.
func distribution(name string, byValue map[int]int) CountSummary {
	cs := CountSummary{Name: name, Values: [][2]int{}}
	values := slices.Sorted(maps.Keys(byValue))
	total := 0
	for _, v := range values {
		if byValue[v] > 0 {
			cs.Values = append(cs.Values, [2]int{v, byValue[v]})
			total += byValue[v]
		}
	}
	if total == 0 {
		return cs
	}
	cs.Min, cs.Max = cs.Values[0][0], cs.Values[len(cs.Values)-1][0]
	cs.Median, cs.P99 = nearestRank(cs.Values, total, 50), nearestRank(cs.Values, total, 99)
	return cs
}

// nearestRank is the p-th percentile of the runs: the smallest value that
// at least p % of them do not exceed.
func nearestRank(values [][2]int, total, p int) int {
	rank := (p*total + 99) / 100 // ceil(p/100 * total)
	seen := 0
	for _, vr := range values {
		seen += vr[1]
		if seen >= rank {
			return vr[0]
		}
	}
	return values[len(values)-1][0]
}

// Merge adds up the summaries of a sweep's shards (-o json of each
// "--shard I/N") into the summary the whole sweep would have written,
// timing aside (it keeps the slowest shard's duration). The shards must
// be of one sweep: same scenario, seeds, repeat, messages and variants,
// each shard once. Shards not given are named in MissingShards and make
// the summary INCOMPLETE.
func Merge(shards []Summary) (Summary, error) {
	if len(shards) == 0 {
		return Summary{}, errors.New("no summaries to merge")
	}
	for i, s := range shards {
		if s.SchemaVersion != SchemaVersion {
			return Summary{}, fmt.Errorf("summary %d has schema_version %d; this dqbench reads %d: merge with the dqbench that wrote it", i+1, s.SchemaVersion, SchemaVersion)
		}
	}
	first := shards[0]
	n := 0
	seen := map[int]bool{}
	for i, s := range shards {
		if s.Scenario != first.Scenario || s.Seeds != first.Seeds || s.Repeat != first.Repeat || s.Messages != first.Messages || !sameVariants(s, first) {
			return Summary{}, fmt.Errorf("summary %d is of another sweep (%s, seeds %s, repeat %d, %d messages) than summary 1 (%s, seeds %s, repeat %d, %d messages, or other variants)",
				i+1, s.Scenario, s.Seeds, s.Repeat, s.Messages, first.Scenario, first.Seeds, first.Repeat, first.Messages)
		}
		if s.Shard == "" {
			if len(shards) > 1 {
				return Summary{}, fmt.Errorf("summary %d is a whole sweep, not a shard: there is nothing to merge it with", i+1)
			}
			continue
		}
		sh, err := ParseShard(s.Shard)
		if err != nil {
			return Summary{}, fmt.Errorf("summary %d: %w", i+1, err)
		}
		if n != 0 && sh.N != n {
			return Summary{}, fmt.Errorf("summary %d is shard %s, summary 1 of %d shards", i+1, s.Shard, n)
		}
		n = sh.N
		if seen[sh.I] {
			return Summary{}, fmt.Errorf("shard %s is given twice", s.Shard)
		}
		seen[sh.I] = true
	}
	seeds, err := ParseSeeds(first.Seeds)
	if err != nil {
		return Summary{}, fmt.Errorf("summary 1: %w", err)
	}
	shards = slices.SortedFunc(slices.Values(shards), func(x, y Summary) int { return cmp.Compare(shardIndex(x), shardIndex(y)) })
	plan, sweeps, err := planOf(first)
	if err != nil {
		return Summary{}, fmt.Errorf("summary 1: %w", err)
	}
	a := newAggregate(plan, sweeps, Summary{
		Scenario: first.Scenario, Seeds: first.Seeds, Repeat: first.Repeat, Messages: first.Messages,
	})
	for _, s := range shards {
		a.absorb(s)
	}
	a.sum.Runs = len(seeds) * first.Repeat
	for i := 1; i <= n; i++ {
		if !seen[i] {
			a.sum.MissingShards = append(a.sum.MissingShards, Shard{I: i, N: n}.String())
		}
	}
	return a.finish(0), nil
}

func shardIndex(s Summary) int {
	sh, _ := ParseShard(s.Shard)
	return sh.I
}

func sameVariants(a, b Summary) bool {
	return slices.EqualFunc(a.Variants, b.Variants, func(x, y VariantSummary) bool {
		return x.Name == y.Name && x.Strategy == y.Strategy && slices.Equal(x.Varies, y.Varies) &&
			slices.EqualFunc(x.Expectations, y.Expectations, func(p, q ExpectationSummary) bool { return p.Check == q.Check }) &&
			slices.EqualFunc(x.SweepExpectations, y.SweepExpectations, func(p, q SweepExpectationSummary) bool { return p.Check == q.Check })
	})
}

// planOf is the plan a summary was made with, as far as aggregating reads
// it: names, strategies, expectations and varies; and each variant's sweep
// expectations, read back from their text.
func planOf(s Summary) (check.Plan, [][]scenario.SweepExpect, error) {
	var p check.Plan
	var sweeps [][]scenario.SweepExpect
	for _, v := range s.Variants {
		var se []scenario.SweepExpect
		for _, e := range v.SweepExpectations {
			count, text, _ := strings.Cut(e.Check, " ")
			x, err := scenario.ParseSweepExpectation(text)
			if err == nil && countIndex(count) < 0 {
				err = fmt.Errorf("no count named %q", count)
			}
			if err != nil {
				return p, nil, fmt.Errorf("variant %s: sweep expectation %q: %w", v.Name, e.Check, err)
			}
			se = append(se, scenario.SweepExpect{Count: count, SweepExpectation: x})
		}
		sweeps = append(sweeps, se)
		pv := check.PlanVariant{Name: v.Name, Strategy: v.Strategy}
		for _, e := range v.Expectations {
			count, text, _ := strings.Cut(e.Check, " ")
			pv.Expect = append(pv.Expect, check.Expect{Count: count, Text: text})
		}
		for _, c := range v.Varies {
			pv.Varies = append(pv.Varies, check.Varies{Count: c})
		}
		p.Variants = append(p.Variants, pv)
	}
	return p, sweeps, nil
}

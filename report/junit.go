package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/junitxml"
)

// JUnit writes runs as JUnit XML: one testsuite per scenario run, one
// testcase per variant expectation. A broken expectation is a failure; a
// run that does not count (invalid or incomplete, exit 3) makes its
// testcases errors.
func JUnit(w io.Writer, runs []check.Run) error {
	all := junitxml.Suites{Name: "dqbench"}
	var total float64
	for _, r := range runs {
		s := junitxml.Suite{
			Name: r.Scenario,
			Time: seconds(r.Duration.Seconds()),
			Properties: []junitxml.Property{
				{Name: "seed", Value: fmt.Sprint(r.Seed)},
				{Name: "messages", Value: fmt.Sprint(r.Messages)},
				{Name: "broker", Value: r.Broker},
			},
		}
		if p := r.Provenance; p != nil {
			s.Properties = append(s.Properties,
				junitxml.Property{Name: "dqbench", Value: p.DQBench}, junitxml.Property{Name: "go", Value: p.Go}, junitxml.Property{Name: "broker_version", Value: p.Broker},
				junitxml.Property{Name: "clients", Value: strings.Join(p.Clients, ", ")}, junitxml.Property{Name: "stores", Value: strings.Join(p.Stores, ", ")})
		}
		total += r.Duration.Seconds()
		if r.Error != "" {
			// A run that could not start is one testcase in error, so that
			// a test reporter shows it red, whatever its variants expected.
			msg, _, _ := strings.Cut(r.Error, "\n")
			s.Cases = []junitxml.Case{{Name: r.Scenario + ": run", Classname: r.Scenario, Time: seconds(r.Duration.Seconds()),
				Error: &junitxml.Problem{Message: "the run could not start: " + msg, Type: "error", Text: r.Error}}}
			s.Tests, s.Errors = 1, 1
			all.Tests++
			all.Errors++
			all.Suites = append(all.Suites, s)
			continue
		}
		var notes []string
		for _, v := range r.Variants {
			var invalid []string
			if r.Incomplete != "" {
				invalid = append(invalid, "the run is incomplete: "+r.Incomplete)
			}
			invalid = append(invalid, v.Invalid...)
			cases := make([]junitxml.Case, 0, len(v.Expectations))
			for _, e := range v.Expectations {
				c := junitxml.Case{Name: v.Name + ": " + e.Check, Classname: r.Scenario + "." + v.Name, Time: "0"}
				if !e.Passed && !e.Skipped {
					c.Failure = &junitxml.Problem{
						Message: fmt.Sprintf("expected %s, got %d", e.Check, e.Actual),
						Type:    "expectation",
						Text:    fmt.Sprintf("variant %s (strategy %s): expected %s, actual %s = %d", v.Name, v.Strategy, e.Check, countOf(e.Check), e.Actual),
					}
				}
				cases = append(cases, c)
			}
			if len(cases) == 0 && len(invalid) > 0 {
				// An invalid variant without expectations still fails the job.
				cases = append(cases, junitxml.Case{Name: v.Name + ": valid experiment", Classname: r.Scenario + "." + v.Name, Time: "0"})
			}
			if len(invalid) > 0 {
				for i := range cases {
					cases[i].Failure = nil
					cases[i].Error = &junitxml.Problem{
						Message: "the experiment does not count: " + invalid[0],
						Type:    "invalid",
						Text:    strings.Join(invalid, "\n"),
					}
				}
			}
			for _, c := range cases {
				switch {
				case c.Error != nil:
					s.Errors++
				case c.Failure != nil:
					s.Failures++
				}
			}
			s.Cases = append(s.Cases, cases...)
			for _, n := range v.Notes {
				notes = append(notes, "why "+v.Name+": "+n)
			}
		}
		s.Tests = len(s.Cases)
		s.SystemOut = strings.Join(notes, "\n")
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
		all.Suites = append(all.Suites, s)
	}
	all.Time = seconds(total)
	return junitxml.Write(w, all)
}

// noRunJUnit writes one testcase in error, named after what failed, whose
// message is the first problem (FILE:LINE:COL first for a scenario's), so
// that a test reporter shows it red and a grep for <error finds it.
func noRunJUnit(w io.Writer, n NoRun) error {
	name, kind := "dqbench: valid scenarios and flags", "invalid"
	if n.Verdict != check.VerdictInvalid {
		name, kind = "dqbench: run", "error"
	}
	problems := n.Problems()
	s := junitxml.Suite{Name: "dqbench", Tests: 1, Errors: 1, Time: seconds(0), Cases: []junitxml.Case{{
		Name: name, Classname: "dqbench", Time: "0",
		Error: &junitxml.Problem{Message: problems[0], Type: kind, Text: n.Error},
	}}}
	return junitxml.Write(w, junitxml.Suites{Name: "dqbench", Tests: 1, Errors: 1, Time: seconds(0), Suites: []junitxml.Suite{s}})
}

// countOf is the count an expectation checks: "duplicates > 0" → "duplicates".
func countOf(check string) string {
	name, _, _ := strings.Cut(check, " ")
	return name
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }

package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/dqbench/dqbench/check"
)

// The JUnit XML that CI systems read (GitLab, Jenkins, GitHub test
// reporters): a testsuites element, one testsuite per scenario run, one
// testcase per variant expectation. A broken expectation is a failure; a
// run that does not count (invalid or incomplete, exit 3) makes its
// testcases errors.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnit writes runs as JUnit XML.
func JUnit(w io.Writer, runs []check.Run) error {
	all := junitSuites{Name: "dqbench"}
	var total float64
	for _, r := range runs {
		s := junitSuite{
			Name: r.Scenario,
			Time: seconds(r.Duration.Seconds()),
			Properties: []junitProperty{
				{"seed", fmt.Sprint(r.Seed)},
				{"messages", fmt.Sprint(r.Messages)},
				{"broker", r.Broker},
			},
		}
		if p := r.Provenance; p != nil {
			s.Properties = append(s.Properties,
				junitProperty{"dqbench", p.DQBench}, junitProperty{"go", p.Go}, junitProperty{"broker_version", p.Broker},
				junitProperty{"clients", strings.Join(p.Clients, ", ")}, junitProperty{"stores", strings.Join(p.Stores, ", ")})
		}
		total += r.Duration.Seconds()
		if r.Error != "" {
			// A run that could not start is one testcase in error, so that
			// a test reporter shows it red, whatever its variants expected.
			msg, _, _ := strings.Cut(r.Error, "\n")
			s.Cases = []junitCase{{Name: r.Scenario + ": run", Classname: r.Scenario, Time: seconds(r.Duration.Seconds()),
				Error: &junitProblem{Message: "the run could not start: " + msg, Type: "error", Text: r.Error}}}
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
			cases := make([]junitCase, 0, len(v.Expectations))
			for _, e := range v.Expectations {
				c := junitCase{Name: v.Name + ": " + e.Check, Classname: r.Scenario + "." + v.Name, Time: "0"}
				if !e.Passed && !e.Skipped {
					c.Failure = &junitProblem{
						Message: fmt.Sprintf("expected %s, got %d", e.Check, e.Actual),
						Type:    "expectation",
						Text:    fmt.Sprintf("variant %s (strategy %s): expected %s, actual %s = %d", v.Name, v.Strategy, e.Check, countOf(e.Check), e.Actual),
					}
				}
				cases = append(cases, c)
			}
			if len(cases) == 0 && len(invalid) > 0 {
				// An invalid variant without expectations still fails the job.
				cases = append(cases, junitCase{Name: v.Name + ": valid experiment", Classname: r.Scenario + "." + v.Name, Time: "0"})
			}
			if len(invalid) > 0 {
				for i := range cases {
					cases[i].Failure = nil
					cases[i].Error = &junitProblem{
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
	return writeJUnit(w, all)
}

func writeJUnit(w io.Writer, all junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
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
	s := junitSuite{Name: "dqbench", Tests: 1, Errors: 1, Time: seconds(0), Cases: []junitCase{{
		Name: name, Classname: "dqbench", Time: "0",
		Error: &junitProblem{Message: problems[0], Type: kind, Text: n.Error},
	}}}
	return writeJUnit(w, junitSuites{Name: "dqbench", Tests: 1, Errors: 1, Time: seconds(0), Suites: []junitSuite{s}})
}

// countOf is the count an expectation checks: "duplicates > 0" → "duplicates".
func countOf(check string) string {
	name, _, _ := strings.Cut(check, " ")
	return name
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }

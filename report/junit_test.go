package report_test

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"

	"github.com/dqbench/dqbench/report"
)

// TestJUnitParses: the output reads back with encoding/xml and with a JUnit
// parser (github.com/joshdk/go-junit, what Go CI tools use): one suite per
// run, one case per expectation, a broken expectation a failure with
// expected and actual, an invalid variant an error.
func TestJUnitParses(t *testing.T) {
	var buf bytes.Buffer
	if err := report.Write(&buf, "junit", runs(), report.Options{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name `xml:"testsuites"`
		Tests   int      `xml:"tests,attr"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	suites, err := junit.Ingest(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(suites) != 2 || suites[0].Name != "split-crash" || suites[1].Name != "quickstart" {
		t.Fatalf("suites %+v, want split-crash and quickstart", suites)
	}
	byName := map[string]junit.Test{}
	for _, tc := range suites[0].Tests {
		byName[tc.Name] = tc
	}
	// naive: 2 expectations; split: 1; atomic: invalid, none.
	if len(suites[0].Tests) != 4 || doc.Tests != 4 {
		t.Errorf("%d testcases (header says %d), want 4", len(suites[0].Tests), doc.Tests)
	}
	for name, want := range map[string]junit.Status{
		"naive: duplicates > 0":    junit.StatusPassed,
		"naive: lost == 0":         junit.StatusPassed,
		"split: lost == 0":         junit.StatusFailed,
		"atomic: valid experiment": junit.StatusError,
	} {
		tc, ok := byName[name]
		if !ok {
			t.Errorf("no testcase %q", name)
			continue
		}
		if tc.Status != want {
			t.Errorf("%s: status %s, want %s", name, tc.Status, want)
		}
	}
	if msg := byName["split: lost == 0"].Message; msg != "expected lost == 0, got 50" {
		t.Errorf("failure message %q, want expected and actual", msg)
	}
	if s := suites[0].Totals; s.Failed != 1 || s.Error != 1 || s.Passed != 2 {
		t.Errorf("totals %+v", s)
	}
}

// TestJUnitIncomplete: every testcase of an incomplete run is an error,
// even one whose expectation held.
func TestJUnitIncomplete(t *testing.T) {
	rs := runs()[:1]
	rs[0].Incomplete = "deadline passed"
	rs[0].Variants = rs[0].Variants[:2]
	var buf bytes.Buffer
	if err := report.JUnit(&buf, rs); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range suites[0].Tests {
		if tc.Status != junit.StatusError || !strings.Contains(tc.Message, "incomplete: deadline passed") {
			t.Errorf("%s: %s %q, want an error saying the run is incomplete", tc.Name, tc.Status, tc.Message)
		}
	}
}

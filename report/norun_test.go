package report_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/report"
)

// invalid is what "dqbench run" says of two invalid scenarios.
var invalid = report.NoRun{Verdict: check.VerdictInvalid, Error: `bad.yaml:5:1: unknown key "stratgies" at the top level (did you mean "strategies"?)
no scenario file or built-in named "quickstrat" (did you mean "quickstart"?)`}

// TestNoRun: when nothing ran (an invalid scenario, exit code 2), every
// format but the table still writes a report that parses and carries the
// error, FILE:LINE:COL first.
func TestNoRun(t *testing.T) {
	render := func(format string, n report.NoRun) []byte {
		t.Helper()
		var buf bytes.Buffer
		if err := report.WriteNoRun(&buf, format, n); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}

	var doc struct {
		Passed *bool  `json:"passed"`
		Valid  *bool  `json:"valid"`
		Error  string `json:"error"`
		Runs   []any  `json:"runs"`
	}
	if err := json.Unmarshal(render("json", invalid), &doc); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	if doc.Passed == nil || *doc.Passed || doc.Valid == nil || *doc.Valid || doc.Error != invalid.Error || doc.Runs == nil || len(doc.Runs) != 0 {
		t.Errorf("JSON %+v, want passed and valid false, the error and no runs", doc)
	}

	for _, n := range []report.NoRun{invalid, {Verdict: check.VerdictError, Error: "interrupted: context canceled"}} {
		out := render("junit", n)
		suites, err := junit.Ingest(out)
		if err != nil {
			t.Fatalf("JUnit does not parse: %v\n%s", err, out)
		}
		if len(suites) != 1 || len(suites[0].Tests) != 1 {
			t.Fatalf("%d suites, want one with one testcase:\n%s", len(suites), out)
		}
		tc := suites[0].Tests[0]
		first, _, _ := strings.Cut(n.Error, "\n")
		if tc.Status != junit.StatusError || tc.Error == nil || tc.Message != first {
			t.Errorf("testcase %+v, want an error whose message is %q", tc, first)
		}
		if !bytes.Contains(out, []byte("<error ")) || !bytes.Contains(out, []byte(`errors="1"`)) {
			t.Errorf("JUnit lacks <error or errors=\"1\":\n%s", out)
		}
	}
	if out := string(render("junit", invalid)); !strings.Contains(out, `message="bad.yaml:5:1: unknown key`) {
		t.Errorf("the <error>'s message does not start with FILE:LINE:COL:\n%s", out)
	}

	md := string(render("markdown", invalid))
	if !strings.HasPrefix(md, "### dqbench: INVALID\n\n- bad.yaml:5:1: unknown key") || !strings.Contains(md, "\n- no scenario file") {
		t.Errorf("Markdown:\n%s", md)
	}
	if out := render("table", invalid); len(out) != 0 {
		t.Errorf("the table wrote %q; its reader has the error on stderr", out)
	}
	if err := report.WriteNoRun(&bytes.Buffer{}, "yaml", invalid); err == nil {
		t.Error("WriteNoRun(yaml) succeeded")
	}
}

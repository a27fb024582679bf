package cmd

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/ansi"
)

// TestJUnitOutput: -o junit has one testcase per expectation; a broken
// expectation is a failure saying expected and actual, and exit code 1.
func TestJUnitOutput(t *testing.T) {
	cli, failing := scenarioFiles(t)
	var doc struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	r := run(t, nil, "run", cli, failing, "-o", "junit")
	if r.code != ExitFail {
		t.Fatalf("exit %d, want %d: %s", r.code, ExitFail, r.err)
	}
	if err := xml.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, r.out)
	}
	if len(doc.Suites) != 2 || doc.Suites[0].Name != "cli" || doc.Suites[1].Name != "failing" {
		t.Fatalf("suites: %+v", doc.Suites)
	}
	if c := doc.Suites[0].Cases; len(c) != 1 || c[0].Failure != nil {
		t.Errorf("cli: %+v, want one passing case", c)
	}
	if c := doc.Suites[1].Cases; len(c) != 1 || c[0].Failure == nil || c[0].Failure.Message != "expected duplicates == 0, got 1" {
		t.Errorf("failing: %+v, want a failure with expected and actual", c)
	}
}

// TestHTMLFlag: --html writes the page beside the table; -o html writes it
// to stdout; neither fetches anything.
func TestHTMLFlag(t *testing.T) {
	cli, _ := scenarioFiles(t)
	page := filepath.Join(t.TempDir(), "report.html")
	r := run(t, nil, "run", cli, "--html", page)
	if r.code != ExitPass {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	if !strings.Contains(r.out, "PASS none: duplicates > 0") {
		t.Errorf("no table beside --html:\n%s", r.out)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, html := range []string{string(b), run(t, nil, "run", cli, "-o", "html").out} {
		if !strings.HasPrefix(html, "<!DOCTYPE html>") || !strings.Contains(html, `data-verdict="duplicate" data-intent="2"`) {
			t.Errorf("page lacks the duplicate story of intent 2:\n%.2000s", html)
		}
		if regexp.MustCompile(`(?i)(src|href)\s*=\s*"?https?:`).MatchString(html) || strings.Contains(html, "http://") || strings.Contains(html, "https://") {
			t.Error("the page refers to the network")
		}
	}
	if r := run(t, nil, "run", cli, "--html", "/no/such/dir/r.html"); r.code != ExitUsage {
		t.Errorf("--html into a missing directory: exit %d", r.code)
	}
	if r := run(t, nil, "run", cli, "-o", "pdf"); r.code != ExitUsage || !strings.Contains(r.err, "html") {
		t.Errorf("-o pdf: exit %d, %s", r.code, r.err)
	}
}

// TestCheckHTML: check renders the page of a real saved run: every variant,
// fault marks, a duplicate story and a loss story.
func TestCheckHTML(t *testing.T) {
	r := runStreams(t, Streams{}, "check", "../explain/testdata/quickstart", "-o", "html")
	if r.code != ExitPass {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	for _, want := range []string{
		`class="timeline" data-variant="none"`, `class="timeline" data-variant="dedup-table"`, `class="timeline" data-variant="dedup-table-split"`,
		`class="fault-mark"`, `data-variant="none" data-verdict="duplicate" data-intent="8"`,
		`data-variant="dedup-table-split" data-verdict="lost" data-intent="35"`, `class="down"`,
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

// TestWideFlag: on a narrow terminal and piped the table drops columns
// (piped, it fits 80 columns) unless --wide, which shows every column;
// -o json has every count either way.
func TestWideFlag(t *testing.T) {
	const saved = "../explain/testdata/quickstart"
	narrow := runStreams(t, Streams{Width: 80}, "check", saved)
	wide := runStreams(t, Streams{Width: 80}, "check", saved, "--wide")
	piped := runStreams(t, Streams{}, "check", saved)
	pipedWide := runStreams(t, Streams{}, "check", saved, "--wide")
	if strings.Contains(narrow.out, "indeterminate") || !strings.Contains(wide.out, "indeterminate") {
		t.Errorf("narrow:\n%s\nwide:\n%s", narrow.out, wide.out)
	}
	if strings.Contains(piped.out, "indeterminate") || !strings.Contains(piped.out, "--wide shows them") {
		t.Errorf("piped without --wide shows every column:\n%s", piped.out)
	}
	for _, l := range strings.Split(piped.out, "\n") {
		if strings.ContainsAny(l, "┌│├└") && ansi.Width(l) > 80 {
			t.Errorf("piped table line %d wide:\n%s", ansi.Width(l), l)
		}
	}
	for _, c := range check.Table {
		if !strings.Contains(pipedWide.out, c.Column) {
			t.Errorf("piped --wide: no %s column:\n%s", c.Column, pipedWide.out)
		}
	}
	js := runStreams(t, Streams{}, "check", saved, "-o", "json")
	for _, name := range check.CountNames() {
		if !strings.Contains(js.out, `"`+name+`"`) {
			t.Errorf("piped -o json: no %s count", name)
		}
	}
}

// TestReportOfNoRun: an invalid scenario or a bad flag (exit code 2)
// still writes the report asked for, parseable and saying why (JUnit an
// <error> whose message starts FILE:LINE:COL, JSON valid false and the
// error, the HTML page INVALID), so that CI does not read an empty file as
// a pass; the table writes nothing (stderr says it); a bad -o is itself
// the error.
func TestReportOfNoRun(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nname: bad\nbroker: {kind: kafka}\nstratgies: []\nvariants:\n  - {name: none, strategy: none}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cli, _ := scenarioFiles(t)
	where := bad + `:4:1: unknown key "stratgies"`
	type junitDoc struct {
		Errors int `xml:"errors,attr"`
		Suites []struct {
			Cases []struct {
				Error *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	junitError := func(t *testing.T, out string) string {
		t.Helper()
		var doc junitDoc
		if err := xml.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("not XML: %v\n%q", err, out)
		}
		if doc.Errors != 1 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 1 || doc.Suites[0].Cases[0].Error == nil {
			t.Fatalf("want one testcase in error:\n%s", out)
		}
		return doc.Suites[0].Cases[0].Error.Message
	}
	type jsonDoc struct {
		Passed *bool  `json:"passed"`
		Valid  *bool  `json:"valid"`
		Error  string `json:"error"`
		Runs   []any  `json:"runs"`
	}
	jsonError := func(t *testing.T, out string) string {
		t.Helper()
		var doc jsonDoc
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("not JSON: %v\n%q", err, out)
		}
		if doc.Passed == nil || *doc.Passed || doc.Valid == nil || *doc.Valid || doc.Runs == nil || len(doc.Runs) != 0 {
			t.Fatalf("want passed and valid false, no runs:\n%s", out)
		}
		return doc.Error
	}

	for _, tc := range []struct {
		name string
		args []string
		test func(t *testing.T, r result)
	}{
		{"invalid scenario, junit", []string{"run", bad, "-o", "junit"}, func(t *testing.T, r result) {
			if msg := junitError(t, r.out); !strings.HasPrefix(msg, where) {
				t.Errorf("<error message=%q>, want it to start %q", msg, where)
			}
		}},
		{"invalid scenario, json", []string{"run", "-o", "json", bad}, func(t *testing.T, r result) {
			if msg := jsonError(t, r.out); !strings.HasPrefix(msg, where) {
				t.Errorf("error %q, want it to start %q", msg, where)
			}
		}},
		{"invalid scenario beside a valid one, markdown", []string{"run", cli, bad, "-o", "markdown"}, func(t *testing.T, r result) {
			if !strings.HasPrefix(r.out, "### dqbench: INVALID\n\n- "+where) {
				t.Errorf("Markdown:\n%s", r.out)
			}
		}},
		{"invalid scenario, table", []string{"run", bad}, func(t *testing.T, r result) {
			if r.out != "" || !strings.Contains(r.err, where) {
				t.Errorf("stdout %q, stderr %q: want nothing, and the error on stderr", r.out, r.err)
			}
		}},
		{"unknown flag after -o", []string{"run", cli, "-o", "junit", "--sede", "1"}, func(t *testing.T, r result) {
			if msg := junitError(t, r.out); msg != `unknown flag: --sede (did you mean "--seed"?)` {
				t.Errorf("<error message=%q>", msg)
			}
		}},
		{"unknown flag before -o", []string{"run", cli, "--sede", "1", "--output=json"}, func(t *testing.T, r result) {
			if msg := jsonError(t, r.out); !strings.HasPrefix(msg, "unknown flag: --sede") {
				t.Errorf("error %q", msg)
			}
		}},
		{"bad value of another flag", []string{"run", cli, "--messages", "many", "-ojunit"}, func(t *testing.T, r result) {
			if msg := junitError(t, r.out); !strings.Contains(msg, `"many"`) {
				t.Errorf("<error message=%q>", msg)
			}
		}},
		{"no scenario", []string{"run", "-o", "json", "--quiet"}, func(t *testing.T, r result) {
			if msg := jsonError(t, r.out); !strings.Contains(msg, "requires at least 1 arg") {
				t.Errorf("error %q", msg)
			}
		}},
		{"check of a missing directory", []string{"check", filepath.Join(dir, "runs", "payments"), "-o", "junit"}, func(t *testing.T, r result) {
			junitError(t, r.out)
		}},
		{"bad -o", []string{"run", bad, "-o", "yaml"}, func(t *testing.T, r result) {
			if r.out != "" {
				t.Errorf("stdout %q, want nothing", r.out)
			}
		}},
		{"-o html", []string{"run", bad, "-o", "html"}, func(t *testing.T, r result) {
			if !strings.Contains(r.out, `<h1>dqbench report <span class="verdict INVALID">INVALID</span></h1>`) || !strings.Contains(r.out, "bad.yaml:4:1: unknown key &#34;stratgies&#34;") {
				t.Errorf("page:\n%s", r.out)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, tc.args...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, ExitUsage, r.out, r.err)
			}
			if len(r.fake.calls) != 0 {
				t.Error("the runner ran")
			}
			tc.test(t, r)
		})
	}

	page := filepath.Join(dir, "report.html")
	r := run(t, nil, "run", bad, "--html", page, "-o", "junit")
	b, err := os.ReadFile(page)
	if r.code != ExitUsage || err != nil || !strings.Contains(string(b), `<span class="verdict INVALID">INVALID</span>`) {
		t.Errorf("--html: exit %d, %v:\n%s", r.code, err, b)
	}
	junitError(t, r.out)
}

// TestReportFileFlags: --json, --junit and --markdown write the same run's
// report as -o json, junit and markdown write to stdout (one run, every
// format); for an invalid scenario each file says INVALID and why.
func TestReportFileFlags(t *testing.T) {
	cli, _ := scenarioFiles(t)
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	r := run(t, nil, "run", cli, "-o", "json", "--json", path("r.json"), "--junit", path("r.xml"), "--markdown", path("r.md"))
	if r.code != ExitPass {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	for file, format := range map[string]string{"r.json": "json", "r.xml": "junit", "r.md": "markdown"} {
		b, err := os.ReadFile(path(file))
		if err != nil {
			t.Fatal(err)
		}
		want := r.out
		if format != "json" {
			want = run(t, nil, "run", cli, "-o", format).out
		}
		if strip(string(b)) != strip(want) {
			t.Errorf("--%s wrote:\n%s\nwant what -o %s writes:\n%s", format, b, format, want)
		}
		if !strings.Contains(r.err, "report to "+path(file)) {
			t.Errorf("stderr does not say where the %s report went:\n%s", format, r.err)
		}
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nname: bad\nvariants:\n  - {name: a, strategy: nonne}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "run", bad, "--json", path("bad.json"), "--junit", path("bad.xml"), "--markdown", path("bad.md"))
	if r.code != ExitUsage {
		t.Fatalf("exit %d, want %d: %s", r.code, ExitUsage, r.err)
	}
	var doc struct {
		Valid *bool
		Error string
	}
	b, _ := os.ReadFile(path("bad.json"))
	if err := json.Unmarshal(b, &doc); err != nil || doc.Valid == nil || *doc.Valid || !strings.Contains(doc.Error, "bad.yaml:4:") {
		t.Errorf("--json of an invalid scenario (%v):\n%s", err, b)
	}
	b, _ = os.ReadFile(path("bad.xml"))
	if err := xml.Unmarshal(b, new(struct{})); err != nil || !strings.Contains(string(b), "<error message=") || !strings.Contains(string(b), "bad.yaml:4:25") {
		t.Errorf("--junit of an invalid scenario (%v):\n%s", err, b)
	}
	if b, _ = os.ReadFile(path("bad.md")); !strings.Contains(string(b), "INVALID") || !strings.Contains(string(b), "bad.yaml:4:") {
		t.Errorf("--markdown of an invalid scenario:\n%s", b)
	}
	if r := run(t, nil, "run", cli, "--junit", "/no/such/dir/r.xml"); r.code != ExitUsage || !strings.Contains(r.err, "--junit") {
		t.Errorf("--junit into a missing directory: exit %d, %s", r.code, r.err)
	}
}

// strip drops what differs between two runs of one scenario: durations,
// timestamps.
func strip(s string) string {
	return regexp.MustCompile(`(?m)("?(duration_ms|time|started|timestamp)"?[:=] *"?)[0-9.:TZ+-]+`).ReplaceAllString(s, "$1")
}

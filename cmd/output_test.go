package cmd

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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

// TestWideFlag: on a narrow terminal the table drops columns unless --wide.
func TestWideFlag(t *testing.T) {
	narrow := runStreams(t, Streams{Width: 80}, "check", "../explain/testdata/quickstart")
	wide := runStreams(t, Streams{Width: 80}, "check", "../explain/testdata/quickstart", "--wide")
	piped := runStreams(t, Streams{}, "check", "../explain/testdata/quickstart")
	if strings.Contains(narrow.out, "indeterminate") || !strings.Contains(wide.out, "indeterminate") || !strings.Contains(piped.out, "indeterminate") {
		t.Errorf("narrow:\n%s\nwide:\n%s\npiped:\n%s", narrow.out, wide.out, piped.out)
	}
}

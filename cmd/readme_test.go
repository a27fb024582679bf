package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestREADMERunFlags holds the "run flags" section of docs/cli.md (moved
// there from the README, which links to it) to the run command: every
// flag (but --help) has a row, every connection flag's row names its
// environment variable, and the completion command is documented.
func TestREADMERunFlags(t *testing.T) {
	b, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## `run` flags")
	end := strings.Index(doc, "## `explain` flags")
	if start < 0 || end < start {
		t.Fatal("docs/cli.md has no \"## `run` flags\" section before \"## `explain` flags\"")
	}
	if l, err := os.ReadFile("../README.md"); err != nil || !strings.Contains(string(l), "(docs/cli.md)") {
		t.Errorf("README.md does not link to docs/cli.md (%v)", err)
	}
	section := doc[start:end]
	newRunCmd(Streams{}, nil).Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		row := regexp.MustCompile("(?m)^\\| `(-[a-z], )?--" + regexp.QuoteMeta(f.Name) + "[ `].*$").FindString(section)
		if row == "" {
			t.Errorf("docs/cli.md's run flags have no row for --%s", f.Name)
			return
		}
		if env := envFor(f.Name); env != "" && !strings.Contains(row, "`"+env+"`") {
			t.Errorf("docs/cli.md's row for --%s does not name %s", f.Name, env)
		}
		if f.Shorthand != "" && !strings.Contains(row, "-"+f.Shorthand+", --"+f.Name) {
			t.Errorf("docs/cli.md's row for --%s does not name -%s", f.Name, f.Shorthand)
		}
	})
	for _, want := range []string{"dqbench completion bash", "## Shell completion"} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/cli.md does not say %q", want)
		}
	}
}

// TestREADMEGate runs the README's CI gate (the step that fails the job
// on the JUnit report) on the reports of a passing run, a failing one, an
// invalid scenario, the check of a run that was never saved, and an empty
// file: it passes only the first.
func TestREADMEGate(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the gate with")
	}
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)- name: Fail on any failure or error in the report\n(?:\s+#.*\n)*\s+if: always\(\)\n\s+run: "(.*)"$`).FindSubmatch(b)
	if m == nil {
		t.Fatal(`README.md has no step "Fail on any failure or error in the report" with a run: "..." line`)
	}
	gate := string(m[1])
	cli, failing := scenarioFiles(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nname: bad\nbroker: {kind: kafka}\nmesages: 10\nvariants:\n  - {name: none, strategy: none}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string // nil: an empty file
		passes bool
	}{
		{"passing run", []string{"run", cli, "-o", "junit"}, true},
		{"failed expectation", []string{"run", failing, "-o", "junit"}, false},
		{"invalid scenario", []string{"run", bad, "-o", "junit"}, false},
		{"bad flag", []string{"run", cli, "-o", "junit", "--sede", "1"}, false},
		{"check of a run never saved", []string{"check", filepath.Join(dir, "dqbench-run", "payments"), "-o", "junit"}, false},
		{"empty file", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			var junit string
			if tc.args != nil {
				junit = run(t, nil, tc.args...).out
			}
			if err := os.WriteFile(filepath.Join(work, "dqbench-junit.xml"), []byte(junit), 0o644); err != nil {
				t.Fatal(err)
			}
			sh := exec.Command("sh", "-c", gate)
			sh.Dir = work
			out, err := sh.CombinedOutput()
			if (err == nil) != tc.passes {
				t.Errorf("the gate %s: %v (%s), want it to pass: %v; the report:\n%s", gate, err, out, tc.passes, junit)
			}
		})
	}
}

package cmd

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestREADMERunFlags holds the README's "run flags" section to the run
// command: every flag (but --help) has a row, every connection flag's
// row names its environment variable, and the completion command is
// documented.
func TestREADMERunFlags(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "### `run` flags")
	end := strings.Index(readme, "### `explain` flags")
	if start < 0 || end < start {
		t.Fatal("README.md has no \"### `run` flags\" section before \"### `explain` flags\"")
	}
	section := readme[start:end]
	newRunCmd(Streams{}, nil).Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		row := regexp.MustCompile("(?m)^\\| `(-[a-z], )?--" + regexp.QuoteMeta(f.Name) + "[ `].*$").FindString(section)
		if row == "" {
			t.Errorf("README.md's run flags have no row for --%s", f.Name)
			return
		}
		if env := envFor(f.Name); env != "" && !strings.Contains(row, "`"+env+"`") {
			t.Errorf("README.md's row for --%s does not name %s", f.Name, env)
		}
		if f.Shorthand != "" && !strings.Contains(row, "-"+f.Shorthand+", --"+f.Name) {
			t.Errorf("README.md's row for --%s does not name -%s", f.Name, f.Shorthand)
		}
	})
	for _, want := range []string{"dqbench completion bash", "### Shell completion"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
}

package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/dqbench/dqbench/report"
)

// addOutputFlag registers -o/--output, shared by run and check.
func addOutputFlag(f *pflag.FlagSet, output *string) {
	f.StringVarP(output, "output", "o", "table", "output format: "+strings.Join(report.Formats, ", "))
}

// checkOutput rejects an unknown output format before any work is done.
func checkOutput(output string) error {
	if !slices.Contains(report.Formats, output) {
		return withCode(ExitUsage, fmt.Errorf("--output %q is not allowed (allowed: %s)", output, strings.Join(report.Formats, ", ")))
	}
	return nil
}

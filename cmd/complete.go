package cmd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/report"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/scenarios"
)

// Shell completion: cobra's "completion" command writes the script for
// bash, zsh, fish or PowerShell; these functions say what to offer.

// htmlDoc describes -o html in completions; report.Formats describe the
// others.
const htmlDoc = "the self-contained HTML report"

// completeScenarios offers the built-in names, with their descriptions,
// and the .yaml/.yml files and directories under what is typed.
func completeScenarios(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, name := range scenarios.Names() {
		if !strings.HasPrefix(name, toComplete) {
			continue
		}
		desc := "built-in scenario"
		if data, ok := scenarios.Read(name); ok {
			if sc, err := scenario.Parse("builtin:"+name, data); err == nil && sc.Description != "" {
				desc = sc.Description
			}
		}
		out = append(out, cobra.CompletionWithDesc(name, desc))
	}
	files, onlyDirs := yamlFiles(toComplete)
	out = append(out, files...)
	directive := cobra.ShellCompDirectiveNoFileComp
	if onlyDirs && len(out) == len(files) && len(files) > 0 {
		directive |= cobra.ShellCompDirectiveNoSpace // a directory: go on typing in it
	}
	return out, directive
}

// yamlFiles lists the scenario files (.yaml, .yml) and directories
// whose path starts with prefix; onlyDirs says every one is a directory.
// Hidden entries only when prefix names one.
func yamlFiles(prefix string) (out []cobra.Completion, onlyDirs bool) {
	dir, base := filepath.Split(prefix)
	read := dir
	if read == "" {
		read = "."
	}
	entries, err := os.ReadDir(read)
	if err != nil {
		return nil, false
	}
	onlyDirs = true
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			if fi, err := os.Stat(filepath.Join(read, name)); err == nil {
				isDir = fi.IsDir()
			}
		}
		switch {
		case isDir:
			out = append(out, dir+name+"/")
		case strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml"):
			out = append(out, dir+name)
			onlyDirs = false
		}
	}
	return out, onlyDirs
}

// completeFormats offers the -o values.
func completeFormats(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, f := range append(slices.Clone(report.Formats), report.Format{Name: "html", Doc: htmlDoc}) {
		if strings.HasPrefix(f.Name, toComplete) {
			out = append(out, cobra.CompletionWithDesc(f.Name, f.Doc))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeVariants offers the variant names of the scenarios already on
// the command line, with each one's strategy.
func completeVariants(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	var seen []string
	for _, arg := range args {
		sc, err := scenario.Resolve(arg)
		if err != nil {
			continue
		}
		for _, v := range sc.Variants {
			if slices.Contains(seen, v.Name) || !strings.HasPrefix(v.Name, toComplete) {
				continue
			}
			seen = append(seen, v.Name)
			desc := string(v.Strategy)
			if v.Process != nil {
				desc = v.Process.Label()
			}
			if desc == v.Name { // named after its strategy: nothing to add
				out = append(out, v.Name)
				continue
			}
			out = append(out, cobra.CompletionWithDesc(v.Name, "strategy "+desc))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeDirs offers directories only (a saved run for check and explain).
func completeDirs(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

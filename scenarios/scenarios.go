// Package scenarios holds the built-in scenarios: the YAML files beside
// this one, embedded so that a built-in name ("dqbench run quickstart")
// works from any directory. README.md in this folder lists them by lesson.
//
// Not to be confused with package scenario (singular), which is the
// format: it parses and validates a scenario file, built-in or not.
// This package only holds the files; scenario.Resolve reads them by name.
package scenarios

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Names lists the built-in scenario names, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Read returns the YAML of the built-in scenario name.
func Read(name string) ([]byte, bool) {
	b, err := files.ReadFile(name + ".yaml")
	return b, err == nil
}

// Package builtin holds the built-in scenarios, embedded so that a
// built-in name works from any directory.
package builtin

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

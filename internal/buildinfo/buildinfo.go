// Package buildinfo says which build of dqbench is running and which
// versions of its libraries it links, from the binary's own build
// information (debug.ReadBuildInfo).
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Version is dqbench's module version and VCS revision: "v1.2.0",
// "(devel) rev 1a2b3c4d5e6f", "(devel) rev 1a2b3c4d5e6f+modified".
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	rev, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += " rev " + rev[:min(12, len(rev))]
		if modified {
			v += "+modified"
		}
	}
	return v
}

// Go is the Go version the binary was built with.
func Go() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return "unknown"
}

// Module is "path version" for a module the binary links (the version
// after a replace, if any), or path alone when it is not linked.
func Module(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return path
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				d = d.Replace
			}
			return path + " " + d.Version
		}
	}
	return path
}

// Package buildinfo says which build of dqbench is running and which
// versions of its libraries it links, from the binary's own build
// information (debug.ReadBuildInfo).
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// The VCS stamp given by -ldflags -X, for a build Go cannot stamp
// itself: Go looks for a .git directory, and a linked git worktree has a
// .git file, so "make build" passes these there. When vcsRevision is set
// they win over the build's own vcs.* settings.
var (
	vcsRevision string // the full commit hash
	vcsTime     string // the commit's time, RFC 3339 in UTC
	vcsModified string // "true" for uncommitted changes
)

// Version is dqbench's module version, or for a build from a clone the
// VCS revision it was built from, with the commit's time and +modified
// for uncommitted changes: "v1.2.0",
// "rev 1a2b3c4d5e6f 2026-12-05T23:10:02Z",
// "rev 1a2b3c4d5e6f+modified 2026-12-05T23:10:02Z", or "(devel)" for a
// build with no VCS stamp (go build -buildvcs=false).
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	settings := bi.Settings
	if vcsRevision != "" {
		settings = []debug.BuildSetting{{Key: "vcs.revision", Value: vcsRevision}, {Key: "vcs.time", Value: vcsTime}, {Key: "vcs.modified", Value: vcsModified}}
	}
	return format(bi.Main.Version, settings)
}

// format is Version for a main module's version and its build settings.
// A version Go made from the revision (a pseudo-version,
// "v0.0.0-20261205231002-1a2b3c4d5e6f+dirty") says it less readably than
// the revision itself, so it gives way to it; a release version stays.
func format(version string, settings []debug.BuildSetting) string {
	var rev, when string
	var dirty bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	short := rev[:min(12, len(rev))]
	if rev == "" || (version != "" && version != "(devel)" && !strings.Contains(version, short)) {
		if version == "" {
			return "(devel)"
		}
		return version
	}
	v := "rev " + short
	if dirty {
		v += "+modified"
	}
	if when != "" {
		v += " " + when
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

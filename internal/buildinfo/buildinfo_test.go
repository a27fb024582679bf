package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestModule(t *testing.T) {
	if got := Module("example.com/not-linked"); got != "example.com/not-linked" {
		t.Errorf("Module(not linked) = %q", got)
	}
	if bi, ok := debug.ReadBuildInfo(); ok && len(bi.Deps) > 0 {
		d := bi.Deps[0]
		if got := Module(d.Path); !strings.HasPrefix(got, d.Path+" v") {
			t.Errorf("Module(%s) = %q, want its version", d.Path, got)
		}
	}
	if Version() == "" || !strings.HasPrefix(Go(), "go") {
		t.Errorf("Version %q, Go %q", Version(), Go())
	}
}

func TestFormat(t *testing.T) {
	stamp := func(rev, when, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: when}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
	for _, tc := range []struct {
		name, version string
		settings      []debug.BuildSetting
		want          string
	}{
		{"no stamp", "(devel)", nil, "(devel)"},
		{"no version, no stamp", "", nil, "(devel)"},
		{"clone, clean", "(devel)", stamp(rev, "2026-12-05T23:10:02Z", "false"), "rev 1a2b3c4d5e6f 2026-12-05T23:10:02Z"},
		{"clone, modified", "(devel)", stamp(rev, "2026-12-05T23:10:02Z", "true"), "rev 1a2b3c4d5e6f+modified 2026-12-05T23:10:02Z"},
		{"pseudo-version", "v0.0.0-20261205231002-1a2b3c4d5e6f", stamp(rev, "2026-12-05T23:10:02Z", "false"), "rev 1a2b3c4d5e6f 2026-12-05T23:10:02Z"},
		{"pseudo-version, dirty", "v0.0.0-20261205231002-1a2b3c4d5e6f+dirty", stamp(rev, "2026-12-05T23:10:02Z", "true"), "rev 1a2b3c4d5e6f+modified 2026-12-05T23:10:02Z"},
		{"no time", "(devel)", stamp(rev, "", "false"), "rev 1a2b3c4d5e6f"},
		{"release", "v1.2.0", stamp(rev, "2026-12-05T23:10:02Z", "false"), "v1.2.0"},
		{"release, go install", "v1.2.0", nil, "v1.2.0"},
	} {
		if got := format(tc.version, tc.settings); got != tc.want {
			t.Errorf("%s: format(%q) = %q, want %q", tc.name, tc.version, got, tc.want)
		}
	}
}

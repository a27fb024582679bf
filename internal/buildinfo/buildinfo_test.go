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

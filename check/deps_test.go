package check_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRecordingImportsNoChecker holds "record first, judge later" in the
// imports: the packages that run a scenario and record it (runner), build
// its plan (scenario) and audit its stores (store) link nothing of the
// checker's. What they share with it is in packages history and plan.
func TestRecordingImportsNoChecker(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../runner", "../scenario", "../store").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/dqbench/dqbench/check" || strings.HasPrefix(dep, "github.com/dqbench/dqbench/check/") {
			t.Errorf("./runner, ./scenario or ./store links %s: move what it needs of it to package plan or history", dep)
		}
	}
}

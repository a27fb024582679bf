package scenario

import (
	"path/filepath"
	"testing"

	"github.com/dqbench/dqbench/catalog"
)

func TestProcessVariants(t *testing.T) {
	s, err := Load(filepath.Join("testdata", "valid", "process.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mine, built := s.Variants[0].Process, s.Variants[1].Process
	if mine.Instances != 2 || mine.Ready.D().Seconds() != 5 || mine.Env["LOG_LEVEL"] != "warn" || len(mine.Command) != 2 {
		t.Errorf("mine = %+v", mine)
	}
	if built.Instances != 1 || built.Ready.D() != DefaultReady || built.Build != "./cmd/consumer" {
		t.Errorf("built = %+v (want the defaults)", built)
	}
	if p := s.Plan(); p.Variants[0].Strategy != "process consumer" || p.Variants[2].Strategy != "none" {
		t.Errorf("plan labels: %q, %q", p.Variants[0].Strategy, p.Variants[2].Strategy)
	}
	if p, ok := s.Faults[0].Params.(*catalog.ConsumerKillParams); !ok || p.At != catalog.KillOnCommit || s.Faults[0].Name != "consumer-kill@commit" {
		t.Errorf("fault 0 = %+v, %+v", s.Faults[0], s.Faults[0].Params)
	}
}

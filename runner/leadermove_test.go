package runner

import (
	"context"
	"testing"
	"time"

	"github.com/dqbench/dqbench/scenario"
)

// TestLeaderMoveNoDuplicates runs testdata/soak/leader-move-stage.yaml (leaders
// move while a transactional stage consumes, most partitions idle after each
// move) for a few seeds: no variant reads a partition again. Before dqbench
// answered OffsetForLeaderEpoch for the moved partitions, every seed gave
// the transactional stage hundreds of duplicates. testdata/soak/leader-move.sh
// runs it 30 times.
func TestLeaderMoveNoDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the scenario three times")
	}
	for _, seed := range []int64{1, 2, 3} {
		s, err := scenario.Load("../testdata/soak/leader-move-stage.yaml")
		if err != nil {
			t.Fatal(err)
		}
		s.Seed = seed
		s.Messages = 500
		s.Deadline = scenario.Duration(10 * time.Minute) // the race detector and a busy machine slow runs down
		res, err := runJudged(t, context.Background(), s)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !res.Run.Valid() {
			t.Errorf("seed %d: run not valid: %+v", seed, res.Run)
		}
		for _, v := range res.Run.Variants {
			dup, _ := v.Counts.Get("duplicates")
			lost, _ := v.Counts.Get("lost")
			if dup != 0 || lost != 0 {
				t.Errorf("seed %d, variant %s: %d duplicates, %d lost, want none: a leader move made it read a partition again", seed, v.Name, dup, lost)
			}
		}
	}
}

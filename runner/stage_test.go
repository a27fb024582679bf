package runner

import (
	"context"
	"testing"

	"github.com/dqbench/dqbench/check"
)

// TestStageSameSeedSameCounts: a consume-transform-produce stage's batches
// line up with intents, so its faults hit the same batches, and the counts
// repeat with the seed, in both stage modes.
func TestStageSameSeedSameCounts(t *testing.T) {
	yaml := `
version: 1
name: stage-seeded
seed: 3
messages: 300
drain: 5s
broker: {kind: kafka}
stage: {batch: 7}
faults:
  - {type: transform-crash, every: 41}
  - {type: transaction-abort, every: 37}
variants:
  - {name: plain, strategy: none, stage: {transactional: false}}
  - {name: uncommitted, strategy: none, stage: {transactional: true}}
`
	var counts [2][]check.Counts
	for i := range counts {
		res, err := runJudged(t, context.Background(), parse(t, yaml))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Run.Valid() {
			t.Fatalf("invalid run: %+v", res.Run)
		}
		for _, v := range res.Run.Variants {
			counts[i] = append(counts[i], v.Counts)
		}
	}
	if counts[0][0] != counts[1][0] || counts[0][1] != counts[1][1] {
		t.Errorf("same seed, different counts:\n%+v\n%+v", counts[0], counts[1])
	}
	plain, uncommitted := counts[0][0], counts[0][1]
	if plain.Duplicates == 0 || plain.Lost != 0 || uncommitted.AbortedSeen == 0 || uncommitted.Lost != 0 {
		t.Errorf("want duplicates without transactions and aborted records seen with them, none lost: %+v, %+v", plain, uncommitted)
	}
}

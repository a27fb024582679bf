package sweep

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxRuns bounds a sweep's seeds times repeats: a typo such as 1..2000000
// is refused before anything runs.
const maxRuns = 1_000_000

// ParseSeeds reads a --seeds list: ranges and single seeds separated by
// commas, "1..200", "7", "1..5,9,20..22". The seeds come back in order,
// each once.
func ParseSeeds(spec string) ([]int64, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("--seeds is empty; give a range such as 1..200, or seeds separated by commas")
	}
	var seeds []int64
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "..")
		from, err := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds %s: %q is not a seed or a range such as 1..200", spec, part)
		}
		to := from
		if isRange {
			if to, err = strconv.ParseInt(strings.TrimSpace(hi), 10, 64); err != nil {
				return nil, fmt.Errorf("--seeds %s: %q is not a range such as 1..200", spec, part)
			}
		}
		if to < from {
			return nil, fmt.Errorf("--seeds %s: %s ends below its start", spec, part)
		}
		if n := uint64(to) - uint64(from); n >= maxRuns || uint64(len(seeds))+n >= maxRuns {
			return nil, fmt.Errorf("--seeds %s: more than %d seeds", spec, maxRuns)
		}
		for s := from; ; s++ {
			seeds = append(seeds, s)
			if s == to {
				break
			}
		}
	}
	slices.Sort(seeds)
	return slices.Compact(seeds), nil
}

// Shard is the I-th of N disjoint slices of a sweep's seeds (1-based);
// the zero Shard is the whole sweep.
type Shard struct {
	I, N int
}

// ParseShard reads --shard I/N.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("--shard %s: want I/N with 1 <= I <= N, e.g. 2/3 (in a GitHub Actions matrix: ${{ matrix.shard }}/N)", s)
	}
	return Shard{I: i, N: n}, nil
}

// String is "I/N", "" for the whole sweep.
func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Of is the shard's slice of seeds: consecutive seeds, the shards' sizes
// differing by one at most. Every repeat of a seed is in the seed's shard,
// so that counts moving between repeats are seen there.
func (s Shard) Of(seeds []int64) []int64 {
	if s.N == 0 {
		return seeds
	}
	lo, hi := len(seeds)*(s.I-1)/s.N, len(seeds)*s.I/s.N
	return seeds[lo:hi]
}

package catalog

// Strategy describes one consumer idempotency strategy.
type Strategy struct {
	Name string
	// Doc is one line for docs, the schema and --help.
	Doc string
	// CrashPoints are the strategy's own crash points, besides the loop's.
	CrashPoints []CrashPoint
}

// The strategies, in the order docs list them. Each has an implementation
// in strategy/ under the same name.
var Strategies = []Strategy{
	{
		Name: "none",
		Doc:  "apply the effect on every delivery (no idempotency)",
	},
	{
		Name: "dedup-table",
		Doc:  "dedup row and business update in one transaction; a conflict means already done",
	},
	{
		Name:        "dedup-table-split",
		Doc:         "dedup row committed in its own transaction before the business update (fake idempotency)",
		CrashPoints: []CrashPoint{BetweenDedupAndEffect},
	},
}

// LookupStrategy returns the strategy named name.
func LookupStrategy(name string) (Strategy, bool) {
	for _, s := range Strategies {
		if s.Name == name {
			return s, true
		}
	}
	return Strategy{}, false
}

// StrategyNames lists the strategy names.
func StrategyNames() []string {
	out := make([]string, len(Strategies))
	for i, s := range Strategies {
		out[i] = s.Name
	}
	return out
}

// HasPoint reports whether a consumer using s has crash point p.
func (s Strategy) HasPoint(p CrashPoint) bool {
	for _, lp := range LoopPoints {
		if lp == p {
			return true
		}
	}
	for _, sp := range s.CrashPoints {
		if sp == p {
			return true
		}
	}
	return false
}

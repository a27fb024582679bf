package brokers

// LeaderMover is a destination on a cluster of several brokers that can
// move its partitions' leaders to another broker while the run goes on.
type LeaderMover interface {
	// MoveLeaders installs the fault: when a publish request carries an
	// intent for which fires says yes (attempt: how many requests have
	// carried it, 1 for the first), every partition of the destination's
	// topics gets the next broker as its leader; moved is called once the
	// moves are done, with that intent and one line per partition moved
	// ("dqbench-x[0]: broker 0 → 1").
	MoveLeaders(fires func(intent, attempt int) bool, moved func(intent int, moves []string))
}

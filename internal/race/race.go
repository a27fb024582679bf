//go:build !race

// Package race says whether the race detector is on, for tests that skip
// work too slow under it.
package race

// Enabled reports whether the binary was built with -race.
const Enabled = false

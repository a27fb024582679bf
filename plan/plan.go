// Package plan is what a run is judged by, shared by the packages that
// run a scenario and the checker: the counts (Counts, each a row of
// Table: its name, column and doc) and, per variant, what the scenario
// expects of them (Plan).
//
// It judges nothing. Package check computes the counts and holds the
// expectations to them; package scenario builds the Plan, and neither it
// nor the runner imports check: recording code cannot reach judging code.
package plan

import (
	"time"

	"github.com/dqbench/dqbench/catalog"
)

// Plan is what the judge needs of a scenario: its variants and their
// expectations. The scenario package builds it.
type Plan struct {
	// Broker is the run's broker kind: the causes of duplicates name its
	// mechanisms.
	Broker   catalog.BrokerKind
	Variants []Variant
}

// Variant is one variant to judge.
type Variant struct {
	Name     string
	Strategy string
	Expect   []Expect
	Varies   []Varies
	// Window is how long the variant's strategy remembers a message id
	// (redis-setnx ttl, dedup-table retention), nil when it has no limit.
	Window *Window
	// PublishWindow is how long the broker remembers a message id to drop
	// a republish (NATS duplicate_window with msg_id business), or nil.
	PublishWindow *Window
}

// Window is how long a message id is remembered to drop what comes again
// with it: a consumer's dedup TTL or retention (a redelivery later than it
// finds the marker gone), or a broker's dedup window of publishes (NATS
// duplicate_window: a republish later than it is stored again).
type Window struct {
	Key string        `json:"key"` // the setting, e.g. "ttl"
	D   time.Duration `json:"ns"`
}

// Varies is a count that may differ between runs with one seed, and why.
type Varies struct {
	Count string `json:"count"`
	Why   string `json:"why"`
}

// Expect is one expectation on a count, e.g. duplicates > 0.
type Expect struct {
	Count string           // a name from Table
	Text  string           // the comparison as written, e.g. "> 0"
	Holds func(n int) bool // whether a count meets it
}

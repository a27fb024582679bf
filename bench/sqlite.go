// Package bench measures dqbench's pipeline against the loop it wraps: a
// hand-written kgo produce→consume loop on the same embedded broker doing
// the same per-message SQLite transaction and per-record commit, plus the
// two costs that bound both (the bare transaction and the bare commit).
// Run it with "make bench"; "make bench-scale" (./bench/scale) measures how
// the dqbench binary scales with the number of intents.
package bench

import "net/url"

// Pragmas are the SQLite settings of a business store: the same pragmas as
// store.Open (WAL, synchronous NORMAL, a busy timeout). This is the one list
// the bench uses; store.Open keeps its own copy until its refactor can take
// this one over (or export its own for the bench to use).
var Pragmas = []string{"journal_mode(WAL)", "synchronous(NORMAL)", "busy_timeout(10000)"}

// DSN is the modernc.org/sqlite data source name of the store at path, with
// Pragmas and immediate write transactions for BeginTx.
func DSN(path string) string {
	q := url.Values{}
	for _, p := range Pragmas {
		q.Add("_pragma", p)
	}
	q.Add("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

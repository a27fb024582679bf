// Package bench measures dqbench's pipeline against the loop it wraps: a
// hand-written kgo produce→consume loop on the same embedded broker doing
// the same per-message SQLite transaction and per-record commit, plus the
// two costs that bound both (the bare transaction and the bare commit);
// and the same on a one-node Apache Kafka (realkafka_test.go), where the
// rows are skipped without Kafka's jars.
// Run it with "make bench"; "make bench-scale" (./bench/scale) measures how
// the dqbench binary scales with the number of intents.
package bench

import (
	"net/url"

	"github.com/dqbench/dqbench/store"
)

// DSN is the modernc.org/sqlite data source name of a store at path with
// the business store's own pragmas (store.SQLitePragmas, the one list), so
// the raw loop pays the same SQLite costs as the pipeline.
func DSN(path string) string {
	q := url.Values{}
	for _, p := range store.SQLitePragmas {
		q.Add("_pragma", p)
	}
	return "file:" + path + "?" + q.Encode()
}

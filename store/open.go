package store

import (
	"context"
	"fmt"

	"github.com/dqbench/dqbench/catalog"
)

// Where says where one variant's store lives.
type Where struct {
	// Ref is the scenario's store: "sqlite" or a postgres:// URL.
	Ref string
	// Dir is a directory for an SQLite file.
	Dir string
	// Name is unique per variant and run; it names the SQLite file or the
	// PostgreSQL schema.
	Name string
	// Conns is how many transactions may run at once (consumer instances).
	Conns int
	// Effect is what Tx.Apply does (default increment); Intents is how
	// many intents the run publishes (1..Intents), whose rows a set or
	// delete effect finds in place.
	Effect  catalog.EffectKind
	Intents int
}

// Open opens (creating it) the store w names.
func Open(ctx context.Context, w Where) (Store, error) {
	kind, err := catalog.ParseStore(w.Ref)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", catalog.MaskURL(w.Ref), err)
	}
	var st Store
	switch kind {
	case catalog.Postgres:
		st, err = OpenPostgres(ctx, w.Ref, SchemaFor(w.Name), w.Conns)
	default:
		st, err = OpenSQLite(ctx, fmt.Sprintf("%s/%s.db", w.Dir, w.Name))
	}
	if err != nil {
		return nil, err
	}
	return WithEffect(ctx, st, w.Effect, w.Intents)
}

// Local reports whether s keeps its data in this process (SQLite): it has
// no server that could stop answering.
func Local(s Store) bool {
	if e, ok := s.(*effectStore); ok {
		s = e.Store
	}
	_, ok := s.(*SQLite)
	return ok
}

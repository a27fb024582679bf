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
}

// Open opens (creating it) the store w names.
func Open(ctx context.Context, w Where) (Store, error) {
	kind, err := catalog.ParseStore(w.Ref)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", w.Ref, err)
	}
	switch kind {
	case catalog.Postgres:
		return OpenPostgres(ctx, w.Ref, SchemaFor(w.Name), w.Conns)
	default:
		return OpenSQLite(ctx, fmt.Sprintf("%s/%s.db", w.Dir, w.Name))
	}
}

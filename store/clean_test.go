package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/store"
)

// TestDropSchemaOnlyDqbenchs: the sweep drops only a schema named as
// dqbench names its own (dqbench_*); another name in a ledger is refused
// before anything is dialed (nothing listens at port 1).
func TestDropSchemaOnlyDqbenchs(t *testing.T) {
	for _, schema := range []string{"public", "billing"} {
		err := store.DropSchema(context.Background(), "postgres://u@127.0.0.1:1/test", schema)
		if err == nil || !strings.Contains(err.Error(), "not one dqbench makes") {
			t.Errorf("DropSchema(%s) = %v", schema, err)
		}
	}
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

// Outside is the store of a consumer outside dqbench (a process variant):
// dqbench makes it fresh for the variant and the run, hands its address to
// the consumer processes (which create their own tables), and reads it
// after the run with the scenario's audit query.
type Outside struct {
	// Kind is sqlite or postgres.
	Kind catalog.StoreKind
	// DSN is what the consumer opens: the SQLite file's path, or a
	// PostgreSQL URL whose search_path is the variant's own schema.
	DSN string
	// Schema is the PostgreSQL schema ("" on SQLite).
	Schema string

	path string    // SQLite
	pg   *Postgres // PostgreSQL: the schema, dropped by Close
}

// OpenOutside makes the store w names for a consumer process.
func OpenOutside(ctx context.Context, w Where) (*Outside, error) {
	kind, err := catalog.ParseStore(w.Ref)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", w.Ref, err)
	}
	if kind != catalog.Postgres {
		path, err := filepath.Abs(filepath.Join(w.Dir, w.Name+".db"))
		if err != nil {
			return nil, err
		}
		return &Outside{Kind: catalog.SQLite, DSN: path, path: path}, nil
	}
	pg, err := OpenPostgres(ctx, w.Ref, SchemaFor(w.Name), 1)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(w.Ref)
	if err != nil {
		return nil, errors.Join(err, pg.Close())
	}
	// options (not a search_path parameter) is what both libpq and pgx
	// pass on to the server, so any client library reads this URL.
	q := u.Query()
	q.Set("options", "-csearch_path="+pg.Schema())
	u.RawQuery = q.Encode()
	return &Outside{Kind: catalog.Postgres, DSN: u.String(), Schema: pg.Schema(), pg: pg}, nil
}

// Audit runs query, which must return one row per message id: the id
// (the message key, a decimal intent id) and how many times its effect
// applied. Its errors name the query.
func (o *Outside) Audit(ctx context.Context, query string) (history.Audit, error) {
	db, done, err := o.reader()
	if err != nil {
		return history.Audit{}, err
	}
	defer done()
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return history.Audit{}, fmt.Errorf("audit query %q on the variant's %s store: %v", query, o.Kind, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return history.Audit{}, fmt.Errorf("audit query %q: %v", query, err)
	}
	if len(cols) != 2 {
		return history.Audit{}, fmt.Errorf("audit query %q returns %d columns (%s); it must return 2: the message id and how many times its effect applied", query, len(cols), strings.Join(cols, ", "))
	}
	a := history.Audit{Applied: map[int]int{}}
	for rows.Next() {
		var id, n any
		if err := rows.Scan(&id, &n); err != nil {
			return history.Audit{}, fmt.Errorf("audit query %q: %v", query, err)
		}
		intent, err := brokers.ParseKey(text(id))
		if err != nil {
			return history.Audit{}, fmt.Errorf("audit query %q returned %v in its first column: %v (it must be the message id: the record key)", query, text(id), err)
		}
		count, err := strconv.Atoi(text(n))
		if err != nil || count < 0 {
			return history.Audit{}, fmt.Errorf("audit query %q returned %q for message %d in its second column; it must be a count (how many times its effect applied)", query, text(n), intent)
		}
		a.Applied[intent] += count
	}
	if err := rows.Err(); err != nil {
		return history.Audit{}, fmt.Errorf("audit query %q: %v", query, err)
	}
	return a, nil
}

// reader opens the store for the audit.
func (o *Outside) reader() (*sql.DB, func(), error) {
	if o.pg != nil {
		return o.pg.db, func() {}, nil
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: o.path}).EscapedPath()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, nil, fmt.Errorf("open store %s: %w", o.path, err)
	}
	return db, func() { db.Close() }, nil
}

// text is a column value as text.
func text(v any) string {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case nil:
		return "NULL"
	default:
		return fmt.Sprint(x)
	}
}

// Close removes a PostgreSQL schema (the SQLite file goes with the run's
// temporary directory).
func (o *Outside) Close() error {
	if o.pg != nil {
		return o.pg.Close()
	}
	return nil
}

package store

import (
	"context"
	"strconv"
	"strings"
)

// dialect is what differs between the SQL databases a store runs on. The
// strategies' SQL is portable (TEXT, BIGINT, PRIMARY KEY, INSERT ... ON
// CONFLICT DO NOTHING, UPDATE ... WHERE); only placeholders and the
// ledger's auto-numbered key differ.
type dialect struct {
	name string
	// rebind turns ? placeholders into the driver's.
	rebind func(query string) string
	// serial is the column type of an auto-numbered primary key.
	serial string
}

var (
	sqliteDialect   = dialect{name: "sqlite", rebind: func(q string) string { return q }, serial: "INTEGER PRIMARY KEY AUTOINCREMENT"}
	postgresDialect = dialect{name: "postgres", rebind: dollarPlaceholders, serial: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"}
)

// dollarPlaceholders rewrites ? as $1, $2, ... The strategies' SQL has no
// ? inside string literals.
func dollarPlaceholders(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// businessTables are the accounts and the ledger, on every store.
func (d dialect) businessTables() []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ledger (seq ` + d.serial + `, intent BIGINT NOT NULL, account INTEGER NOT NULL, amount BIGINT NOT NULL)`,
	}
}

// createBusiness creates the business tables and the accounts in s.
func createBusiness(ctx context.Context, s Store, d dialect) error {
	if err := s.Setup(ctx, d.businessTables()...); err != nil {
		return err
	}
	return s.Tx(ctx, func(tx Tx) error {
		for id := range Accounts {
			if _, err := tx.Exec(`INSERT INTO accounts (id, balance) VALUES (?, 0) ON CONFLICT DO NOTHING`, id); err != nil {
				return err
			}
		}
		return nil
	})
}

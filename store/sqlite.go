// Package store is the business database the consumer strategies write to,
// and the final audit that counts, per intent, how often its effect applied.
//
// The business effect is "balance = balance + amount" on an account row plus
// one ledger row per application, so the audit can count applications per
// intent and cross-check the balances.
package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Accounts is how many account rows intents spread their amounts over.
const Accounts = 16

// Effect is one business effect: add Amount to Account, on behalf of Intent.
type Effect struct {
	Intent  int
	Account int
	Amount  int64
}

// Open creates (or opens) the SQLite database at path in WAL mode with
// synchronous=NORMAL (safe against a process crash), immediate write
// transactions and a busy timeout, and creates the business tables.
func Open(ctx context.Context, path string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// One writer at a time is all SQLite allows; a single connection
	// avoids busy retries between a variant's consumer instances.
	db.SetMaxOpenConns(1)
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, intent INTEGER NOT NULL, account INTEGER NOT NULL, amount INTEGER NOT NULL)`,
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			db.Close()
			return nil, fmt.Errorf("create store tables in %s: %w", path, err)
		}
	}
	for id := 0; id < Accounts; id++ {
		if _, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO accounts (id, balance) VALUES (?, 0)`, id); err != nil {
			db.Close()
			return nil, fmt.Errorf("seed accounts in %s: %w", path, err)
		}
	}
	return db, nil
}

// Execer is what Apply needs: a *sql.Tx or a *sql.DB.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Apply performs the business effect: the balance update and its ledger row.
// It is not idempotent: every call adds the amount again.
func Apply(ctx context.Context, x Execer, e Effect) error {
	if _, err := x.ExecContext(ctx, `UPDATE accounts SET balance = balance + ? WHERE id = ?`, e.Amount, e.Account); err != nil {
		return fmt.Errorf("apply effect of intent %d: %w", e.Intent, err)
	}
	if _, err := x.ExecContext(ctx, `INSERT INTO ledger (intent, account, amount) VALUES (?, ?, ?)`, e.Intent, e.Account, e.Amount); err != nil {
		return fmt.Errorf("record effect of intent %d: %w", e.Intent, err)
	}
	return nil
}

// Audit is the final state of a store: how many times each intent's effect
// applied, and whether the balances agree with the ledger.
type Audit struct {
	// Applied maps intent to the number of ledger rows it has.
	Applied map[int]int `json:"applied"`
	// BalanceMismatch lists accounts whose balance is not the sum of their
	// ledger rows; empty when the store is consistent.
	BalanceMismatch []int `json:"balance_mismatch,omitempty"`
}

// ReadAudit reads the final audit of db.
func ReadAudit(ctx context.Context, db *sql.DB) (Audit, error) {
	a := Audit{Applied: map[int]int{}}
	rows, err := db.QueryContext(ctx, `SELECT intent, COUNT(*) FROM ledger GROUP BY intent`)
	if err != nil {
		return a, fmt.Errorf("audit ledger: %w", err)
	}
	for rows.Next() {
		var intent, n int
		if err := rows.Scan(&intent, &n); err != nil {
			rows.Close()
			return a, fmt.Errorf("audit ledger: %w", err)
		}
		a.Applied[intent] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return a, fmt.Errorf("audit ledger: %w", err)
	}
	rows, err = db.QueryContext(ctx, `SELECT a.id FROM accounts a
		LEFT JOIN (SELECT account, SUM(amount) AS total FROM ledger GROUP BY account) l ON l.account = a.id
		WHERE a.balance != COALESCE(l.total, 0) ORDER BY a.id`)
	if err != nil {
		return a, fmt.Errorf("audit balances: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return a, fmt.Errorf("audit balances: %w", err)
		}
		a.BalanceMismatch = append(a.BalanceMismatch, id)
	}
	return a, rows.Err()
}

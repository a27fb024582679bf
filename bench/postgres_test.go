package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dqbench/dqbench/store"
)

// pgStore is the hand-written store on PostgreSQL: one pgx connection (no
// database/sql pool), its own schema with the pipeline's tables, the same
// per-message transaction as txStore, and synchronous_commit off as the
// pipeline's store sets it. Close drops the schema.
type pgStore struct {
	conn   *pgx.Conn
	schema string
}

var pgSchemas atomic.Int64

func openPgStore(ctx context.Context, url string) (s *pgStore, err error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	schema := store.SchemaFor(fmt.Sprintf("bench_raw_%d_%d", pgSchemas.Add(1), seq()))
	cfg.RuntimeParams["search_path"] = schema
	cfg.RuntimeParams["synchronous_commit"] = "off"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s = &pgStore{conn: conn, schema: schema}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()
	for _, q := range []string{
		`CREATE SCHEMA ` + schema,
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL)`,
		`CREATE TABLE ledger (seq BIGSERIAL PRIMARY KEY, intent INTEGER NOT NULL, account INTEGER NOT NULL, amount BIGINT NOT NULL)`,
		`CREATE TABLE processed (message_id TEXT PRIMARY KEY, at BIGINT NOT NULL)`, // as strategy's dedup table
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	for id := range accounts {
		if _, err := conn.Exec(ctx, `INSERT INTO accounts (id, balance) VALUES ($1, 0)`, id); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// apply is txStore.apply on PostgreSQL; pgx prepares and caches each
// statement on first use.
func (s *pgStore) apply(ctx context.Context, id string, m intent) (applied bool, err error) {
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tx.Rollback(ctx))
		}
	}()
	tag, err := tx.Exec(ctx, `INSERT INTO processed (message_id, at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, id, time.Now().UnixNano())
	if err != nil {
		return false, err
	}
	if applied = tag.RowsAffected() == 1; applied {
		if _, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance + $1 WHERE id = $2`, m.Amount, m.Account); err != nil {
			return false, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO ledger (intent, account, amount) VALUES ($1, $2, $3)`, m.Intent, m.Account, m.Amount); err != nil {
			return false, err
		}
	}
	return applied, tx.Commit(ctx)
}

func (s *pgStore) Close() error {
	ctx := context.Background()
	_, err := s.conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+s.schema+` CASCADE`)
	return errors.Join(err, s.conn.Close(ctx))
}

// Command rabbitmq-correct is an idempotent RabbitMQ consumer: for each
// message it inserts the message id into a dedup table and applies the
// effect in one transaction, then acks; a message id already there means
// the effect is done, and the message is only acked. A crash anywhere, or
// a lost ack, leaves either both rows or neither, so a redelivery never
// pays twice and nothing is lost. examples/consumers/rabbitmq.yaml runs it
// under dqbench. One file, no dqbench imports: copy it.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	amqp "github.com/rabbitmq/amqp091-go"
	_ "modernc.org/sqlite" // the "sqlite" driver
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rabbitmq-correct:", err)
		os.Exit(1) // dqbench (or your supervisor) starts a fresh one
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := amqp.Dial(os.Getenv("DQBENCH_URL"))
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	// One unacked message at a time: the broker sends the next delivery
	// only once it has this one's ack. (With more in flight, a kill also
	// repeats whatever the consumer had applied and not yet acked, which
	// depends on timing: the duplicates then vary run to run.)
	if err := ch.Qos(1, 0, false); err != nil {
		return err
	}
	msgs, err := ch.Consume(os.Getenv("DQBENCH_TOPIC"), "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	for {
		var m amqp.Delivery
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case m, ok = <-msgs:
		}
		if !ok {
			return errors.New("the channel closed")
		}
		var b struct {
			Account int   `json:"account"`
			Amount  int64 `json:"amount"`
		}
		if err := json.Unmarshal(m.Body, &b); err != nil {
			return fmt.Errorf("message %s: %w", m.MessageId, err)
		}
		if err := apply(ctx, db, m.MessageId, b.Account, b.Amount); err != nil {
			return err
		}
		if err := m.Ack(false); err != nil {
			return err
		}
	}
}

// apply records the message id and makes the payment in one transaction,
// unless the id is already recorded.
func apply(ctx context.Context, db *sql.DB, id string, account int, amount int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO processed (message_id) VALUES ($1) ON CONFLICT DO NOTHING`, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // already done: skip the effect
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO payments (message_id, account, amount) VALUES ($1, $2, $3)`, id, account, amount); err != nil {
		return err
	}
	return tx.Commit()
}

// openStore opens the store dqbench made for this run (DQBENCH_STORE:
// sqlite or postgres; DQBENCH_STORE_DSN: the file, or a URL) and creates
// the tables.
func openStore(ctx context.Context) (*sql.DB, error) {
	driver, dsn := "sqlite", os.Getenv("DQBENCH_STORE_DSN")
	if os.Getenv("DQBENCH_STORE") == "postgres" {
		driver = "pgx"
	} else {
		dsn = "file:" + dsn + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)`,
		`CREATE TABLE IF NOT EXISTS payments (message_id TEXT NOT NULL, account INTEGER NOT NULL, amount BIGINT NOT NULL)`,
	} {
		// Instances start together: on PostgreSQL two CREATE TABLE IF NOT
		// EXISTS at once can collide, so try again.
		for try := 1; ; try++ {
			if _, err = db.ExecContext(ctx, q); err == nil {
				break
			}
			if try == 5 {
				db.Close()
				return nil, fmt.Errorf("%s: %w", q, err)
			}
			time.Sleep(time.Duration(try) * 50 * time.Millisecond)
		}
	}
	return db, nil
}

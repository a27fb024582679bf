// Command rabbitmq-naive is a RabbitMQ consumer that is not idempotent:
// for each message it applies the effect (a payment row), then acks. A
// crash between the two, or a lost ack, makes RabbitMQ deliver the message
// again, and the payment is made twice. examples/consumers/rabbitmq.yaml
// runs it under dqbench. One file, no dqbench imports: copy it.
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
		fmt.Fprintln(os.Stderr, "rabbitmq-naive:", err)
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
		// The effect...
		if _, err := db.ExecContext(ctx, `INSERT INTO payments (message_id, account, amount) VALUES ($1, $2, $3)`,
			m.MessageId, b.Account, b.Amount); err != nil {
			return err
		}
		// ...then the ack: a crash in between, or a lost ack, repeats the effect.
		if err := m.Ack(false); err != nil {
			return err
		}
	}
}

// openStore opens the store dqbench made for this run (DQBENCH_STORE:
// sqlite or postgres; DQBENCH_STORE_DSN: the file, or a URL) and creates
// the table.
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
	// Instances start together: two first statements at once can collide
	// (SQLite: switching to WAL; PostgreSQL: CREATE TABLE IF NOT EXISTS),
	// so try again.
	for try := 1; ; try++ {
		_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS payments (message_id TEXT NOT NULL, account INTEGER NOT NULL, amount BIGINT NOT NULL)`)
		if err == nil {
			return db, nil
		}
		if try == 5 {
			db.Close()
			return nil, err
		}
		time.Sleep(time.Duration(try) * 50 * time.Millisecond)
	}
}

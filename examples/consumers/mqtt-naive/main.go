// Command mqtt-naive is an MQTT consumer that is not idempotent: for each
// message it applies the effect (a payment row), then acknowledges it
// (PUBACK at QoS 1, PUBREC at QoS 2). A crash between the two, or a lost
// acknowledgement, makes the broker send the message again, and the
// payment is made twice. examples/consumers/mqtt.yaml runs it under
// dqbench. One file, no dqbench imports: copy it.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	pahomqtt "github.com/eclipse/paho.mqtt.golang"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	_ "modernc.org/sqlite"             // the "sqlite" driver
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mqtt-naive:", err)
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
	failed := make(chan error, 1)
	fail := func(err error) {
		select {
		case failed <- err:
		default:
		}
	}
	handle := func(_ pahomqtt.Client, m pahomqtt.Message) {
		// The message id is the topic's last level: the same on every
		// redelivery.
		id := m.Topic()[strings.LastIndexByte(m.Topic(), '/')+1:]
		var b struct {
			Account int   `json:"account"`
			Amount  int64 `json:"amount"`
		}
		if err := json.Unmarshal(m.Payload(), &b); err != nil {
			fail(fmt.Errorf("message %s: %w", id, err))
			return
		}
		// The effect...
		if _, err := db.ExecContext(ctx, `INSERT INTO payments (message_id, account, amount) VALUES ($1, $2, $3)`, id, b.Account, b.Amount); err != nil {
			fail(err)
			return
		}
		// ...then the acknowledgement: a crash in between, or a lost one,
		// repeats the effect.
		m.Ack()
	}
	qos, _ := strconv.Atoi(os.Getenv("DQBENCH_QOS"))
	opts := pahomqtt.NewClientOptions().
		AddBroker(os.Getenv("DQBENCH_URL")).
		SetClientID(os.Getenv("DQBENCH_GROUP")). // the persistent session dqbench made
		SetCleanSession(false).
		SetAutoAckDisabled(true).
		SetOrderMatters(true).
		SetAutoReconnect(false).
		SetDefaultPublishHandler(handle). // what the session kept arrives before Subscribe returns
		SetConnectionLostHandler(func(_ pahomqtt.Client, err error) { fail(fmt.Errorf("connection lost: %w", err)) })
	cl := pahomqtt.NewClient(opts)
	if t := cl.Connect(); t.Wait() && t.Error() != nil {
		return t.Error()
	}
	defer cl.Disconnect(250)
	if t := cl.Subscribe(os.Getenv("DQBENCH_TOPIC"), byte(qos), handle); t.Wait() && t.Error() != nil {
		return t.Error()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-failed:
		return err
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

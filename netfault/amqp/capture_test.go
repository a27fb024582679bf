package amqp

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

var capture = flag.Bool("capture", false, "record testdata/*.bin from the RabbitMQ at 127.0.0.1:5672")

// tap records what a client writes and reads on its connection.
type tap struct {
	net.Conn
	mu          sync.Mutex
	wrote, read bytes.Buffer
}

func (t *tap) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.wrote.Write(p)
	t.mu.Unlock()
	return t.Conn.Write(p)
}

func (t *tap) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	t.mu.Lock()
	t.read.Write(p[:n])
	t.mu.Unlock()
	return n, err
}

func dialTapped(t *testing.T) (*amqp091.Connection, *tap) {
	var tp *tap
	conn, err := amqp091.DialConfig("amqp://guest:guest@127.0.0.1:5672/", amqp091.Config{
		Dial: func(network, addr string) (net.Conn, error) {
			c, err := net.Dial(network, addr)
			if err != nil {
				return nil, err
			}
			tp = &tap{Conn: c}
			return tp, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return conn, tp
}

// TestCapture records the frames the filter tests replay: a producer's
// connection (the broker's confirms for 20 publishes, which it sends with
// and without the multiple bit) and a consumer's (20 deliveries, each
// acked). Run with -capture against a local RabbitMQ.
func TestCapture(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to record testdata from a local RabbitMQ")
	}
	const n = 20
	queue := fmt.Sprintf("dqbench-capture-%d", time.Now().UnixNano())

	pconn, ptap := dialTapped(t)
	ch, err := pconn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	var dcs []*amqp091.DeferredConfirmation
	for i := 1; i <= n; i++ {
		dc, err := ch.PublishWithDeferredConfirm("", queue, false, false, amqp091.Publishing{MessageId: fmt.Sprintf("intent-%d", i), Body: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		dcs = append(dcs, dc)
	}
	for _, dc := range dcs {
		<-dc.Done()
	}

	cconn, ctap := dialTapped(t)
	cch, err := cconn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := cch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		d := <-ds
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
	}
	if err := cch.Qos(1, 0, false); err != nil { // a round trip: every ack was written before
		t.Fatal(err)
	}
	cconn.Close()
	pconn.Close()
	write := func(name string, b *bytes.Buffer) {
		if err := os.WriteFile(filepath.Join("testdata", name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("producer-from-broker.bin", &ptap.read)
	write("consumer-to-broker.bin", &ctap.wrote)
}

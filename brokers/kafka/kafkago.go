package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// kafkaGoProducer publishes with segmentio/kafka-go's Writer (client:
// kafka-go), for comparing client libraries. kafka-go has no idempotent
// producer and no transactions: every produce request carries producer id
// -1, so when a response is lost the writer's retry is stored again.
// Scenario validation keeps it to idempotent: false and away from
// transactional stages.
type kafkaGoProducer struct {
	w         *kafkago.Writer
	transport *kafkago.Transport
	noAck     bool
	confirmed func(intent int) // the destination's broker-restart
	closing   context.Context  // ends the writes still waiting at Close
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

var _ brokers.Producer = (*kafkaGoProducer)(nil)

func (c *topicDest) kafkaGoProducer() (brokers.Producer, error) {
	if c.spec.Idempotent {
		return nil, fmt.Errorf("kafka-go producer: %s", catalog.KafkaGoLacks)
	}
	// An own transport, so its connections close with the producer (the
	// default transport is shared by the process).
	transport := &kafkago.Transport{DialTimeout: 3 * time.Second, ClientID: c.topic + "-kafka-go"}
	acks := kafkago.RequireAll
	switch c.spec.Acks {
	case catalog.AcksLeader:
		acks = kafkago.RequireOne
	case catalog.AcksNone:
		acks = kafkago.RequireNone
	}
	w := &kafkago.Writer{
		Addr:      kafkago.TCP(c.producerSeeds()...),
		Topic:     c.topic,
		Balancer:  &kafkago.Hash{},
		Transport: transport,
		// kafka-go retries a failed request (REQUEST_TIMED_OUT among
		// them) up to MaxAttempts times; keep the backoff short so
		// fault-heavy runs stay fast.
		MaxAttempts:     10,
		WriteBackoffMin: 2 * time.Millisecond,
		WriteBackoffMax: 20 * time.Millisecond,
		BatchSize:       max(c.spec.Window, 1),
		BatchTimeout:    time.Millisecond,
		RequiredAcks:    acks,
	}
	if c.spec.Retries > 0 {
		// The application retries (producer.retries): a failed request
		// comes back to it as an unknown outcome, as with kgo.
		w.MaxAttempts = 1
	}
	closing, stop := context.WithCancel(context.Background())
	return &kafkaGoProducer{w: w, transport: transport, noAck: acks == kafkago.RequireNone, confirmed: c.confirmed, closing: closing, stop: stop}, nil
}

// Publish writes m in its own goroutine: kafka-go's WriteMessages blocks
// until the broker answers (the writer batches concurrent calls), and
// Publish must not.
func (p *kafkaGoProducer) Publish(ctx context.Context, m brokers.Message, done func(error)) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(p.closing, cancel)()
		err := p.w.WriteMessages(wctx, kafkago.Message{Key: []byte(m.Key), Value: m.Body})
		if err == nil { // confirmed, or with acks none sent
			p.confirmed(m.Intent)
		}
		if err == nil && p.noAck {
			err = brokers.ErrUnconfirmed
		}
		done(refusedKafkaGo(err))
	}()
}

// Close waits for the writes in flight until ctx ends, fails the rest and
// closes the writer and its connections.
func (p *kafkaGoProducer) Close(ctx context.Context) {
	waited := make(chan struct{})
	go func() { p.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		p.stop()
		<-waited
	}
	p.stop()
	_ = p.w.Close()
	p.transport.CloseIdleConnections()
}

// refusedKafkaGo marks err as brokers.ErrRefused when kafka-go reports one
// of the errors that say the broker did not write the record (refusals).
func refusedKafkaGo(err error) error {
	var ke kafkago.Error
	if err == nil || !errors.As(err, &ke) {
		return err
	}
	for _, r := range refusals {
		if int16(ke) == r.Code {
			return fmt.Errorf("%w: %w", brokers.ErrRefused, err)
		}
	}
	return err
}

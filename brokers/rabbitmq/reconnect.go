package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dqbench/dqbench/brokers"
)

// dialAny connects to the broker's first address that answers, r.url
// first: a client whose node died (a managed cluster's leader failover)
// goes on on a survivor.
func (r *RabbitMQ) dialAny(ctx context.Context, wrap func(net.Conn) net.Conn) (*amqp.Connection, error) {
	addrs := []string{r.url}
	for _, a := range r.addrs {
		if a != r.url {
			addrs = append(addrs, a)
		}
	}
	var errs []string
	for _, a := range addrs {
		conn, err := dial(ctx, a, wrap)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.New(strings.Join(errs, "; "))
}

// channel opens a channel on the admin connection, first reconnecting it
// to a survivor when its node died.
func (r *RabbitMQ) channel() (*amqp.Channel, error) {
	r.connMu.Lock()
	defer r.connMu.Unlock()
	if r.conn.IsClosed() {
		conn, err := r.dialAny(context.Background(), nil)
		if err != nil {
			return nil, err
		}
		r.conn = conn
	}
	return r.conn.Channel()
}

// reconnect connects the producer again after its connection died: a new
// connection and channel in confirm mode, and a new producer id for the
// copy header, since sequence numbers start again on a new channel. The
// caller holds p.mu.
func (p *producer) reconnect(ctx context.Context) error {
	d := p.d
	conn, err := d.r.dialAny(ctx, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", brokers.ErrUnreachable, err)
	}
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		conn.Close()
		return fmt.Errorf("rabbitmq producer on %s: %w", d.r.masked, err)
	}
	_ = p.conn.Close() // the dead one: releases amqp091's goroutines
	p.conn, p.ch = conn, ch
	p.id = fmt.Sprintf("p%d", d.r.seq.Add(1))
	return nil
}

package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/netfault"
)

// dialAny connects to the broker's first address that answers, r.url
// first: a client whose node died (a managed cluster's leader failover)
// goes on on a survivor.
func (r *RabbitMQ) dialAny(ctx context.Context, wrap func(net.Conn) net.Conn) (*amqp.Connection, error) {
	var errs []string
	for _, a := range r.order() {
		conn, err := dial(ctx, a, "", wrap, r.sec)
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

// order is the broker's addresses, r.url first.
func (r *RabbitMQ) order() []string {
	addrs := []string{r.url}
	for _, a := range r.addrs {
		if a != r.url {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// dialProxied waits while a broker-restart has the node down, then
// connects a client through a new proxy of its own (every
// producer and consumer connection goes through toxiproxy) to the broker's
// first address that answers, r.url first; setup installs the proxy's
// toxics before the client connects.
func (r *RabbitMQ) dialProxied(ctx context.Context, name string, setup func(*netfault.Proxy) error, wrap func(net.Conn) net.Conn) (*amqp.Connection, *netfault.Proxy, error) {
	if err := r.down.wait(ctx); err != nil {
		return nil, nil, err
	}
	var errs []string
	for _, a := range r.order() {
		px, err := r.proxy(name, a)
		if err != nil {
			return nil, nil, err
		}
		if setup != nil {
			if err := setup(px); err != nil {
				_ = px.Close(context.WithoutCancel(ctx))
				return nil, nil, err
			}
		}
		conn, err := dial(ctx, a, px.Addr, wrap, r.sec)
		if err == nil {
			return conn, px, nil
		}
		_ = px.Close(context.WithoutCancel(ctx))
		errs = append(errs, err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	return nil, nil, fmt.Errorf("%w: %s", brokers.ErrUnreachable, strings.Join(errs, "; "))
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
// connection (through a new proxy, with fresh toxics: sequence numbers
// start again on a new channel) and channel in confirm mode, and a new
// producer id for the copy header. The caller holds p.mu.
func (p *producer) reconnect(ctx context.Context) error {
	d := p.d
	id := fmt.Sprintf("p%d", d.r.seq.Add(1))
	conn, px, err := d.r.dialProxied(ctx, d.queue+"-"+id, p.setup, nil)
	if err != nil {
		return err
	}
	ch, err := conn.Channel()
	if err == nil && d.confirms {
		err = ch.Confirm(false)
	}
	if err != nil {
		conn.Close()
		_ = px.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("rabbitmq producer on %s: %w", d.r.masked, err)
	}
	_ = p.conn.Close() // the dead one: releases amqp091's goroutines
	p.closeProxy(context.WithoutCancel(ctx), p.px)
	p.conn, p.ch, p.px, p.id, p.unconfirmed = conn, ch, px, id, 0
	return nil
}

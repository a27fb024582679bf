package nats

import (
	"context"
	"fmt"
	neturl "net/url"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/netfault"
	natsfault "github.com/dqbench/dqbench/netfault/nats"
)

// lose is a network fault that loses chosen messages: when it hits
// (fires) and what to record when it did (lost).
type lose struct {
	fires func(intent, attempt int) bool
	lost  func(intent, attempt int)
}

var _ brokers.Powered = (*dest)(nil)

// Apply injects a stream's fault powers, through dqbench's in-process
// toxiproxy in front of the server (embedded or external): lost publish
// acks and lost consumer acks. It also says how long the consumer may
// hold a message (AckDeadline: ack_wait).
func (d *dest) Apply(_ context.Context, p brokers.Power) error {
	switch p := p.(type) {
	case brokers.LoseConfirms:
		if _, err := d.b.layer(); err != nil {
			return err
		}
		d.confirmLost = &lose{p.Fires, p.Lost}
		return nil
	case brokers.LoseAcks:
		if d.ackNone {
			return brokers.ErrNowhere
		}
		if _, err := d.b.layer(); err != nil {
			return err
		}
		d.ackLost = &lose{p.Fires, p.Lost}
		return nil
	case brokers.AckDeadline:
		if d.ackNone {
			return brokers.ErrNowhere
		}
		p.Got(d.settings.AckWait.D())
		return nil
	}
	return brokers.NoPower(p)
}

// layer starts the in-process toxiproxy on first use.
func (b *Broker) layer() (*netfault.Layer, error) {
	b.netMu.Lock()
	defer b.netMu.Unlock()
	if b.net == nil {
		l, err := netfault.Start()
		if err != nil {
			return nil, err
		}
		b.net = l
	}
	return b.net, nil
}

// proxy opens a proxy in front of the server for one client, and lets
// setup add its filters. It returns the URL to connect to: the server's,
// with the proxy's address.
func (d *dest) proxy(name string, setup func(*netfault.Proxy) error) (*netfault.Proxy, string, error) {
	l, err := d.b.layer()
	if err != nil {
		return nil, "", err
	}
	u, err := neturl.Parse(d.b.firstURL())
	if err != nil {
		return nil, "", fmt.Errorf("NATS URL %s: %w", catalog.MaskURL(d.b.url), err)
	}
	px, err := l.Proxy(name, u.Host)
	if err != nil {
		return nil, "", err
	}
	if err := setup(px); err != nil {
		_ = px.Close(context.Background())
		return nil, "", err
	}
	u.Host = px.Addr
	return px, u.String(), nil
}

// proxied opens a proxy in front of the server for one producer, with
// the filters that lose the chosen PubAcks (netfault/nats): one learns
// from each PUB which intent and send its reply subject carries, the
// other drops the MSG on that subject.
func (d *dest) proxied(name string, lose *lose) (*netfault.Proxy, string, error) {
	return d.proxy(name, func(px *netfault.Proxy) error {
		table := natsfault.NewTable()
		intent := func(subject string) (int, bool) {
			i, err := d.intentOf(subject)
			return i, err == nil
		}
		if err := px.AddFilter("publishes", netfault.Upstream, natsfault.LearnPublishes(table, intent)); err != nil {
			return err
		}
		return px.AddFilter("confirm-lost", netfault.Downstream, natsfault.LosePubAcks(table, lose.fires, lose.lost))
	})
}

// proxiedOpts keep a proxied client on the proxy: it reconnects to the
// proxy's address only, never to a server the INFO advertises.
var proxiedOpts = []nats.Option{nats.IgnoreDiscoveredServers()}

// firstURL is the server a proxied client connects to: the only one, or
// on a managed cluster the first of the list (the node every client tries
// first, which leads the variants' streams).
func (b *Broker) firstURL() string {
	first, _, _ := strings.Cut(b.url, ",")
	return strings.TrimSpace(first)
}

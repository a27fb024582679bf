package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	pahomqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// connectTimeout bounds one MQTT connect (the TCP dial and the CONNECT,
// CONNACK exchange) when the run's context allows longer.
const connectTimeout = 5 * time.Second

// handshake is one MQTT connect on its way, whichever the client library.
// It dials under the caller's context, notes whether the broker accepted
// the TCP connection and whether it sent anything back, and closes the
// connection when the context ends first, so that a client waiting for
// CONNACK stops waiting with the run.
type handshake struct {
	url string // the broker's URL as configured (masked in messages)

	mu       sync.Mutex
	conn     net.Conn // the connection while the handshake is on
	aborted  bool
	accepted bool
	answered atomic.Bool
}

func newHandshake(u string) *handshake { return &handshake{url: u} }

// dial opens the TCP connection to hostPort under ctx (bounded by
// connectTimeout).
func (h *handshake) dial(ctx context.Context, hostPort string) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var dl net.Dialer
	c, err := dl.DialContext(dctx, "tcp", hostPort)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.aborted {
		c.Close()
		return nil, ctx.Err()
	}
	h.conn, h.accepted = c, true
	return &answerConn{Conn: c, answered: &h.answered}, nil
}

// abort ends the handshake: the connection is closed, so that a client
// blocked reading CONNACK returns.
func (h *handshake) abort() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.aborted = true
	if h.conn != nil {
		h.conn.Close()
	}
}

// done ends the watch once the client connected: the connection is the
// client's from now on.
func (h *handshake) done() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.conn = nil
}

// silent says the broker accepted the TCP connection and sent nothing.
func (h *handshake) silent() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.accepted && !h.answered.Load()
}

// fail explains a connect that failed with err; ctx is the caller's. The
// error wraps brokers.ErrUnreachable, errNoAnswer when the broker accepted
// and said nothing, and ctx's error when the context is what ended the
// connect.
func (h *handshake) fail(ctx context.Context, err error) error {
	where := catalog.MaskURL(h.url)
	cerr := ctx.Err()
	switch {
	case h.silent() && cerr != nil:
		// The run's deadline or Ctrl-C came first.
		return &connectError{fmt.Sprintf("the MQTT broker at %s %v (no CONNACK before the run ended it: %v)", where, errNoAnswer, cerr), []error{errNoAnswer, cerr}}
	case h.silent():
		return &connectError{fmt.Sprintf("the MQTT broker at %s %v (no CONNACK within %s)", where, errNoAnswer, connectTimeout), []error{errNoAnswer}}
	case cerr != nil:
		return &connectError{fmt.Sprintf("connect to %s: %v", where, cerr), []error{cerr}}
	}
	return &connectError{fmt.Sprintf("connect to %s: %v", where, err), []error{err}}
}

// connectError is a failed MQTT connect: brokers.ErrUnreachable, and why.
type connectError struct {
	msg    string
	causes []error
}

func (e *connectError) Error() string { return e.msg }

func (e *connectError) Unwrap() []error { return append([]error{brokers.ErrUnreachable}, e.causes...) }

// errNoAnswer is a broker that accepted the TCP connection and sent
// nothing back.
var errNoAnswer = errors.New("accepted the TCP connection but never answered CONNECT")

// noteSilent remembers that the destination's broker did not answer a
// CONNECT, so that closing does not wait on it again to end sessions.
func (d *dest) noteSilent(err error) {
	if errors.Is(err, errNoAnswer) {
		d.silent.Store(true)
	}
}

// answerConn notes the first byte the broker sends.
type answerConn struct {
	net.Conn
	answered *atomic.Bool
}

func (c *answerConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answered.Store(true)
	}
	return n, err
}

// pahoConnect connects a paho.mqtt.golang client within ctx: the TCP dial
// and the wait for CONNACK both end when ctx does (or after
// connectTimeout), and a broker that accepts and never answers is named as
// such. It returns the client and whether the broker had the session.
func pahoConnect(ctx context.Context, u string, opts *pahomqtt.ClientOptions) (pahomqtt.Client, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	h := newHandshake(u)
	var first atomic.Bool
	first.Store(true)
	opts.SetConnectTimeout(connectTimeout).
		// No fallback to MQTT 3.1 after a failed 3.1.1 CONNECT: it doubles
		// the wait on a broker that does not answer, and every broker
		// dqbench runs against speaks 3.1.1.
		SetProtocolVersion(4).
		SetCustomOpenConnectionFn(func(b *url.URL, _ pahomqtt.ClientOptions) (net.Conn, error) {
			if first.Load() {
				return h.dial(cctx, b.Host)
			}
			// A reconnect after this connect returned, bounded by
			// connectTimeout (the producer stops reconnecting once
			// it is closed).
			return newHandshake(u).dial(context.Background(), b.Host)
		})
	cl := pahomqtt.NewClient(opts)
	t := cl.Connect()
	select {
	case <-t.Done():
	case <-cctx.Done():
		h.abort()
		<-t.Done() // the dial or the read of CONNACK fails at once
	}
	first.Store(false)
	h.done()
	err := t.Error()
	if err == nil && ctx.Err() != nil {
		// Connected just as ctx ended: the caller is gone.
		cl.Disconnect(0)
		err = ctx.Err()
	}
	if err != nil {
		return nil, false, h.fail(ctx, err)
	}
	return cl, t.(*pahomqtt.ConnectToken).SessionPresent(), nil
}

// probe checks that an MQTT broker answers CONNECT at u, with a clean
// session under a client id of its own, and disconnects.
func probe(ctx context.Context, u string) error {
	id := fmt.Sprintf("dqb-probe-%d", time.Now().UnixNano()%1e9)
	cl, _, err := pahoConnect(ctx, u, pahomqtt.NewClientOptions().AddBroker(u).SetClientID(id).
		SetCleanSession(true).SetAutoReconnect(false))
	if err != nil {
		return err
	}
	cl.Disconnect(50)
	return nil
}

package mqtt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pahov5 "github.com/eclipse/paho.golang/paho"
	pahomqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/tlsprobe"
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
	sec secure // TLS and login

	mu       sync.Mutex
	conn     net.Conn // the connection while the handshake is on
	aborted  bool
	accepted bool
	answered atomic.Bool
	tlsErr   error // the TLS handshake's failure
}

func newHandshake(u string, sec secure) *handshake { return &handshake{url: u, sec: sec} }

// dial opens the TCP connection to hostPort under ctx (bounded by
// connectTimeout), and speaks TLS on it when h.sec says so.
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
	h.mu.Unlock()
	tc, err := h.sec.handshake(dctx, &answerConn{Conn: c, answered: &h.answered})
	h.mu.Lock()
	if err != nil {
		h.tlsErr = err
		return nil, err
	}
	return tc, nil
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
	if e := h.tlsFail(ctx, err); e != nil && cerr == nil {
		return e
	}
	switch {
	case h.silent() && cerr != nil:
		// The run's deadline or Ctrl-C came first.
		return &connectError{fmt.Sprintf("the MQTT broker at %s %v (no CONNACK before the run ended it: %v)", where, errNoAnswer, cerr), []error{errNoAnswer, cerr}}
	case h.silent():
		return &connectError{fmt.Sprintf("the MQTT broker at %s %v (no CONNACK within %s)", where, errNoAnswer, connectTimeout), []error{errNoAnswer}}
	case cerr != nil:
		return &connectError{fmt.Sprintf("connect to %s: %v", where, cerr), []error{cerr}}
	}
	if refused(err) {
		return &connectError{fmt.Sprintf("the MQTT broker at %s %v the login (%v): a wrong user name or password, or a user it does not let in; fix broker auth (or the URL's user and password)", where, errRefusedLogin, err), []error{errRefusedLogin, errAnswered}}
	}
	msg := err.Error()
	if h.sec.pass != "" {
		msg = strings.ReplaceAll(msg, h.sec.pass, "***")
	}
	return &connectError{fmt.Sprintf("connect to %s: %s", where, msg), []error{err}}
}

// tlsFail explains a connect that failed in TLS, or returns nil: a
// certificate not trusted, a server that wants a client certificate, TLS
// on one side only.
func (h *handshake) tlsFail(ctx context.Context, err error) error {
	where := catalog.MaskURL(h.url)
	fail := func(why string) error {
		return &connectError{fmt.Sprintf("the MQTT broker at %s: %v: %s", where, errTLS, why), []error{errTLS, errAnswered}}
	}
	h.mu.Lock()
	tlsErr, accepted := h.tlsErr, h.accepted
	h.mu.Unlock()
	switch {
	case !accepted:
		return nil // nothing listens: no TLS to speak of
	case h.sec.tls == nil:
		if tlsprobe.SpeaksTLS(ctx, hostPort(h.url)) {
			return fail("the port speaks TLS only, and dqbench connected without (a tcp:// URL); use ssl:// (or mqtts://) with the broker's CA in broker tls.ca")
		}
		return nil
	case tlsErr != nil && (isTimeout(tlsErr) || h.silent()):
		return fail("the server did not answer the TLS handshake (is the port a plain listener? use tcp:// and leave out broker tls, or the broker's TLS port)")
	case tlsErr != nil:
		if why := brokers.TLSFailure(tlsErr); why != "" {
			return fail(why)
		}
		return nil
	}
	// The handshake went through. TLS 1.3: a client certificate the
	// server refuses fails the first read, with an alert or a reset.
	if why := brokers.TLSFailure(err); why != "" {
		return fail(why)
	}
	if len(h.sec.tls.Certificates) == 0 && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "connection reset")) {
		return fail("the server closed the TLS connection before it answered CONNECT: it wants a client certificate, most likely; give one in broker tls.cert and tls.key (or DQBENCH_TLS_CERT, DQBENCH_TLS_KEY)")
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// errTLS marks a broker whose TLS did not match dqbench's, errRefusedLogin
// one that refused the login; errAnswered either (it answered: no "start
// one").
var (
	errTLS          = errors.New("TLS failed")
	errRefusedLogin = errors.New("refused")
	errAnswered     = errors.New("the broker answered")
)

// refused says whether err is a CONNACK refusing the login: MQTT 3.1.1's
// return codes 4 and 5 (paho.mqtt.golang), MQTT 5's reason codes 0x86 and
// 0x87 (paho.golang).
func refused(err error) bool {
	return errors.Is(err, packets.ErrorRefusedBadUsernameOrPassword) || errors.Is(err, packets.ErrorRefusedNotAuthorised) ||
		errors.Is(err, errV5Login)
}

// errV5Login marks an MQTT 5 CONNACK whose reason code refuses the login
// (paho.golang returns it beside a plain error).
var errV5Login = errors.New("the CONNACK refused the login")

// v5Refusal is err, marked errV5Login when ca's reason code is 0x86 (bad
// user name or password) or 0x87 (not authorized).
func v5Refusal(ca *pahov5.Connack, err error) error {
	if ca != nil && (ca.ReasonCode == 0x86 || ca.ReasonCode == 0x87) {
		return fmt.Errorf("%w (reason code 0x%x): %v", errV5Login, ca.ReasonCode, err)
	}
	return err
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
func pahoConnect(ctx context.Context, u string, sec secure, opts *pahomqtt.ClientOptions) (pahomqtt.Client, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	h := newHandshake(u, sec)
	if sec.user != "" {
		opts.SetUsername(sec.user).SetPassword(sec.pass)
	}
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
			return newHandshake(u, sec).dial(context.Background(), b.Host)
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
func probe(ctx context.Context, u string, sec secure) error {
	id := fmt.Sprintf("dqb-probe-%d", time.Now().UnixNano()%1e9)
	cl, _, err := pahoConnect(ctx, u, sec, pahomqtt.NewClientOptions().AddBroker(u).SetClientID(id).
		SetCleanSession(true).SetAutoReconnect(false))
	if err != nil {
		return err
	}
	cl.Disconnect(50)
	return nil
}

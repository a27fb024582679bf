package rabbitmq

import (
	"crypto/tls"
	"errors"
	"net"
	neturl "net/url"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// secure is how every connection to the broker speaks TLS and logs in:
// the zero value is what the URL says (amqps:// with the system's roots,
// the URL's user and password).
type secure struct {
	tls  *tls.Config // for amqps:// URLs (nil: the system's roots)
	user string      // "" : the URL's
	pass string      // user's password; masked in every message
}

// newSecure reads the broker's tls and auth (external only): the CA and
// client certificate, and the user's password from its file or variable.
func newSecure(sec catalog.Security) (secure, error) {
	var s secure
	if sec.TLS != nil {
		cfg, err := brokers.TLSConfig(sec.TLS, "")
		if err != nil {
			return s, err
		}
		s.tls = cfg
	}
	if a := sec.Auth; a != nil && a.User != "" {
		pw, err := brokers.Password(a)
		if err != nil {
			return s, err
		}
		s.user, s.pass = a.User, pw
	}
	return s, nil
}

// sasl is the login amqp091 sends: the auth user's, or nil for the URL's.
func (s secure) sasl() []amqp.Authentication {
	if s.user == "" {
		return nil
	}
	return []amqp.Authentication{&amqp.PlainAuth{Username: s.user, Password: s.pass}}
}

// target is what amqp091 dials for url: an amqps:// URL becomes amqp://
// to the same port (5671 when none), and the TLS configuration to speak
// on the TCP connection dqbench dials itself (nil for plain). dqbench
// does the TLS handshake in its own dial, under any wrapper of the
// connection (the consumers' frame counter reads the decrypted frames),
// and through its proxy the certificate is still checked against the
// URL's host.
func (s secure) target(url string) (string, *tls.Config, error) {
	u, err := neturl.Parse(url)
	if err != nil || u.Scheme != "amqps" {
		return url, nil, err
	}
	cfg := s.tls
	if cfg == nil {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	u.Scheme = "amqp"
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "5671")
	}
	return u.String(), cfg, nil
}

// errTLS marks a RabbitMQ whose TLS did not match dqbench's: a
// certificate not trusted, TLS on one side only.
var errTLS = errors.New("TLS failed")

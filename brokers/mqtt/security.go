package mqtt

import (
	"context"
	"crypto/tls"
	"net"
	neturl "net/url"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// secure is how every client of an external broker speaks TLS and logs
// in, whichever the client library: the zero value is plain TCP and no
// login (the brokers dqbench runs itself).
type secure struct {
	tls  *tls.Config // nil: plain TCP
	user string      // "": no login
	pass string      // masked in every message
	// hasPass: the login carries a password (MQTT's password flag).
	hasPass bool
}

// tlsSchemes are the URL schemes of MQTT over TLS.
var tlsSchemes = map[string]bool{"ssl": true, "mqtts": true}

// newSecure is the TLS and login of the broker at url: TLS for an ssl://
// or mqtts:// URL, with sec's CA and client certificate, the certificate
// checked against the URL's host (or tls.server_name); the login of
// auth, else the URL's user and password.
func newSecure(url string, sec catalog.Security) (secure, error) {
	var s secure
	u, err := neturl.Parse(url)
	if err != nil {
		return s, nil // the URL's own error comes with the connect
	}
	if tlsSchemes[u.Scheme] {
		cfg, err := brokers.TLSConfig(sec.TLS, u.Hostname())
		if err != nil {
			return s, err
		}
		s.tls = cfg
	}
	switch a := sec.Auth; {
	case a != nil && a.User != "":
		pw, err := brokers.Password(a)
		if err != nil {
			return s, err
		}
		s.user, s.pass, s.hasPass = a.User, pw, pw != ""
	case u.User != nil:
		s.user = u.User.Username()
		s.pass, s.hasPass = u.User.Password()
	}
	return s, nil
}

// handshake wraps c in TLS when s asks for it, within ctx.
func (s secure) handshake(ctx context.Context, c net.Conn) (net.Conn, error) {
	if s.tls == nil {
		return c, nil
	}
	tc := tls.Client(c, s.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}

package brokers

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/dqbench/dqbench/catalog"
)

// ErrSecurity wraps a failure of the broker's TLS or login settings to
// give a client what it needs (a file that cannot be read, a secret that
// is empty), before any connection: the run cannot be completed (exit 3).
var ErrSecurity = errors.New("the broker's TLS or login settings")

// Secret reads one secret of auth (what names it in messages: "password",
// "token"): from file (its first line), else from the variable env. ""
// when neither is given. The secret itself appears in no error.
func Secret(what, file, env string) (string, error) {
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", fmt.Errorf("%w: auth.%s_file %s: %v", ErrSecurity, what, file, err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		line = strings.TrimRight(line, "\r")
		if line == "" {
			return "", fmt.Errorf("%w: auth.%s_file %s: the first line is empty; write the %s on it", ErrSecurity, what, file, what)
		}
		return line, nil
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			return "", fmt.Errorf("%w: auth.%s_env: the environment variable %s is not set; export it with the %s", ErrSecurity, what, env, what)
		}
		return v, nil
	}
	return "", nil
}

// Password is the password of a's user, from password_file or
// password_env ("" with no user, or none given: the command line fills
// in catalog.PasswordEnv, scenario.Scenario.UseSecretEnv).
func Password(a *catalog.Auth) (string, error) {
	if a == nil || a.User == "" {
		return "", nil
	}
	return Secret("password", a.PasswordFile, a.PasswordEnv)
}

// TLSConfig is the client TLS configuration t asks for, for a server at
// host (the name its certificate must carry unless t.ServerName says
// another): the CA file's certificates as the roots (the system's when
// none), the client certificate and key. Nil t gives a configuration
// with the system's roots.
func TLSConfig(t *catalog.TLS, host string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	if h, _, err := net.SplitHostPort(host); err == nil {
		cfg.ServerName = h
	}
	if t == nil {
		return cfg, nil
	}
	if t.ServerName != "" {
		cfg.ServerName = t.ServerName
	}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("%w: tls.ca: %v", ErrSecurity, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: tls.ca %s: no PEM certificate in it", ErrSecurity, t.CA)
		}
		cfg.RootCAs = pool
	}
	if t.Cert != "" || t.Key != "" {
		cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: tls.cert %s and tls.key %s: %v", ErrSecurity, t.Cert, t.Key, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// TLSFailure says in a person's words why a TLS handshake failed, naming
// the setting to fix, or "" when err is no TLS failure: a certificate
// signed by a CA not trusted (tls.ca), one for another name
// (tls.server_name), a server that does not speak TLS on that port.
func TLSFailure(err error) string {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var header tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is signed by a CA dqbench does not trust (" + unknown.Error() + "); give the CA that signed it in broker tls.ca (or DQBENCH_TLS_CA)"
	case errors.As(err, &hostname):
		return "the server's certificate is not for this name (" + hostname.Error() + "); connect by a name the certificate carries, or set broker tls.server_name"
	case errors.As(err, &invalid):
		return "the server's certificate is not valid (" + invalid.Error() + ")"
	case errors.As(err, &alert) && (alert == 116 || alert == 42 || alert == 48 || alert == 40),
		// certificate_required, bad_certificate, unknown_ca, handshake_failure;
		// as text where a client library kept only the message (amqp091)
		err != nil && strings.Contains(err.Error(), "remote error: tls: "):
		return "the server refused dqbench's TLS (" + remoteAlert(err) + "): it wants a client certificate signed by a CA it trusts; give one in broker tls.cert and tls.key (or DQBENCH_TLS_CERT, DQBENCH_TLS_KEY)"
	case errors.As(err, &header):
		return "the server did not answer the TLS handshake with TLS (is the port a plain listener? use the plain URL scheme and leave out tls, or the server's TLS port)"
	}
	return ""
}

// remoteAlert is the TLS alert the server sent, as Go words it.
func remoteAlert(err error) string {
	msg := err.Error()
	i := strings.Index(msg, "remote error: tls: ")
	if i < 0 {
		return msg
	}
	return strings.TrimRight(msg[i:], `"`)
}

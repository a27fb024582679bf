// Package tlsprobe tells whether a port speaks TLS: why a plain connection
// to a server found none of its protocol.
package tlsprobe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"time"
)

// SpeaksTLS says whether the server at addr (host:port) answers a TLS
// handshake, whether or not its certificate is trusted, within a second.
// Nothing is sent after the handshake.
func SpeaksTLS(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{MinVersion: tls.VersionTLS12}}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		return true
	}
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var alert tls.AlertError
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &alert)
}

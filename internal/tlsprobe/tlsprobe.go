// Package tlsprobe tells whether a port speaks TLS: why a plain connection
// to a server found none of its protocol.
package tlsprobe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
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

// Refusal is why the server at addr refuses a TLS client with cfg after
// the handshake, or nil: in TLS 1.3 a server that wants a client
// certificate completes the handshake and sends its alert (certificate
// required) on the first read, which a client library may never show
// (it reports the connection closed instead). Within a second.
func Refusal(ctx context.Context, addr string, cfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	d := tls.Dialer{Config: cfg}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetReadDeadline(deadline)
	var b [1]byte
	_, err = c.Read(b[:])
	var alert tls.AlertError
	if errors.As(err, &alert) || (err != nil && strings.Contains(err.Error(), "remote error: tls: ")) {
		return err
	}
	return nil
}

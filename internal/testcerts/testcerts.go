// Package testcerts makes the certificates the TLS tests give real
// servers and dqbench's clients: a CA, a server certificate for 127.0.0.1
// and localhost, and a client certificate, each a PEM file in a test's
// temporary directory. Nothing is checked in; every test makes its own.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Set is one CA and the certificates it signed, as files.
type Set struct {
	Dir string
	// CA is the CA certificate; Cert and Key the server's; ClientCert
	// and ClientKey the client's (CN "dqbench-client").
	CA, Cert, Key, ClientCert, ClientKey string
	// Pool trusts CA.
	Pool *x509.CertPool
}

// New makes a fresh CA (CN name) and its certificates in a temporary
// directory of t.
func New(t testing.TB, name string) *Set {
	t.Helper()
	s, err := Write(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Write makes a fresh CA (CN name) and its certificates in dir, valid for
// a day. The files are readable by everyone (0644), keys too: a server
// that drops to its own user (rabbitmq-server) must read them. Test keys
// only.
func Write(dir, name string) (*Set, error) { return WriteFor(dir, name, 24*time.Hour) }

// WriteFor is Write with certificates valid for validity.
func WriteFor(dir, name string, validity time.Duration) (*Set, error) {
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	s := &Set{Dir: dir, Pool: x509.NewCertPool()}
	s.Pool.AddCert(ca)
	if s.CA, err = write(dir, "ca.pem", "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, server bool) (string, string, error) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(validity),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if server {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			return "", "", err
		}
		kb, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return "", "", err
		}
		c, err := write(dir, cn+".pem", "CERTIFICATE", der)
		if err != nil {
			return "", "", err
		}
		kf, err := write(dir, cn+"-key.pem", "PRIVATE KEY", kb)
		return c, kf, err
	}
	if s.Cert, s.Key, err = leaf(2, "server", x509.ExtKeyUsageServerAuth, true); err != nil {
		return nil, err
	}
	if s.ClientCert, s.ClientKey, err = leaf(3, "dqbench-client", x509.ExtKeyUsageClientAuth, false); err != nil {
		return nil, err
	}
	return s, nil
}

// ServerConfig is a server's TLS configuration from s; with verify, it
// asks for a client certificate signed by the CA.
func (s *Set) ServerConfig(verify bool) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(s.Cert, s.Key)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if verify {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = s.Pool
	}
	return cfg, nil
}

func write(dir, name, typ string, der []byte) (string, error) {
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o644)
}

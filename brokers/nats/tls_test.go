package nats_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/brokers/nats"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/testcerts"
)

// startServer runs a real nats-server (the library, in-process) with
// JetStream and opts' TLS and users, stopped when t ends; it returns its
// client URL.
func startServer(t *testing.T, opts server.Options) string {
	t.Helper()
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(&opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	return srv.ClientURL()
}

func serverConfig(t *testing.T, certs *testcerts.Set, verify bool) *tls.Config {
	t.Helper()
	cfg, err := certs.ServerConfig(verify)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// secretFile writes secret to a file of its own in t's directory.
func secretFile(t *testing.T, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// secured is the contract's settings with sec.
func secured(sec catalog.Security) *catalog.NATSSettings {
	s := settings()
	s.Security = sec
	return s
}

func openSecured(url string, sec catalog.Security) func(t *testing.T) brokers.Broker {
	return func(t *testing.T) brokers.Broker {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		b, err := nats.Open(ctx, brokers.Config{Kind: catalog.NATS, Mode: catalog.External, Addresses: []string{url}, Settings: secured(sec)})
		if err != nil {
			t.Fatalf("nats.Open: %v", err)
		}
		return b
	}
}

// TestTLSAndLogins runs the contract against real nats-servers with TLS
// (a CA and server certificate made here) and each way to log in: an
// nkey user with a client certificate the server verifies, a user whose
// password is in a file, a token in an environment variable.
func TestTLSAndLogins(t *testing.T) {
	certs := testcerts.New(t, "dqbench-test-ca")
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	seedFile := secretFile(t, string(seed))
	caOnly := &catalog.TLS{CA: certs.CA}
	t.Setenv("DQBENCH_TEST_NATS_TOKEN", "tok-3f9a")
	for _, tc := range []struct {
		name string
		opts server.Options
		sec  catalog.Security
	}{
		{
			name: "ClientCertAndNKey",
			opts: server.Options{TLS: true, TLSVerify: true, TLSConfig: serverConfig(t, certs, true), Nkeys: []*server.NkeyUser{{Nkey: pub}}},
			sec:  catalog.Security{TLS: &catalog.TLS{CA: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}, Auth: &catalog.Auth{NKeySeedFile: seedFile}},
		},
		{
			name: "PasswordFile",
			opts: server.Options{TLS: true, TLSConfig: serverConfig(t, certs, false), Users: []*server.User{{Username: "dq", Password: "pw-8c1e"}}},
			sec:  catalog.Security{TLS: caOnly, Auth: &catalog.Auth{User: "dq", PasswordFile: secretFile(t, "pw-8c1e")}},
		},
		{
			name: "TokenEnv",
			opts: server.Options{TLS: true, TLSConfig: serverConfig(t, certs, false), Authorization: "tok-3f9a"},
			sec:  catalog.Security{TLS: caOnly, Auth: &catalog.Auth{TokenEnv: "DQBENCH_TEST_NATS_TOKEN"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := startServer(t, tc.opts)
			brokertest.Run(t, openSecured(url, tc.sec))
		})
	}
}

// TestTLSFailures: a wrong password, a certificate from a CA not trusted,
// a plain client at a TLS-only server and a TLS client at a plain one
// each fail Open as unreachable (exit 3) with a message naming the
// cause, and never the password.
func TestTLSFailures(t *testing.T) {
	certs := testcerts.New(t, "dqbench-test-ca")
	other := testcerts.New(t, "another-ca")
	tlsURL := startServer(t, server.Options{TLS: true, TLSConfig: serverConfig(t, certs, false), Users: []*server.User{{Username: "dq", Password: "pw-8c1e"}}})
	plainURL := startServer(t, server.Options{})
	t.Setenv("DQBENCH_TEST_NATS_PW", "wrong-77d2")
	for _, tc := range []struct {
		name, url string
		sec       catalog.Security
		want      string
	}{
		{"WrongPassword", tlsURL, catalog.Security{TLS: &catalog.TLS{CA: certs.CA}, Auth: &catalog.Auth{User: "dq", PasswordEnv: "DQBENCH_TEST_NATS_PW"}}, "refused the login"},
		{"UntrustedCA", tlsURL, catalog.Security{TLS: &catalog.TLS{CA: other.CA}, Auth: &catalog.Auth{User: "dq", PasswordEnv: "DQBENCH_TEST_NATS_PW"}}, "signed by a CA dqbench does not trust"},
		{"PlainAtTLS", strings.Replace(tlsURL, "tls://", "nats://", 1), catalog.Security{Auth: &catalog.Auth{User: "dq", PasswordEnv: "DQBENCH_TEST_NATS_PW"}}, "requires TLS"},
		{"TLSAtPlain", plainURL, catalog.Security{TLS: &catalog.TLS{CA: certs.CA}}, "does not offer it"},
		{"TLSSchemeAtPlain", strings.Replace(plainURL, "nats://", "tls://", 1), catalog.Security{}, "does not offer it"},
		{"MissingCA", tlsURL, catalog.Security{TLS: &catalog.TLS{CA: filepath.Join(t.TempDir(), "nope.pem")}}, "tls.ca"},
		{"UnsetPasswordEnv", tlsURL, catalog.Security{TLS: &catalog.TLS{CA: certs.CA}, Auth: &catalog.Auth{User: "dq", PasswordEnv: "DQBENCH_TEST_UNSET"}}, "DQBENCH_TEST_UNSET is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			b, err := nats.Open(ctx, brokers.Config{Kind: catalog.NATS, Mode: catalog.External, Addresses: []string{tc.url}, Settings: secured(tc.sec)})
			if err == nil {
				b.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to say %q", msg, tc.want)
			}
			if strings.Contains(msg, "wrong-77d2") || strings.Contains(msg, "pw-8c1e") {
				t.Errorf("error %q has the password in it", msg)
			}
			if strings.Contains(msg, "start one") {
				t.Errorf("error %q says to start a server that answered", msg)
			}
		})
	}
}

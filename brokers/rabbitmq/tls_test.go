package rabbitmq_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/brokers/rabbitmq"
	"github.com/dqbench/dqbench/brokers/rabbitmq/cluster"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/testcerts"
	"github.com/dqbench/dqbench/internal/tlsservers"
)

// tlsNode is a real one-node RabbitMQ with a TLS listener (certificates
// made here, client certificates required and verified) besides its plain
// one, and the user dq instead of guest, whose password is in a file.
type tlsNode struct {
	*tlsservers.RabbitMQ
	password string
}

// startTLSNode starts it from the installed rabbitmq-server, stopped when
// t ends; skipped where rabbitmq-server is not installed, unless
// DQBENCH_REQUIRE_BROKERS=1.
func startTLSNode(t *testing.T) *tlsNode {
	t.Helper()
	if !cluster.Installed() {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatal("DQBENCH_REQUIRE_BROKERS=1 but rabbitmq-server is not installed")
		}
		t.Skip("rabbitmq-server is not installed: no RabbitMQ with a TLS listener to start")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r, err := tlsservers.StartRabbitMQ(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Cluster.Stop(); err != nil {
			t.Errorf("stop the RabbitMQ node: %v", err)
		}
	})
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte(tlsservers.RabbitMQPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &tlsNode{RabbitMQ: r, password: pw}
}

func (n *tlsNode) config(url string, sec catalog.Security) brokers.Config {
	return brokers.Config{
		Kind: catalog.RabbitMQ, Mode: catalog.External, Addresses: []string{url},
		Settings: &catalog.RabbitMQSettings{QueueType: catalog.ClassicQueue, Security: sec},
	}
}

// TestTLS runs the contract on a real RabbitMQ over amqps:// with a
// client certificate and the non-guest user dq (its password in a file),
// and checks that a wrong password, a CA not trusted, amqp:// at the TLS
// port and amqps:// at the plain one each fail naming the cause, without
// the password.
func TestTLS(t *testing.T) {
	n := startTLSNode(t)
	login := &catalog.Auth{User: tlsservers.RabbitMQUser, PasswordFile: n.password}
	good := catalog.Security{TLS: &catalog.TLS{CA: n.Certs.CA, Cert: n.Certs.ClientCert, Key: n.Certs.ClientKey}, Auth: login}
	t.Run("Contract", func(t *testing.T) {
		brokertest.Run(t, func(t *testing.T) brokers.Broker {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			b, err := rabbitmq.Open(ctx, n.config(n.TLSURL, good))
			if err != nil {
				t.Fatalf("rabbitmq.Open: %v", err)
			}
			return b
		})
	})
	other := testcerts.New(t, "another-ca")
	t.Setenv("DQBENCH_TEST_RABBITMQ_PW", "Wr0ng-5d1")
	wrong := &catalog.Auth{User: tlsservers.RabbitMQUser, PasswordEnv: "DQBENCH_TEST_RABBITMQ_PW"}
	for _, tc := range []struct {
		name, url string
		sec       catalog.Security
		want      string
	}{
		{"WrongPassword", n.TLSURL, catalog.Security{TLS: good.TLS, Auth: wrong}, `refused the login of user "dq"`},
		{"UntrustedCA", n.TLSURL, catalog.Security{TLS: &catalog.TLS{CA: other.CA}, Auth: login}, "signed by a CA dqbench does not trust"},
		{"PlainAtTLSPort", n.TLSAsAMQP, catalog.Security{Auth: login}, "the port speaks TLS only"},
		{"NoClientCert", n.TLSURL, catalog.Security{TLS: &catalog.TLS{CA: n.Certs.CA}, Auth: login}, "it wants a client certificate"},
		{"TLSAtPlainPort", strings.Replace(n.PlainURL, "amqp://", "amqps://", 1), catalog.Security{TLS: &catalog.TLS{CA: n.Certs.CA}, Auth: login}, "did not answer the TLS handshake with TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			b, err := rabbitmq.Open(ctx, n.config(tc.url, tc.sec))
			if err == nil {
				b.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to say %q", msg, tc.want)
			}
			if strings.Contains(msg, "Wr0ng-5d1") || strings.Contains(msg, tlsservers.RabbitMQPassword) || strings.Contains(msg, "start one") {
				t.Errorf("error %q has a password in it, or says to start a broker that answered", msg)
			}
		})
	}
}

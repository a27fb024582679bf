package kafka_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/brokers/kafka"
	"github.com/dqbench/dqbench/brokers/kafka/cluster"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/testcerts"
	"github.com/dqbench/dqbench/internal/testenv"
)

const (
	saslUser     = "dq"
	saslPassword = "Pw-kf-81d3"
)

// TestSASLSSL runs the contract against a real Apache Kafka (one node,
// from the jars: dqbench brokers fetch kafka) over a SASL_SSL listener
// that requires client certificates, logged in by SCRAM-SHA-256,
// SCRAM-SHA-512 and PLAIN (the password from a file); and checks that a
// wrong password, a CA not trusted, TLS at the PLAINTEXT port and no TLS
// at the SASL_SSL one each fail naming the cause, without the password.
func TestSASLSSL(t *testing.T) {
	if _, err := cluster.FindInstall(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	certs := testcerts.New(t, "dqbench-kafka-test-ca")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	c, err := cluster.Start(ctx, cluster.Options{Dir: t.TempDir() + "/kafka", Nodes: 1, Owned: true, Secure: &cluster.SecureListener{
		CA: certs.CA, Cert: certs.Cert, Key: certs.Key, RequireClientCert: true,
		Users: map[string]string{saslUser: saslPassword},
	}})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	secure := []string{c.Nodes[0].SecureAddr()}
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte(saslPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsOK := &catalog.TLS{CA: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}
	config := func(addrs []string, sec catalog.Security) brokers.Config {
		s := &catalog.KafkaSettings{Security: sec}
		s.Defaults()
		return brokers.Config{Kind: catalog.Kafka, Mode: catalog.External, Addresses: addrs, Settings: s}
	}
	for _, m := range []catalog.SASLMechanism{catalog.ScramSHA256, catalog.ScramSHA512, catalog.SASLPlain} {
		t.Run(string(m), func(t *testing.T) {
			sec := catalog.Security{TLS: tlsOK, Auth: &catalog.Auth{User: saslUser, PasswordFile: pw, Mechanism: m}}
			brokertest.Run(t, func(t *testing.T) brokers.Broker { return openKafka(t, config(secure, sec)) })
		})
	}
	t.Setenv("DQBENCH_TEST_KAFKA_PW", "Wr0ng-kf-2")
	login := &catalog.Auth{User: saslUser, PasswordFile: pw}
	other := testcerts.New(t, "another-ca")
	for _, tc := range []struct {
		name  string
		addrs []string
		sec   catalog.Security
		want  string
	}{
		{"WrongPassword", secure, catalog.Security{TLS: tlsOK, Auth: &catalog.Auth{User: saslUser, PasswordEnv: "DQBENCH_TEST_KAFKA_PW"}}, "refused the SASL login"},
		{"UntrustedCA", secure, catalog.Security{TLS: &catalog.TLS{CA: other.CA, Cert: certs.ClientCert, Key: certs.ClientKey}, Auth: login}, "signed by a CA dqbench does not trust"},
		{"NoTLSAtSASLSSL", secure, catalog.Security{Auth: login}, "the port speaks TLS only"},
		{"TLSAtPlaintext", c.Addrs(), catalog.Security{TLS: tlsOK, Auth: login}, "did not answer the TLS handshake with TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			b, err := kafka.Open(ctx, config(tc.addrs, tc.sec))
			if err == nil {
				b.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to say %q", msg, tc.want)
			}
			if strings.Contains(msg, "Wr0ng-kf") || strings.Contains(msg, saslPassword) || strings.Contains(msg, "start one") {
				t.Errorf("error %q holds the password, or says to start a broker that answered", msg)
			}
		})
	}
}

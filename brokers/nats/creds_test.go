package nats_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/testcerts"
)

// TestCredsFile runs the contract against a real nats-server in operator
// mode (decentralized JWT auth: an operator, a system account and an
// account with JetStream, its JWTs in a memory resolver) over TLS, logged
// in by a .creds file (the user's JWT and nkey seed, made here).
func TestCredsFile(t *testing.T) {
	must := func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	okp, err := nkeys.CreateOperator()
	if err != nil {
		t.Fatal(err)
	}
	opub := must(okp.PublicKey())
	op, err := jwt.DecodeOperatorClaims(must(jwt.NewOperatorClaims(opub).Encode(okp)))
	if err != nil {
		t.Fatal(err)
	}
	account := func(js bool) (nkeys.KeyPair, string, string) {
		kp, err := nkeys.CreateAccount()
		if err != nil {
			t.Fatal(err)
		}
		pub := must(kp.PublicKey())
		ac := jwt.NewAccountClaims(pub)
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		return kp, pub, must(ac.Encode(okp))
	}
	_, sysPub, sysJWT := account(false)
	akp, appPub, appJWT := account(true)
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(sysPub, sysJWT); err != nil {
		t.Fatal(err)
	}
	if err := resolver.Store(appPub, appJWT); err != nil {
		t.Fatal(err)
	}
	ukp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	uc := jwt.NewUserClaims(must(ukp.PublicKey()))
	seed, _ := ukp.Seed()
	creds, err := jwt.FormatUserConfig(must(uc.Encode(akp)), seed)
	if err != nil {
		t.Fatal(err)
	}
	credsFile := filepath.Join(t.TempDir(), "user.creds")
	if err := os.WriteFile(credsFile, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	certs := testcerts.New(t, "dqbench-test-ca")
	url := startServer(t, server.Options{
		TrustedOperators: []*jwt.OperatorClaims{op}, AccountResolver: resolver, SystemAccount: sysPub,
		TLS: true, TLSConfig: serverConfig(t, certs, false),
	})
	brokertest.Run(t, openSecured(url, catalog.Security{TLS: &catalog.TLS{CA: certs.CA}, Auth: &catalog.Auth{CredsFile: credsFile}}))
}

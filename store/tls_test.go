package store_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/internal/tlsservers"
	"github.com/dqbench/dqbench/store"
)

// TestPostgresTLS runs against a real PostgreSQL with ssl = on that lets
// TCP clients in over TLS only: the store URL's sslmode=verify-full with
// the CA (sslrootcert) and a client certificate (sslcert, sslkey), the
// password from a file (passfile) or PGPASSWORD, opens a store; a wrong
// password, a CA not trusted and sslmode=disable are each refused naming
// the cause, and no error holds the password. pgx reads these from the
// URL: dqbench passes it on. Skipped where PostgreSQL is not installed,
// unless DQBENCH_REQUIRE_BROKERS=1.
func TestPostgresTLS(t *testing.T) {
	if tlsservers.PostgresInstalled() == "" {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatal("DQBENCH_REQUIRE_BROKERS=1 but PostgreSQL's initdb is not installed")
		}
		t.Skip("PostgreSQL's initdb is not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	pg, err := tlsservers.StartPostgres(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	passfile := filepath.Join(t.TempDir(), "pgpass")
	host := strings.TrimPrefix(strings.TrimSuffix(pg.URL, "/postgres"), "postgres://")
	h, p, _ := strings.Cut(host, ":")
	if err := os.WriteFile(passfile, []byte(h+":"+p+":*:"+tlsservers.PostgresUser+":"+tlsservers.PostgresPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	with := func(user string, q url.Values) string {
		return strings.Replace(pg.URL, "postgres://", "postgres://"+user+"@", 1) + "?" + q.Encode()
	}
	verify := func(extra map[string]string) url.Values {
		q := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {pg.Certs.CA}, "sslcert": {pg.Certs.ClientCert}, "sslkey": {pg.Certs.ClientKey}}
		for k, v := range extra {
			q.Set(k, v)
		}
		return q
	}
	open := func(t *testing.T, ref string) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		if err := store.Check(ctx, ref); err != nil {
			return err
		}
		s, err := store.OpenPostgres(ctx, ref, "dqbench_tls_test", 1)
		if err != nil {
			return err
		}
		return s.Close()
	}
	t.Run("Passfile", func(t *testing.T) {
		if err := open(t, with(tlsservers.PostgresUser, verify(map[string]string{"passfile": passfile}))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("PGPASSWORD", func(t *testing.T) {
		t.Setenv("PGPASSWORD", tlsservers.PostgresPassword)
		if err := open(t, with(tlsservers.PostgresUser, verify(nil))); err != nil {
			t.Fatal(err)
		}
	})
	other := filepath.Join(t.TempDir(), "other-ca.pem")
	b, _ := os.ReadFile(pg.Certs.ClientCert) // a certificate that signed nothing
	if err := os.WriteFile(other, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, ref, want string
	}{
		{"WrongPassword", with(tlsservers.PostgresUser+":Wr0ng-pg-61", verify(nil)), "refused the login"},
		{"UntrustedCA", with(tlsservers.PostgresUser+":"+tlsservers.PostgresPassword, verify(map[string]string{"sslrootcert": other})), "signed by a CA dqbench does not trust"},
		{"PlainAtTLSOnly", with(tlsservers.PostgresUser+":"+tlsservers.PostgresPassword, url.Values{"sslmode": {"disable"}}), "no encryption"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := open(t, tc.ref)
			if err == nil {
				t.Fatal("opened")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to say %q", msg, tc.want)
			}
			t.Log(msg)
			if strings.Contains(msg, "Wr0ng-pg") || strings.Contains(msg, tlsservers.PostgresPassword) {
				t.Errorf("error %q holds the password", msg)
			}
		})
	}
}

// TestRedisTLS runs against a real redis-server with a TLS port that
// requires client certificates: rediss:// with tls_ca, tls_cert and
// tls_key in the URL's query opens a store (go-redis leaves TLS to
// dqbench's dialer); a wrong password, a CA not trusted and redis:// at
// the TLS port each fail naming the cause, and no error holds the
// password. Skipped where redis-server is not installed, unless
// DQBENCH_REQUIRE_BROKERS=1.
func TestRedisTLS(t *testing.T) {
	if !tlsservers.RedisInstalled() {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatal("DQBENCH_REQUIRE_BROKERS=1 but redis-server is not installed")
		}
		t.Skip("redis-server is not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	r, err := tlsservers.StartRedis(ctx, t.TempDir())
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	withPW := func(u, pw string) string {
		return strings.Replace(strings.Replace(u, "redis://", "redis://:"+pw+"@", 1), "rediss://", "rediss://:"+pw+"@", 1)
	}
	files := func(ca string) string {
		return "?" + url.Values{"tls_ca": {ca}, "tls_cert": {r.Certs.ClientCert}, "tls_key": {r.Certs.ClientKey}}.Encode()
	}
	good := withPW(r.TLSURL, tlsservers.RedisPassword) + files(r.Certs.CA)
	ctx, cancel = context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := store.CheckRedis(ctx, good); err != nil {
		t.Fatalf("CheckRedis over TLS: %v", err)
	}
	s, err := store.OpenRedis(ctx, good, "dqbench:tls-test:")
	if err != nil {
		t.Fatalf("OpenRedis over TLS: %v", err)
	}
	if err := s.Client.Set(ctx, "dqbench:tls-test:k", "v", time.Minute).Err(); err != nil {
		t.Errorf("SET over TLS: %v", err)
	}
	s.Client.Del(ctx, "dqbench:tls-test:k")
	s.Client.Close()
	for _, tc := range []struct{ name, url, want string }{
		{"WrongPassword", withPW(r.TLSURL, "Wr0ng-rd-93") + files(r.Certs.CA), "refused the client"},
		{"UntrustedCA", withPW(r.TLSURL, tlsservers.RedisPassword) + files(r.Certs.ClientCert), "signed by a CA dqbench does not trust"},
		{"PlainAtTLSPort", withPW(r.TLSAsPlain, tlsservers.RedisPassword), "the port speaks TLS only"},
		{"TLSParamsOnPlain", withPW(r.PlainURL, tlsservers.RedisPassword) + files(r.Certs.CA), "write rediss://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := store.CheckRedis(ctx, tc.url)
			if err == nil {
				t.Fatal("opened")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to say %q", msg, tc.want)
			}
			t.Log(msg)
			if strings.Contains(msg, "Wr0ng-rd") || strings.Contains(msg, tlsservers.RedisPassword) {
				t.Errorf("error %q holds the password", msg)
			}
		})
	}
}

package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/dqbench/dqbench/catalog"
)

// ErrUnusable wraps every reason a store cannot serve a run, found before
// any variant starts (Check, CheckRedis) or when a variant opens it: its
// server does not answer (ErrUnreachable too), refuses the login, has no
// such database, or does not let the user do what a run does. The run
// could not run: the CLI says so in one line, with the fix.
var ErrUnusable = errors.New("store unusable")

// unusableError is an ErrUnusable: what is wrong, as the server said it,
// and what to do.
type unusableError struct {
	msg         string
	unreachable bool // the server did not answer: ErrUnreachable too
}

func (e *unusableError) Error() string { return ErrUnusable.Error() + ": " + e.msg }

func (e *unusableError) Unwrap() []error {
	if e.unreachable {
		return []error{ErrUnusable, ErrUnreachable}
	}
	return []error{ErrUnusable}
}

// Check makes sure the store ref names can serve a run, before any
// variant starts: SQLite always can; a PostgreSQL server must answer, let
// the user in, have the database and let the user create a schema in it.
// Its error wraps ErrUnusable and says the cause and the fix.
func Check(ctx context.Context, ref string) error {
	kind, err := catalog.ParseStore(ref)
	if err != nil {
		return fmt.Errorf("store %q: %w", catalog.MaskURL(ref), err)
	}
	if kind != catalog.Postgres {
		return nil
	}
	cfg, err := pgx.ParseConfig(ref)
	if err != nil {
		return fmt.Errorf("store URL: %s", catalog.MaskURLs(err.Error()))
	}
	cfg.ConnectTimeout = pingTimeout
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return postgresUnusable(cfg, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var may bool
	qctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := conn.QueryRow(qctx, `SELECT has_database_privilege(current_database(), 'CREATE')`).Scan(&may); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return postgresUnusable(cfg, err)
	}
	if !may {
		return &unusableError{msg: fmt.Sprintf("PostgreSQL at %s: user %s may not create a schema in database %s (each variant runs in a schema of its own); grant it with: %s -c 'GRANT CREATE ON DATABASE %s TO %s', or name a database the user may create schemas in",
			pgAddr(cfg), cfg.User, cfg.Database, psqlFor(cfg, "postgres"), quoteIdent(cfg.Database), quoteIdent(cfg.User))}
	}
	return nil
}

// pgAddr is where cfg connects, as host:port.
func pgAddr(cfg *pgx.ConnConfig) string {
	return net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
}

// psqlFor is the psql command line that reaches cfg's server, in
// database db.
func psqlFor(cfg *pgx.ConnConfig, db string) string {
	return fmt.Sprintf("psql -h %s -p %d -U %s -d %s", cfg.Host, cfg.Port, cfg.User, db)
}

// quoteIdent quotes a PostgreSQL identifier when it needs it.
func quoteIdent(s string) string {
	if schemaName.MatchString(s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// postgresHint is what to do about a PostgreSQL server that does not answer.
const postgresHint = `start one with "docker compose up -d postgres" (or "service postgresql start"), or run on SQLite (store: sqlite)`

// postgresUnusable turns a failure to connect to (or query) the server
// cfg names into an ErrUnusable: the server's own words and the fix for
// that cause.
func postgresUnusable(cfg *pgx.ConnConfig, err error) error {
	addr := pgAddr(cfg)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		if why := tlsFailure(err, "the store URL's sslrootcert=FILE (with sslmode=verify-full)"); why != "" {
			return &unusableError{msg: fmt.Sprintf("PostgreSQL at %s: %s", addr, why)}
		}
		return Unreachable("PostgreSQL", addr, err, postgresHint)
	}
	var fix string
	switch pe.Code {
	case "3D000": // invalid_catalog_name: no such database
		fix = fmt.Sprintf("the server is up; create the database with: %s -c 'CREATE DATABASE %s' (or createdb -h %s -p %d -U %s %s), or name an existing one in the store URL",
			psqlFor(cfg, "postgres"), quoteIdent(cfg.Database), cfg.Host, cfg.Port, cfg.User, cfg.Database)
	case "28P01", "28000": // invalid_password, invalid_authorization_specification
		fix = "the server is up and refused the login; check the user and its password in the store URL (the password after the user and a colon, percent-encoded) and the server's pg_hba.conf"
	case "42501": // insufficient_privilege
		fix = fmt.Sprintf("grant user %s what a run needs: %s -c 'GRANT CONNECT, CREATE ON DATABASE %s TO %s'",
			cfg.User, psqlFor(cfg, "postgres"), quoteIdent(cfg.Database), quoteIdent(cfg.User))
	case "53300": // too_many_connections
		fix = "the server has no connection left; end idle sessions or raise max_connections"
	default:
		fix = "check the store URL and the server's log"
	}
	return &unusableError{msg: fmt.Sprintf("PostgreSQL at %s: %s; %s", addr, catalog.MaskURLs(pe.Error()), fix)}
}

// CheckRedis makes sure the Redis at url can serve a run before any
// variant starts: it must answer, let the client in, and let it write and
// delete a key under dqbench: (the prefix of every key a run makes). Its
// error wraps ErrUnusable and says the cause and the fix.
func CheckRedis(ctx context.Context, url string) error {
	r, err := OpenRedis(ctx, url, "")
	if err != nil {
		return err
	}
	defer r.Client.Close()
	key := fmt.Sprintf("dqbench:check:%d", time.Now().UnixNano())
	err = r.Client.Set(ctx, key, "1", 10*time.Second).Err()
	if err == nil {
		err = r.Client.Del(ctx, key).Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return redisUnusable(r.addr, err)
	}
	return nil
}

// redisHint is what to do about a Redis that does not answer.
const redisHint = `start one with "docker compose up -d redis" (or "service redis-server start"), or give another with --redis URL`

// redisUnusable turns a failed Redis call into an ErrUnusable: the
// server's own words and the fix for that cause.
func redisUnusable(addr string, err error) error {
	var re redis.Error
	if !errors.As(err, &re) {
		if why := tlsFailure(err, "the Redis URL's tls_ca=FILE (with rediss://)"); why != "" {
			return &unusableError{msg: fmt.Sprintf("Redis at %s: %s", addr, why)}
		}
		return Unreachable("Redis", addr, err, redisHint)
	}
	msg := re.Error()
	var fix string
	switch word, _, _ := strings.Cut(msg, " "); word {
	case "NOAUTH", "WRONGPASS":
		fix = "the server is up and refused the client; give the user and its password in the Redis URL (the password after the user and a colon, percent-encoded), in the scenario's redis: or with --redis URL"
	case "NOPERM":
		fix = `the user may not write keys under dqbench:; allow them with: ACL SETUSER USER ~dqbench:* +@write +@read +@keyspace`
	default:
		if strings.Contains(msg, "DB index is out of range") {
			fix = "name a database the server has (redis://HOST:PORT/0 up to its databases setting)"
		} else {
			fix = "check the Redis URL and the server's log"
		}
	}
	return &unusableError{msg: fmt.Sprintf("Redis at %s: %s; %s", addr, catalog.MaskURLs(msg), fix)}
}

// tlsFailure says why a TLS handshake with a store failed, naming where
// to give the CA (ca), or "" when err is no TLS failure.
func tlsFailure(err error, ca string) string {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var header tls.RecordHeaderError
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is signed by a CA dqbench does not trust (" + unknown.Error() + "); give the CA that signed it in " + ca
	case errors.As(err, &hostname):
		return "the server's certificate is not for this name (" + hostname.Error() + "); connect by a name the certificate carries"
	case errors.As(err, &header):
		return "the server did not answer the TLS handshake with TLS (is the port a plain one?)"
	}
	return ""
}

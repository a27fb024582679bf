package catalog

import (
	"errors"
	"fmt"
	"strings"
)

// StoreKind names a kind of business store.
type StoreKind string

// The store kinds.
const (
	SQLite   StoreKind = "sqlite"
	Postgres StoreKind = "postgres"
)

// Store describes one kind of business store.
type Store struct {
	Kind StoreKind
	Doc  string
	// Written is how a scenario (store:) or --store names it.
	Written string
}

// Stores lists the store kinds, in the order docs list them. Each has an
// implementation in store/, opened by store.Open.
var Stores = []Store{
	{
		Kind:    SQLite,
		Doc:     "an embedded SQLite file per variant, in a temporary directory removed after the run (one writer: transactions take turns)",
		Written: "sqlite",
	},
	{
		Kind:    Postgres,
		Doc:     "a schema of its own per variant in a running PostgreSQL, created for the run and dropped after it; each consumer instance has its own connection",
		Written: "postgres://USER@HOST:PORT/DATABASE",
	},
}

// DefaultStore is the store a scenario gets when it names none.
const DefaultStore = "sqlite"

// DefaultRedis is the Redis a strategy that needs one uses when neither the
// scenario (redis:) nor --redis names one.
const DefaultRedis = "redis://127.0.0.1:6379"

// ParseStore says which kind of store v names: "sqlite", or a postgres://
// (postgresql://) URL with a host.
func ParseStore(v string) (StoreKind, error) {
	if v == string(SQLite) {
		return SQLite, nil
	}
	if !scheme.MatchString(v) && strings.Contains(v, "=") {
		return "", fmt.Errorf("a key=value DSN is not taken here; write it as a URL, postgres://USER@HOST:PORT/DATABASE (a password after USER and a colon, percent-encoded)")
	}
	u, err := ParseURL(v)
	if errors.Is(err, errUserinfo) {
		return "", fmt.Errorf("a PostgreSQL URL: %w", err)
	}
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("must be sqlite or a postgres://USER@HOST:PORT/DATABASE URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "postgres", "postgresql":
		if err := HostAndPort(u, false); err != nil {
			return "", fmt.Errorf("a PostgreSQL URL needs a host and a port from 1 to 65535 (%v), e.g. postgres://postgres@127.0.0.1:5432/test", err)
		}
		return Postgres, nil
	}
	return "", fmt.Errorf("%s:// is not a store this build knows (use sqlite or postgres://USER@HOST:PORT/DATABASE)", u.Scheme)
}

// ParseRedis checks a Redis URL: redis://HOST:PORT[/DB].
func ParseRedis(v string) error {
	u, err := ParseURL(v)
	if errors.Is(err, errUserinfo) {
		return fmt.Errorf("a Redis URL: %w", err)
	}
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return fmt.Errorf("must be a redis://HOST:PORT URL, e.g. %s", DefaultRedis)
	}
	if err := HostAndPort(u, false); err != nil {
		return fmt.Errorf("must be a redis://HOST:PORT URL (%v), e.g. %s", err, DefaultRedis)
	}
	return nil
}

package store_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/internal/testenv"
	"github.com/dqbench/dqbench/store"
)

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestCheck: a store that cannot serve a run is an ErrUnusable saying the
// cause as the server gave it and the fix for that cause (a missing
// database is not "start PostgreSQL"); one that can is nil.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	if err := store.Check(ctx, "sqlite"); err != nil {
		t.Errorf("Check(sqlite) = %v", err)
	}
	addr := closedPort(t)
	pgDown := store.Check(ctx, "postgres://postgres@"+addr+"/test")
	redisDown := store.CheckRedis(ctx, "redis://"+addr)
	for what, err := range map[string]error{"postgres": pgDown, "redis": redisDown} {
		if !errors.Is(err, store.ErrUnusable) || !errors.Is(err, store.ErrUnreachable) {
			t.Errorf("%s on a closed port: %v, want ErrUnusable and ErrUnreachable", what, err)
			continue
		}
		for _, want := range []string{addr, "connection refused", "start one"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s on a closed port: %q does not say %q", what, err, want)
			}
		}
	}

	if err := store.Check(ctx, postgresURL()); errors.Is(err, store.ErrUnreachable) {
		testenv.Unavailable(t, "no PostgreSQL (set DQBENCH_POSTGRES or start one): %v", err)
	} else if err != nil {
		t.Fatalf("Check(%s) = %v", postgresURL(), err)
	}
	missing := strings.TrimSuffix(postgresURL(), "/test") + "/dqbench_no_such_db"
	err := store.Check(ctx, missing)
	if !errors.Is(err, store.ErrUnusable) || errors.Is(err, store.ErrUnreachable) {
		t.Fatalf("Check(%s) = %v, want ErrUnusable, not ErrUnreachable", missing, err)
	}
	for _, want := range []string{`database "dqbench_no_such_db" does not exist`, "CREATE DATABASE dqbench_no_such_db"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing database: %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "start one") {
		t.Errorf("missing database: %q says to start a server that is running", err)
	}

	if err := store.CheckRedis(ctx, "redis://127.0.0.1:6379"); errors.Is(err, store.ErrUnreachable) {
		testenv.Unavailable(t, "no Redis at 127.0.0.1:6379: %v", err)
	} else if err != nil {
		t.Fatalf("CheckRedis = %v", err)
	}
	err = store.CheckRedis(ctx, "redis://127.0.0.1:6379/9999")
	if !errors.Is(err, store.ErrUnusable) || errors.Is(err, store.ErrUnreachable) || !strings.Contains(err.Error(), "DB index is out of range") {
		t.Errorf("CheckRedis on database 9999 = %v, want ErrUnusable saying the index is out of range", err)
	}
}

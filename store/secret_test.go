package store_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/store"
)

// TestUnreachableStoreHidesThePassword: a PostgreSQL (URL or key=value
// DSN) or Redis that does not answer (nothing listens on its port) is an
// error naming the server without its password, whatever the password
// holds, malformed or valid: no piece of it is in the error.
func TestUnreachableStoreHidesThePassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	host, port, _ := net.SplitHostPort(addr)
	ln.Close() // nothing listens there now
	opens := map[string]func(ctx context.Context, pw string) error{
		"postgres": func(ctx context.Context, pw string) error {
			_, err := store.OpenPostgres(ctx, "postgres://u:"+pw+"@"+addr+"/test", "dqbench_secret", 1)
			return err
		},
		"postgres DSN": func(ctx context.Context, pw string) error {
			_, err := store.OpenPostgres(ctx, "host="+host+" port="+port+" user=u password='"+pw+"' dbname=test", "dqbench_secret", 1)
			return err
		},
		"redis": func(ctx context.Context, pw string) error {
			_, err := store.OpenRedis(ctx, "redis://:"+pw+"@"+addr+"/0", "dqbench:secret:")
			return err
		},
	}
	for what, open := range opens {
		for _, pw := range []string{"PW1x%2FPW2y%20%23%25%40", "PW1x@PW2y", "PW1x/PW2y", "PW1x PW2y", "PW1x#PW2y", "PW1x%PW2y"} {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := open(ctx, pw)
			cancel()
			if err == nil {
				t.Errorf("%s %s: opened where nothing listens", what, pw)
				continue
			}
			if strings.Contains(err.Error(), "PW1x") || strings.Contains(err.Error(), "PW2y") {
				t.Errorf("%s, password %q: the error holds it: %v", what, pw, err)
			}
		}
	}
}

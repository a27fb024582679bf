package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/internal/testenv"
	"github.com/dqbench/dqbench/store"
)

// freezer is a TCP proxy in front of a store server that can stop
// forwarding without closing anything: a server that stops answering.
type freezer struct {
	ln     net.Listener
	mu     sync.Mutex
	frozen bool
	thawed chan struct{}
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, thawed: make(chan struct{})}
	close(f.thawed)
	t.Cleanup(func() { f.thaw(); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go f.pipe(c, s)
			go f.pipe(s, c)
		}
	}()
	return f
}

func (f *freezer) pipe(from, to net.Conn) {
	defer from.Close()
	defer to.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			f.mu.Lock()
			wait := f.thawed
			f.mu.Unlock()
			<-wait
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.frozen {
		f.frozen, f.thawed = true, make(chan struct{})
	}
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen {
		f.frozen = false
		close(f.thawed)
	}
}

// TestFrozenPostgresEndsByTheDeadline: a PostgreSQL that stops answering
// in the middle of a run ends each transaction when the run's context
// does (its deadline, Ctrl-C), with an error that names the server; it
// used to wait forever (the statements ran on context.Background()).
func TestFrozenPostgresEndsByTheDeadline(t *testing.T) {
	p := openPostgres(t) // skips without PostgreSQL
	_ = p
	host := strings.TrimPrefix(postgresURL(), "postgres://")
	host = host[strings.Index(host, "@")+1:]
	host = host[:strings.Index(host, "/")]
	fz := newFreezer(t, host)
	url := strings.Replace(postgresURL(), host, fz.ln.Addr().String(), 1)
	ps, err := store.OpenPostgres(context.Background(), url, store.SchemaFor("storetest_frozen"), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fz.thaw(); ps.Close() })
	if err := ps.Setup(context.Background(), "CREATE TABLE t (n int)"); err != nil {
		t.Fatal(err)
	}
	insert := func(ctx context.Context) error {
		return ps.Tx(ctx, func(tx store.Tx) error {
			_, err := tx.Exec("INSERT INTO t VALUES (1)")
			return err
		})
	}
	if err := insert(context.Background()); err != nil {
		t.Fatal(err)
	}
	fz.freeze()
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 300*time.Millisecond)
		}, context.DeadlineExceeded},
		{"Ctrl-C", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- insert(ctx) }()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "PostgreSQL at "+fz.ln.Addr().String()+" did not answer") {
					t.Errorf("Tx on a frozen server = %v, want %v naming the server", err, tc.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Tx on a frozen server did not end with its context")
			}
		})
	}
}

// TestFrozenRedisEndsByTheDeadline: a Redis that stops answering in the
// middle of a run ends each call when the run's context does (its
// deadline, Ctrl-C) within a moment, with an error that names the server;
// go-redis used to ignore the context's deadline and wait out its own read
// timeout, then retry. Closing it, with its keys left, is bounded too and
// says how to remove them.
func TestFrozenRedisEndsByTheDeadline(t *testing.T) {
	addr := "127.0.0.1:6379"
	if u := os.Getenv("DQBENCH_REDIS"); u != "" {
		addr = strings.TrimPrefix(strings.TrimPrefix(u, "redis://"), "/")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err != nil {
		testenv.Unavailable(t, "no Redis at %s: %v", addr, err)
	} else {
		c.Close()
	}
	fz := newFreezer(t, addr)
	run, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	r, err := store.OpenRedis(run, "redis://"+fz.ln.Addr().String(), fmt.Sprintf("dqbench:storetest-frozen-%d:", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Client.Set(context.Background(), r.Key("before"), 1, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	fz.freeze()
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 1200*time.Millisecond)
		}, context.DeadlineExceeded},
		{"Ctrl-C", func() (context.Context, context.CancelFunc) {
			// The run's context, as the runner gives it to OpenRedis.
			time.AfterFunc(1200*time.Millisecond, interrupt)
			return run, interrupt
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			err := r.Client.SetNX(ctx, r.Key(tc.name), 1, time.Minute).Err()
			if took := time.Since(start); took > 4*time.Second {
				t.Errorf("SetNX on a frozen server took %s, its context ended at 1.2s", took)
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, store.ErrStalled) || !strings.Contains(err.Error(), "Redis at "+fz.ln.Addr().String()+" did not answer for") {
				t.Errorf("SetNX on a frozen server = %v, want %v naming the server", err, tc.want)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = r.CloseBy(ctx)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Close on a frozen server took %s, its context ended at 300ms", took)
	}
	if !errors.Is(err, store.ErrCleanup) || !strings.Contains(err.Error(), "redis-cli") {
		t.Errorf("Close on a frozen server = %v, want ErrCleanup saying how to remove the keys", err)
	}
	fz.thaw()
	c, err := store.OpenRedis(context.Background(), "redis://"+addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Client.Close()
	c.Client.Del(context.Background(), r.Key("before"))
}

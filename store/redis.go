package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Redis is a Redis client for strategies that keep markers there, with a
// key prefix of the variant's own; Close deletes every key under it.
type Redis struct {
	Client *redis.Client
	prefix string
	addr   string
}

// quiet drops go-redis's own log lines (a dial failure is logged once per
// pooled attempt); dqbench reports the error itself.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// OpenRedis connects to the Redis at url (redis://HOST:PORT[/DB]) for keys
// under prefix.
func OpenRedis(ctx context.Context, url, prefix string) (*Redis, error) {
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis URL %s: %w", url, err)
	}
	opt.DialTimeout = pingTimeout
	opt.MaxRetries = 1
	c := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err() // the run ended (another variant failed): not this server's fault
		}
		return nil, Unreachable("Redis", opt.Addr, err, `start one with "docker compose up -d redis" (or "service redis-server start"), or give another with --redis URL`)
	}
	return &Redis{Client: c, prefix: prefix, addr: opt.Addr}, nil
}

// Key is the Redis key of a message id.
func (r *Redis) Key(id string) string { return r.prefix + id }

// Close deletes the keys under the prefix and closes the client; a failed
// delete wraps ErrCleanup.
func (r *Redis) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	var derr error
	iter := r.Client.Scan(ctx, 0, r.prefix+"*", 1000).Iterator()
	var batch []string
	flush := func() {
		if len(batch) > 0 && derr == nil {
			derr = r.Client.Del(ctx, batch...).Err()
		}
		batch = batch[:0]
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			flush()
		}
	}
	flush()
	if err := iter.Err(); err != nil && derr == nil {
		derr = err
	}
	if derr != nil {
		derr = fmt.Errorf("%w: delete keys %s* on Redis at %s: %v", ErrCleanup, r.prefix, r.addr, derr)
	}
	return errors.Join(derr, r.Client.Close())
}

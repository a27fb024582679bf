package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/tlsprobe"
	"github.com/dqbench/dqbench/leftover"
)

// redisIOTimeout bounds one read or write of a Redis call, far longer
// than any of dqbench's calls takes: a Redis that stops answering fails
// the run this soon, before its deadline.
const redisIOTimeout = 5 * time.Second

// liveConns are a client's open connections, so that the end of the run
// can wake the reads that wait on them.
type liveConns struct {
	mu sync.Mutex
	m  map[*liveConn]bool
	// tls, when set, is spoken on every connection (rediss://): go-redis
	// leaves TLS to a dialer of the caller's.
	tls *tls.Config
}

type liveConn struct {
	net.Conn
	of *liveConns
}

func (l *liveConns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: pingTimeout}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if l.tls != nil {
		hctx, cancel := context.WithTimeout(ctx, pingTimeout)
		defer cancel()
		tc := tls.Client(c, l.tls)
		if err := tc.HandshakeContext(hctx); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	lc := &liveConn{Conn: c, of: l}
	l.mu.Lock()
	l.m[lc] = true
	l.mu.Unlock()
	return lc, nil
}

func (c *liveConn) Close() error {
	c.of.mu.Lock()
	delete(c.of.m, c)
	c.of.mu.Unlock()
	return c.Conn.Close()
}

// wake ends every read and write in flight with a timeout; the next call
// on a connection sets its own deadline again.
func (l *liveConns) wake() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.m {
		c.SetDeadline(time.Now())
	}
}

// Redis is a Redis client for strategies that keep markers there, with a
// key prefix of the variant's own; Close deletes every key under it.
type Redis struct {
	Client *redis.Client
	prefix string
	addr   string
	url    string
}

func (r *Redis) host() string { h, _, _ := net.SplitHostPort(r.addr); return h }
func (r *Redis) port() string { _, p, _ := net.SplitHostPort(r.addr); return p }

// DeleteKeys deletes the keys under prefix on the Redis at url: what
// dqbench clean does with the keys a killed run left.
func DeleteKeys(ctx context.Context, url, prefix string) error {
	if !strings.HasPrefix(prefix, "dqbench:") {
		return fmt.Errorf("key prefix %q: not one dqbench makes", prefix)
	}
	r, err := OpenRedis(ctx, url, "")
	if err != nil {
		return err
	}
	r.prefix = prefix
	return r.CloseBy(ctx)
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
	if err := catalog.ParseRedis(url); err != nil {
		return nil, fmt.Errorf("redis URL %s: %w", catalog.MaskURL(url), err)
	}
	clean, files, err := redisTLSFiles(url)
	if err != nil {
		return nil, fmt.Errorf("redis URL %s: %v", catalog.MaskURL(url), err)
	}
	opt, err := redis.ParseURL(clean)
	if err != nil {
		// Its error may quote the URL, password and all.
		return nil, fmt.Errorf("redis URL %s: %s", catalog.MaskURL(url), catalog.MaskURLs(err.Error()))
	}
	if err := files.apply(opt.TLSConfig); err != nil {
		return nil, fmt.Errorf("redis URL %s: %v", catalog.MaskURL(url), err)
	}
	opt.DialTimeout = pingTimeout
	// No retry: a SET NX that timed out may have been applied, and its
	// retry would then read as a duplicate, skipping an effect: a loss
	// of dqbench's own. A failed call is the store's failure, reported.
	opt.MaxRetries = -1
	// Every call ends with the run's deadline (by default go-redis waits
	// out its own read timeout instead); go-redis does not watch a
	// cancellation (Ctrl-C) during a read, so a read gives up after
	// redisIOTimeout, far longer than any of dqbench's calls takes.
	opt.ContextTimeoutEnabled = true
	opt.ReadTimeout, opt.WriteTimeout = redisIOTimeout, redisIOTimeout
	conns := &liveConns{m: map[*liveConn]bool{}, tls: opt.TLSConfig}
	opt.Dialer = conns.dial
	// go-redis does not watch a cancellation during a read: when the run
	// ends (Ctrl-C, its deadline, another variant failed), every read in
	// flight is woken here instead.
	context.AfterFunc(ctx, conns.wake)
	c := redis.NewClient(opt)
	c.AddHook(stallHook{addr: opt.Addr})
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err() // the run ended (another variant failed): not this server's fault
		}
		if opt.TLSConfig == nil && tlsprobe.SpeaksTLS(ctx, opt.Addr) {
			return nil, &unusableError{msg: fmt.Sprintf("Redis at %s: the port speaks TLS only, and dqbench connected without (a redis:// URL); use rediss:// with the server's CA in the URL's tls_ca=FILE", opt.Addr)}
		}
		return nil, redisUnusable(opt.Addr, err)
	}
	r := &Redis{Client: c, prefix: prefix, addr: opt.Addr, url: url}
	if prefix != "" {
		leftover.Note(r.keys())
	}
	return r, nil
}

// keys is the ledger entry of the keys under the prefix.
func (r *Redis) keys() leftover.Entry {
	return leftover.Entry{Kind: leftover.Keys, Where: r.url, Name: r.prefix}
}

// stallHook names the server when the run's context ended a call: the
// store is what stopped answering, not the broker.
type stallHook struct{ addr string }

func (stallHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		return h.stalled(ctx, start, next(ctx, cmd))
	}
}

func (h stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		return h.stalled(ctx, start, next(ctx, cmds))
	}
}

// stallAfter is how long a call must have waited, when the run ended, for
// its server to be called stopped: a call the end of the run only
// interrupted is not the store's fault.
const stallAfter = time.Second

func (h stallHook) stalled(ctx context.Context, start time.Time, err error) error {
	if err == nil || errors.Is(err, ErrStalled) {
		return err
	}
	var nerr net.Error
	timeout := errors.As(err, &nerr) && nerr.Timeout()
	waited := time.Since(start)
	ended := ctx.Err()
	if d, ok := ctx.Deadline(); ok && ended == nil && !time.Now().Before(d) {
		// The read's deadline is the context's: it may fire a moment
		// before the context's own timer does.
		ended = context.DeadlineExceeded
	}
	switch {
	case waited >= stallAfter && ended != nil:
		return fmt.Errorf("%w: %w: Redis at %s did not answer for %s (%v)", ErrStalled, ended, h.addr, waited.Round(100*time.Millisecond), err)
	case waited >= stallAfter && timeout:
		return fmt.Errorf("%w: Redis at %s did not answer for %s (%v)", ErrStalled, h.addr, waited.Round(100*time.Millisecond), err)
	case ended != nil:
		return fmt.Errorf("%w (%v)", ended, err)
	}
	return err
}

// Key is the Redis key of a message id.
func (r *Redis) Key(id string) string { return r.prefix + id }

// Close deletes the keys under the prefix and closes the client, giving
// the delete closeTimeout; a failed delete wraps ErrCleanup.
func (r *Redis) Close() error {
	return r.CloseBy(context.Background())
}

// CloseBy is Close with the delete bounded by ctx (the run's hard
// deadline, Ctrl-C): a failed delete wraps ErrCleanup and says how to
// remove what was left.
func (r *Redis) CloseBy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
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
		derr = fmt.Errorf("%w: keys %s* were left on Redis at %s (%v); remove them with: redis-cli -h %s -p %s --scan --pattern '%s*' | xargs -r redis-cli -h %s -p %s del (or dqbench clean)",
			ErrCleanup, r.prefix, r.addr, derr, r.host(), r.port(), r.prefix, r.host(), r.port())
	} else if r.prefix != "" {
		leftover.Forget(r.keys())
	}
	return errors.Join(derr, r.Client.Close())
}

// tlsFiles are the PEM files a rediss:// URL names in its query (tls_ca,
// tls_cert, tls_key), which go-redis does not take.
type tlsFiles struct{ ca, cert, key string }

// redisTLSFiles takes dqbench's TLS parameters out of a Redis URL: the URL
// for go-redis, and the files. They need rediss://.
func redisTLSFiles(url string) (string, tlsFiles, error) {
	var f tlsFiles
	if !strings.Contains(url, "tls_") {
		return url, f, nil
	}
	u, err := neturl.Parse(url)
	if err != nil {
		return url, f, nil // go-redis says what is wrong with it
	}
	q := u.Query()
	f = tlsFiles{q.Get("tls_ca"), q.Get("tls_cert"), q.Get("tls_key")}
	if f == (tlsFiles{}) {
		return url, f, nil
	}
	if u.Scheme != "rediss" {
		return "", f, errors.New("tls_ca, tls_cert and tls_key are for TLS: write rediss://")
	}
	if (f.cert == "") != (f.key == "") {
		return "", f, errors.New("a client certificate needs both tls_cert and tls_key")
	}
	for _, k := range []string{"tls_ca", "tls_cert", "tls_key"} {
		q.Del(k)
	}
	u.RawQuery = q.Encode()
	return u.String(), f, nil
}

// apply puts the files into cfg (nil: not TLS).
func (f tlsFiles) apply(cfg *tls.Config) error {
	if cfg == nil {
		return nil
	}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return fmt.Errorf("tls_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls_ca %s: no PEM certificate in it", f.ca)
		}
		cfg.RootCAs = pool
	}
	if f.cert != "" {
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return fmt.Errorf("tls_cert %s and tls_key %s: %w", f.cert, f.key, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return nil
}

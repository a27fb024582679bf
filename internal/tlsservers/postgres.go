package tlsservers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/dqbench/dqbench/internal/testcerts"
)

// PostgresUser and PostgresPassword are the login of a PostgreSQL
// started here (a superuser, by password only, over TLS only).
const (
	PostgresUser     = "dq"
	PostgresPassword = "Pw-pg-5e0a"
)

// Postgres is a running PostgreSQL with ssl = on whose pg_hba.conf lets
// TCP clients in over TLS only (hostssl, scram-sha-256).
type Postgres struct {
	Certs *testcerts.Set
	// URL is postgres:// to its database postgres, with no user,
	// password or sslmode.
	URL   string
	Close func()
}

// PostgresInstalled says where initdb and postgres are ("" when not).
func PostgresInstalled() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// StartPostgres starts one from the installed server (initdb, postgres),
// run as the postgres user when this process is root.
func StartPostgres(ctx context.Context) (*Postgres, error) {
	bin := PostgresInstalled()
	if bin == "" {
		return nil, fmt.Errorf("PostgreSQL's initdb is not installed")
	}
	dir, err := os.MkdirTemp("", "dqbench-tls-postgres-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Postgres, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	certDir := filepath.Join(dir, "certs")
	if err := os.Mkdir(certDir, 0o755); err != nil {
		return fail(err)
	}
	certs, err := testcerts.Write(certDir, "dqbench-postgres-test-ca")
	if err != nil {
		return fail(err)
	}
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte(PostgresPassword+"\n"), 0o644); err != nil {
		return fail(err)
	}
	var run func(name string, args ...string) *exec.Cmd
	run = exec.Command
	if os.Getuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			return fail(fmt.Errorf("run PostgreSQL as root: no postgres user: %w", err))
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		for _, p := range []string{dir, certs.Key, pwFile} {
			if err := os.Chown(p, uid, gid); err != nil {
				return fail(err)
			}
		}
		run = func(name string, args ...string) *exec.Cmd {
			c := exec.Command(name, args...)
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
			return c
		}
	}
	// The server checks that its key is not readable by others.
	if err := os.Chmod(certs.Key, 0o600); err != nil {
		return fail(err)
	}
	data := filepath.Join(dir, "data")
	initdb := run(filepath.Join(bin, "initdb"), "-D", data, "-U", PostgresUser, "--pwfile", pwFile, "--auth-local", "trust", "--auth-host", "scram-sha-256", "-E", "UTF8", "--no-sync")
	initdb.Env = append(os.Environ(), "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %v: %s", err, out))
	}
	hba := "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\nhostnossl all all 127.0.0.1/32 reject\n"
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return fail(err)
	}
	if os.Getuid() == 0 {
		pg, _ := user.Lookup("postgres")
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		_ = os.Chown(filepath.Join(data, "pg_hba.conf"), uid, gid)
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	srv := run(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir,
		"-c", "ssl=on", "-c", "ssl_cert_file="+certs.Cert, "-c", "ssl_key_file="+certs.Key, "-c", "ssl_ca_file="+certs.CA,
		"-c", "fsync=off", "-c", "max_connections=100")
	log, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return fail(err)
	}
	srv.Stdout, srv.Stderr = log, log
	attr := srv.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Setpgid, attr.Pdeathsig = true, syscall.SIGKILL
	srv.SysProcAttr = attr
	if err := srv.Start(); err != nil {
		log.Close()
		return fail(err)
	}
	exited := make(chan struct{})
	go func() { _ = srv.Wait(); log.Close(); close(exited) }()
	stop := func() {
		_ = syscall.Kill(-srv.Process.Pid, syscall.SIGQUIT)
		<-exited
		os.RemoveAll(dir)
	}
	err = waitPort(ctx, port, exited)
	for err == nil { // listening is not ready: wait for pg_isready
		if exec.CommandContext(ctx, filepath.Join(bin, "pg_isready"), "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(port)).Run() == nil {
			break
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-exited:
			err = fmt.Errorf("exited at start")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		out, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
		stop()
		return nil, fmt.Errorf("postgres: %v: %s", err, out)
	}
	return &Postgres{Certs: certs, URL: fmt.Sprintf("postgres://127.0.0.1:%d/postgres", port), Close: stop}, nil
}

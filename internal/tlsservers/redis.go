package tlsservers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/dqbench/dqbench/internal/testcerts"
)

// RedisPassword is the default user's password of a Redis started here.
const RedisPassword = "Pw-rd-2c4f"

// Redis is a running redis-server with a TLS port that requires client
// certificates and a plain port, both asking for RedisPassword.
type Redis struct {
	Certs *testcerts.Set
	// TLSURL is rediss:// to the TLS port, PlainURL redis:// to the plain
	// one, TLSAsPlain redis:// to the TLS one; none has a password.
	TLSURL, PlainURL, TLSAsPlain string
	Close                        func()
}

// RedisInstalled says whether redis-server is on PATH.
func RedisInstalled() bool {
	_, err := exec.LookPath("redis-server")
	return err == nil
}

// StartRedis starts the installed redis-server in dir, without
// persistence.
func StartRedis(ctx context.Context, dir string) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	certs, err := testcerts.Write(dir, "dqbench-redis-test-ca")
	if err != nil {
		return nil, err
	}
	tlsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	plainPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(plainPort),
		"--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", certs.Cert, "--tls-key-file", certs.Key,
		"--tls-ca-cert-file", certs.CA, "--tls-auth-clients", "yes",
		"--requirepass", RedisPassword, "--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	for _, port := range []int{tlsPort, plainPort} {
		if err := waitPort(ctx, port, exited); err != nil {
			stop()
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			return nil, fmt.Errorf("redis-server: %v: %s", err, log)
		}
	}
	return &Redis{
		Certs:      certs,
		TLSURL:     fmt.Sprintf("rediss://127.0.0.1:%d/0", tlsPort),
		PlainURL:   fmt.Sprintf("redis://127.0.0.1:%d/0", plainPort),
		TLSAsPlain: fmt.Sprintf("redis://127.0.0.1:%d/0", tlsPort),
		Close:      stop,
	}, nil
}

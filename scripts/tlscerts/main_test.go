package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/dqbench/dqbench/brokers/kafka/cluster"
	"github.com/dqbench/dqbench/internal/testenv"
)

// TestKafkaProperties: the kafka.properties and keystore tlscerts writes
// for docker-compose.yml's kafka-tls start a real Apache Kafka (the
// cached jars, its paths moved from /tls to the test's directory), whose
// SASL_SSL listener takes the client certificate and the user dq's
// SCRAM-SHA-512 login, and refuses a wrong password.
func TestKafkaProperties(t *testing.T) {
	testenv.SkipShort(t, "Apache Kafka")
	in, err := cluster.FindInstall()
	if err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	dir := t.TempDir()
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(dir, "kafka.properties"))
	if err != nil {
		t.Fatal(err)
	}
	// The ports of the container, moved to free ones here.
	pp, sp, cp := freePort(t), freePort(t), freePort(t)
	local := string(conf)
	for _, r := range [][2]string{
		{"/tls/", dir + "/"},
		{"log.dirs=/tmp/kraft-combined-logs", "log.dirs=" + filepath.Join(dir, "data")},
		{"controller.quorum.voters=1@localhost:9093", "controller.quorum.voters=1@127.0.0.1:" + cp},
		{"listeners=PLAINTEXT://:19092,SASL_SSL://:9094,CONTROLLER://:9093", "listeners=PLAINTEXT://127.0.0.1:" + pp + ",SASL_SSL://127.0.0.1:" + sp + ",CONTROLLER://127.0.0.1:" + cp},
		{"advertised.listeners=PLAINTEXT://localhost:19092,SASL_SSL://127.0.0.1:9094", "advertised.listeners=PLAINTEXT://127.0.0.1:" + pp + ",SASL_SSL://127.0.0.1:" + sp},
	} {
		if !strings.Contains(local, r[0]) {
			t.Fatalf("kafka.properties has no %q (the test moves it)", r[0])
		}
		local = strings.ReplaceAll(local, r[0], r[1])
	}
	props := filepath.Join(dir, "local.properties")
	if err := os.WriteFile(props, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	pw, _ := os.ReadFile(filepath.Join(dir, "password"))
	password := strings.TrimSpace(string(pw))
	java := func(ctx context.Context, class string, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, in.Java, append([]string{"-Xmx512m", "-cp", filepath.Join(in.Libs, "*"), class}, args...)...)
	}
	if out, err := java(t.Context(), "kafka.tools.StorageTool", "format", "-t", "dqbench-compose-tls-test", "-c", props,
		"--add-scram", "SCRAM-SHA-512=[name=dq,password="+password+"]").CombinedOutput(); err != nil {
		t.Fatalf("format: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	kafka := java(ctx, "kafka.Kafka", props)
	kafka.Stdout, kafka.Stderr = nil, nil
	if err := kafka.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); kafka.Wait() }()

	addr := "127.0.0.1:" + sp
	login := func(password string) error {
		pool := x509.NewCertPool()
		ca, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
		pool.AppendCertsFromPEM(ca)
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "dqbench-client.pem"), filepath.Join(dir, "dqbench-client-key.pem"))
		if err != nil {
			return err
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
			kgo.DialTLSConfig(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}),
			kgo.SASL(scram.Auth{User: "dq", Pass: password}.AsSha512Mechanism()))
		if err != nil {
			return err
		}
		defer cl.Close()
		pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer pcancel()
		return cl.Ping(pctx)
	}
	deadline := time.Now().Add(90 * time.Second)
	for err := login(password); err != nil; err = login(password) {
		if time.Now().After(deadline) {
			t.Fatalf("no SASL_SSL login to the kafka-tls configuration at %s in 90 s: %v", addr, err)
		}
		time.Sleep(time.Second)
	}
	if err := login("wrong"); err == nil {
		t.Error("a wrong password logged in")
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

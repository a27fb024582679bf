package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/rogpeppe/go-internal/testscript"

	kafkacluster "github.com/dqbench/dqbench/brokers/kafka/cluster"
	"github.com/dqbench/dqbench/internal/testcerts"
	"github.com/dqbench/dqbench/internal/tlsservers"
)

// tlsnats: start two real nats-servers (the library, in this process)
// with JetStream for the rest of the script: a plain one ($NATS_PLAIN)
// and one that speaks only TLS, verifies client certificates and has an
// nkey user and the user dq with the password in $WORK/password
// ($NATS_TLS). The certificates are made here, in $WORK/certs (ca.pem,
// dqbench-client.pem, dqbench-client-key.pem), with a second CA the
// server does not use in $WORK/other; the nkey user's seed is in
// $WORK/seed.
func cmdTLSNATS(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: tlsnats")
	}
	dir := func(name string) string {
		d := ts.MkAbs(name)
		ts.Check(os.MkdirAll(d, 0o755))
		return d
	}
	certs, err := testcerts.Write(dir("certs"), "dqbench-script-ca")
	ts.Check(err)
	_, err = testcerts.Write(dir("other"), "another-ca")
	ts.Check(err)
	kp, err := nkeys.CreateUser()
	ts.Check(err)
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	ts.Check(os.WriteFile(ts.MkAbs("seed"), seed, 0o600))
	ts.Check(os.WriteFile(ts.MkAbs("password"), []byte("Pw-4e7b-right\n"), 0o600))
	tlsCfg, err := certs.ServerConfig(true)
	ts.Check(err)
	start := func(env string, opts server.Options) {
		opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
		opts.JetStream, opts.StoreDir = true, dir(filepath.Join("js", env))
		opts.NoLog, opts.NoSigs = true, true
		srv, err := server.NewServer(&opts)
		ts.Check(err)
		go srv.Start()
		ts.Defer(func() { srv.Shutdown(); srv.WaitForShutdown() })
		if !srv.ReadyForConnections(10 * time.Second) {
			ts.Fatalf("nats-server %s did not start", env)
		}
		ts.Setenv(env, srv.ClientURL())
	}
	start("NATS_PLAIN", server.Options{})
	start("NATS_TLS", server.Options{
		TLS: true, TLSVerify: true, TLSConfig: tlsCfg,
		Nkeys: []*server.NkeyUser{{Nkey: pub}},
		Users: []*server.User{{Username: "dq", Password: "Pw-4e7b-right"}},
	})
}

// tlsrabbitmq: start a real one-node RabbitMQ (from the installed
// rabbitmq-server) for the rest of the script, with a TLS listener that
// requires client certificates ($RABBIT_TLS, amqps://; $RABBIT_TLS_AS_AMQP
// is amqp:// to it) besides its plain one ($RABBIT_PLAIN), and the user
// dq instead of guest, its password in $WORK/rabbit-password. The
// certificates are in $RABBIT_CERTS (ca.pem, dqbench-client.pem,
// dqbench-client-key.pem).
func cmdTLSRabbitMQ(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: tlsrabbitmq")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := tlsservers.StartRabbitMQ(ctx)
	ts.Check(err)
	ts.Defer(func() { _ = r.Cluster.Stop() })
	ts.Check(os.WriteFile(ts.MkAbs("rabbit-password"), []byte(tlsservers.RabbitMQPassword+"\n"), 0o600))
	ts.Setenv("RABBIT_PLAIN", r.PlainURL)
	ts.Setenv("RABBIT_TLS", r.TLSURL)
	ts.Setenv("RABBIT_TLS_AS_AMQP", r.TLSAsAMQP)
	ts.Setenv("RABBIT_CERTS", r.Certs.Dir)
}

// tlsmosquitto: start the installed mosquitto for the rest of the script
// with a TLS listener that requires client certificates ($MQTT_TLS,
// ssl://; $MQTT_TLS_AS_TCP is tcp:// to it) besides a plain one
// ($MQTT_PLAIN), no anonymous clients, and a password file with the user
// dq, whose password is in $WORK/mqtt-password. The certificates are in
// $WORK/mqtt-certs (ca.pem, dqbench-client.pem, dqbench-client-key.pem).
func cmdTLSMosquitto(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: tlsmosquitto")
	}
	dir := ts.MkAbs("mqtt-certs")
	ts.Check(os.MkdirAll(dir, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := tlsservers.StartMosquitto(ctx, dir)
	ts.Check(err)
	ts.Defer(m.Close)
	ts.Check(os.WriteFile(ts.MkAbs("mqtt-password"), []byte(tlsservers.MQTTPassword+"\n"), 0o600))
	ts.Setenv("MQTT_PLAIN", m.PlainURL)
	ts.Setenv("MQTT_TLS", m.TLSURL)
	ts.Setenv("MQTT_TLS_AS_TCP", m.TLSAsTCP)
}

// tlskafka: start a real one-node Apache Kafka (the cached jars) for the
// rest of the script with a SASL_SSL listener that requires client
// certificates ($KAFKA_SECURE) besides its PLAINTEXT one ($KAFKA_PLAIN),
// the SCRAM (SHA-256, SHA-512) and PLAIN user dq, whose password is in
// $WORK/kafka-password. The certificates are in $WORK/kafka-certs
// (ca.pem, dqbench-client.pem, dqbench-client-key.pem).
func cmdTLSKafka(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: tlskafka")
	}
	dir := ts.MkAbs("kafka-certs")
	ts.Check(os.MkdirAll(dir, 0o755))
	certs, err := testcerts.Write(dir, "dqbench-kafka-script-ca")
	ts.Check(err)
	const password = "Pw-kf-script-7"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := kafkacluster.Start(ctx, kafkacluster.Options{Dir: ts.MkAbs("kafka"), Nodes: 1, Owned: true, Secure: &kafkacluster.SecureListener{
		CA: certs.CA, Cert: certs.Cert, Key: certs.Key, RequireClientCert: true,
		Users: map[string]string{"dq": password},
	}})
	ts.Check(err)
	ts.Defer(func() { _ = c.Stop() })
	ts.Check(os.WriteFile(ts.MkAbs("kafka-password"), []byte(password+"\n"), 0o600))
	ts.Setenv("KAFKA_PLAIN", c.Nodes[0].Addr())
	ts.Setenv("KAFKA_SECURE", c.Nodes[0].SecureAddr())
}

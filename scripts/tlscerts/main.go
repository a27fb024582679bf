// Command tlscerts writes what docker-compose.yml's tls profile needs into
// a directory (compose/tls by default, which git ignores): a CA, a server
// certificate for 127.0.0.1 and localhost, a client certificate, a random
// password for the user dq, and the brokers' configuration files that
// name them. Run it once, then start the profile:
//
//	go run ./scripts/tlscerts
//	docker compose --profile tls up -d nats-tls rabbitmq-tls mosquitto-tls kafka-tls
//
// The keys are readable by everyone (the containers run as their own
// users): a testbench's, never a production certificate.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dqbench/dqbench/internal/testcerts"
)

func main() {
	dir := filepath.Join("compose", "tls")
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(dir); err != nil {
		fmt.Fprintln(os.Stderr, "tlscerts:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A year: the profile is started again on later days.
	certs, err := testcerts.WriteFor(dir, "dqbench-compose-ca", 365*24*time.Hour)
	if err != nil {
		return err
	}
	// Kafka's PEM keystore: the key (PKCS#8, unencrypted) and the
	// certificate in one file.
	var bundle []byte
	for _, f := range []string{certs.Key, certs.Cert} {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		bundle = append(bundle, b...)
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	pw := hex.EncodeToString(b)
	// Inside the containers the directory is /tls.
	in := func(p string) string { return "/tls/" + filepath.Base(p) }
	files := map[string]string{
		"password": pw + "\n",
		"nats.conf": fmt.Sprintf(`# nats-tls: TLS only, client certificates verified, the user dq
port: 4222
jetstream { store_dir: /data }
tls { cert_file: %q, key_file: %q, ca_file: %q, verify: true }
authorization { user: dq, password: %q }
`, in(certs.Cert), in(certs.Key), in(certs.CA), pw),
		"rabbitmq.conf": fmt.Sprintf(`# rabbitmq-tls: amqps on 5671 (client certificates verified), the user dq
listeners.ssl.default = 5671
ssl_options.cacertfile = %s
ssl_options.certfile = %s
ssl_options.keyfile = %s
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = true
default_user = dq
default_pass = %s
loopback_users = none
`, in(certs.CA), in(certs.Cert), in(certs.Key), pw),
		"kafka-keystore.pem": string(bundle),
		"kafka.properties": fmt.Sprintf(`# kafka-tls: one KRaft node; clients on SASL_SSL 9094 (client certificates
# required, SCRAM logins: the user dq, added when the storage is formatted);
# PLAINTEXT 19092 only inside the container, between broker and itself
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:19092,SASL_SSL://:9094,CONTROLLER://:9093
advertised.listeners=PLAINTEXT://localhost:19092,SASL_SSL://127.0.0.1:9094
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.ssl.keystore.type=PEM
listener.name.sasl_ssl.ssl.keystore.location=%s
listener.name.sasl_ssl.ssl.truststore.type=PEM
listener.name.sasl_ssl.ssl.truststore.location=%s
listener.name.sasl_ssl.ssl.client.auth=required
log.dirs=/tmp/kraft-combined-logs
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
`, "/tls/kafka-keystore.pem", in(certs.CA)),
		"mosquitto.conf": fmt.Sprintf(`# mosquitto-tls: ssl on 8883 (client certificates required), the password file the
# container writes from /tls/password at start
listener 8883
cafile %s
certfile %s
keyfile %s
require_certificate true
allow_anonymous false
password_file /mosquitto/data/passwd
persistence true
persistence_location /mosquitto/data/
`, in(certs.CA), in(certs.Cert), in(certs.Key)),
	}
	for name, text := range files {
		mode := os.FileMode(0o644)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), mode); err != nil {
			return err
		}
	}
	abs, _ := filepath.Abs(dir)
	fmt.Printf(`wrote %s: ca.pem, server.pem, dqbench-client.pem (and keys), password, nats.conf, rabbitmq.conf, mosquitto.conf, kafka.properties, kafka-keystore.pem
then:
  docker compose --profile tls up -d nats-tls rabbitmq-tls mosquitto-tls kafka-tls
  export DQBENCH_TLS_CA=%[2]s/ca.pem DQBENCH_TLS_CERT=%[2]s/dqbench-client.pem DQBENCH_TLS_KEY=%[2]s/dqbench-client-key.pem
  export DQBENCH_USER=dq DQBENCH_PASSWORD_FILE=%[2]s/password
  dqbench run nats-max-deliver --addresses tls://127.0.0.1:4443
  dqbench run rabbitmq-connection-reset --addresses amqps://127.0.0.1:5671/
  dqbench run mqtt-effective-qos --addresses ssl://127.0.0.1:8883
  dqbench run quickstart --broker-mode external --addresses 127.0.0.1:9094
`, dir, abs)
	return nil
}

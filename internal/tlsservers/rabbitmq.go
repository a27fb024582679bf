// Package tlsservers starts the real servers the TLS tests run against,
// each with certificates made for it (package testcerts) and a login: a
// RabbitMQ node with a TLS listener. Test support only.
package tlsservers

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/dqbench/dqbench/brokers/rabbitmq/cluster"
	"github.com/dqbench/dqbench/internal/testcerts"
)

// RabbitMQUser and RabbitMQPassword are the login of a RabbitMQ node
// started here (the node has no guest user).
const (
	RabbitMQUser     = "dq"
	RabbitMQPassword = "Pw-r4bb1t-7e2"
)

// RabbitMQ is a running one-node RabbitMQ with a TLS listener, which asks
// for and verifies client certificates, besides its plain one.
type RabbitMQ struct {
	Cluster *cluster.Cluster
	Certs   *testcerts.Set
	// PlainURL is amqp:// to the plain listener, TLSURL amqps:// to the
	// TLS one; TLSAsAMQP is amqp:// to the TLS one. None has a user.
	PlainURL, TLSURL, TLSAsAMQP string
}

// StartRabbitMQ starts one from the installed rabbitmq-server
// (cluster.Installed says whether there is one). The node runs as the
// rabbitmq user: its directory, with the certificates in it, becomes that
// user's. Stop it with r.Cluster.Stop().
func StartRabbitMQ(ctx context.Context) (*RabbitMQ, error) {
	dir, err := os.MkdirTemp("", "dqbench-tls-rabbitmq-")
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "certs")
	if err := os.Mkdir(certDir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	certs, err := testcerts.Write(certDir, "dqbench-rabbitmq-test-ca")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	config := fmt.Sprintf(`listeners.ssl.default = %d
ssl_options.cacertfile = %s
ssl_options.certfile = %s
ssl_options.keyfile = %s
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = true
default_user = %s
default_pass = %s
loopback_users = none
`, port, certs.CA, certs.Cert, certs.Key, RabbitMQUser, RabbitMQPassword)
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Size: 1, Config: config})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start a RabbitMQ with a TLS listener: %w", err)
	}
	return &RabbitMQ{
		Cluster:   c,
		Certs:     certs,
		PlainURL:  fmt.Sprintf("amqp://127.0.0.1:%d/", c.Nodes[0].AMQPPort),
		TLSURL:    fmt.Sprintf("amqps://127.0.0.1:%d/", port),
		TLSAsAMQP: fmt.Sprintf("amqp://127.0.0.1:%d/", port),
	}, nil
}

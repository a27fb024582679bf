// Package testenv decides what a test does when a service it needs (a
// broker, PostgreSQL, Redis) does not answer: skip, saying so, or, where
// the services are promised (DQBENCH_REQUIRE_BROKERS=1, as .ci/run sets
// after scripts/services), fail.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// RequireEnv names the environment variable that turns a missing service
// into a failure.
const RequireEnv = "DQBENCH_REQUIRE_BROKERS"

// Required reports whether every service must answer.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Unavailable ends t because a service it needs does not answer: a skip,
// or a failure when Required.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (%s=1: the services must answer; start them with make services)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// SkipShort skips t under go test -short, the fast tier that needs no
// service and starts no broker program (RabbitMQ, Mosquitto, Apache
// Kafka, nats-server, a cluster of them): what names the one t needs.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: starts %s", what)
	}
}

package all

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// TestUnreachableHidesThePassword: an external broker that does not answer
// (nothing listens on its port) is an error naming the address with its
// password masked, whatever the password holds, malformed or valid: no
// piece of it is in the error.
func TestUnreachableHidesThePassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	urls := map[catalog.BrokerKind]func(pw string) string{
		catalog.RabbitMQ: func(pw string) string { return "amqp://u:" + pw + "@" + addr + "/" },
		catalog.MQTT:     func(pw string) string { return "tcp://u:" + pw + "@" + addr },
		catalog.NATS:     func(pw string) string { return "nats://u:" + pw + "@" + addr },
	}
	for kind, url := range urls {
		for _, pw := range []string{"PW1x%2FPW2y%20%23%25%40", "PW1x@PW2y", "PW1x/PW2y", "PW1x PW2y", "PW1x#PW2y", "PW1x%PW2y"} {
			b, _ := catalog.LookupBroker(kind)
			settings := b.NewSettings()
			if d, ok := settings.(interface{ Defaults() }); ok {
				d.Defaults()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			br, err := Open(ctx, brokers.Config{Kind: kind, Mode: catalog.External, Addresses: []string{url(pw)}, Settings: settings})
			cancel()
			if err == nil {
				br.Close()
				t.Errorf("%s %s: opened a broker where nothing listens", kind, pw)
				continue
			}
			if strings.Contains(err.Error(), "PW1x") || strings.Contains(err.Error(), "PW2y") {
				t.Errorf("%s, password %q: the error holds it: %v", kind, pw, err)
			}
		}
	}
}

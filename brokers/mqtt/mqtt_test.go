package mqtt_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/brokers/mqtt"
	"github.com/dqbench/dqbench/catalog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openMQTT(t *testing.T, cfg brokers.Config) brokers.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := mqtt.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("mqtt.Open(%+v): %v", cfg, err)
	}
	return b
}

func settings(qos, sub int, client catalog.MQTTClient) *catalog.MQTTSettings {
	s := &catalog.MQTTSettings{QoS: &qos, SubscriptionQoS: &sub, Client: client}
	s.Defaults()
	return s
}

func TestEmbedded(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *catalog.MQTTSettings
	}{
		{"qos1", settings(1, 1, catalog.Paho)},
		{"qos2", settings(2, 2, catalog.Paho)},
		{"paho.golang-qos1", settings(1, 1, catalog.PahoGolang)},
		{"paho.golang-qos2", settings(2, 2, catalog.PahoGolang)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brokertest.Run(t, func(t *testing.T) brokers.Broker {
				return openMQTT(t, brokers.Config{Kind: catalog.MQTT, Mode: catalog.Embedded, Settings: tc.s})
			})
		})
	}
}

// TestManaged runs the contract on managed Mosquittos (one per
// destination), skipped when mosquitto is not installed unless
// DQBENCH_REQUIRE_BROKERS=1.
func TestManaged(t *testing.T) {
	if _, err := exec.LookPath("mosquitto"); err != nil {
		if _, serr := os.Stat("/usr/sbin/mosquitto"); serr != nil {
			if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
				t.Fatal("mode managed needs the mosquitto binary, which is not installed")
			}
			t.Skip("mode managed needs the mosquitto binary, which is not installed (apt-get install mosquitto)")
		}
	}
	brokertest.Run(t, func(t *testing.T) brokers.Broker {
		return openMQTT(t, brokers.Config{Kind: catalog.MQTT, Mode: catalog.Managed, Settings: settings(1, 1, catalog.Paho)})
	})
}

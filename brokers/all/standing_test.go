package all

import (
	"testing"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/rabbitmq/cluster"
	"github.com/dqbench/dqbench/catalog"
)

// TestStandingFollowsCatalog: every kind with a managed mode has a
// standing broker, and only those.
func TestStandingFollowsCatalog(t *testing.T) {
	managed := map[catalog.BrokerKind]bool{}
	for _, k := range ManagedKinds() {
		managed[k] = true
		s, ok := Standing[k]
		if !ok {
			t.Errorf("kind %s has mode managed but no entry in Standing", k)
			continue
		}
		if s.Name == "" || s.Noun == "" || s.Doc == "" || s.Starting == "" || s.Use == nil || s.Up == nil || s.Down == nil || s.Status == nil {
			t.Errorf("Standing[%s] lacks a field: %+v", k, s)
		}
	}
	for k := range Standing {
		if !managed[k] {
			t.Errorf("Standing has kind %s, which has no mode managed in the catalog", k)
		}
	}
	for _, name := range []string{"kafka", "rabbitmq", "mqtt", "mosquitto", "nats"} {
		if _, _, ok := LookupStanding(name); !ok {
			t.Errorf("LookupStanding(%q) not found", name)
		}
	}
	if _, _, ok := LookupStanding("redis"); ok {
		t.Error(`LookupStanding("redis") found, want not (no such kind)`)
	}
}

// TestStandingDirs: RabbitMQ's cluster keeps its state where
// brokers.StandingDir says.
func TestStandingDirs(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/7")
	if got, want := cluster.StateDir(), brokers.StandingDir(string(catalog.RabbitMQ)); got != want {
		t.Errorf("cluster.StateDir() = %s, brokers.StandingDir = %s", got, want)
	}
}

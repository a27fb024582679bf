package recording_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestCheckerLinksNoBroker: the parser and the pure checker link no broker
// client, no database driver and not the brokers seam, so judging a saved
// run needs none of them (docs/extending.md).
func TestCheckerLinksNoBroker(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../scenario", "../check").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	exact := []string{"github.com/dqbench/dqbench/brokers", "github.com/dqbench/dqbench/recording"}
	drivers := []string{"franz-go", "kafka-go", "amqp091", "paho", "mochi-mqtt", "modernc.org/sqlite", "jackc/pgx", "go-redis", "toxiproxy"}
	for _, dep := range strings.Fields(string(out)) {
		if slices.Contains(exact, dep) || slices.ContainsFunc(drivers, func(d string) bool { return strings.Contains(dep, d) }) {
			t.Errorf("./scenario or ./check links %s", dep)
		}
	}
}

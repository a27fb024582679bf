package cmd

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/brokers/mqtt"
)

// TestBrokersCommand: the kinds "dqbench brokers" takes, and what status
// and down say when no managed broker runs (no server needed).
func TestBrokersCommand(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"brokers", "up", "redis"}, ExitUsage, "takes one broker kind (allowed: kafka, rabbitmq, mqtt, mosquitto, nats)"},
		{[]string{"brokers", "down"}, ExitUsage, "takes one broker kind (allowed: kafka, rabbitmq, mqtt, mosquitto, nats)"},
		{[]string{"brokers", "fetch", "rabbitmq"}, ExitUsage, "dqbench brokers fetch takes one broker kind (allowed: kafka)"},
		{[]string{"brokers", "status", "kafka"}, ExitIncomplete, `kafka: no managed cluster is running; start one with "dqbench brokers up kafka"`},
		{[]string{"brokers", "status", "rabbitmq", "mqtt"}, ExitUsage, "takes one broker kind"},
		{[]string{"brokers", "status", "rabbitmq"}, ExitIncomplete, `rabbitmq: no managed cluster is running; start one with "dqbench brokers up rabbitmq"`},
		{[]string{"brokers", "down", "rabbitmq"}, ExitPass, "rabbitmq: no managed cluster is running"},
		{[]string{"brokers", "status", "mosquitto"}, ExitIncomplete, `mosquitto: no managed broker is running; start one with "dqbench brokers up mosquitto"`},
		{[]string{"brokers", "status", "mqtt"}, ExitIncomplete, `mqtt: no managed broker is running; start one with "dqbench brokers up mqtt"`},
		{[]string{"brokers", "down", "mosquitto"}, ExitPass, "mosquitto: no managed broker is running"},
		{[]string{"brokers", "stop", "rabbitmq"}, ExitUsage, `unknown command "stop" for "dqbench brokers" (did you mean "down"?)`},
		{[]string{"brokers", "statu", "rabbitmq"}, ExitUsage, `(did you mean "status"?)`},
		{[]string{"brokers"}, ExitPass, "dqbench brokers up rabbitmq"},
		{[]string{"brokers", "--help"}, ExitPass, "dqbench brokers up mosquitto"},
		{[]string{"brokers", "up", "--help"}, ExitPass, "dqbench brokers up mosquitto"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, code := brokersRun(tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d; output: %s", code, tc.code, out)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("output %q does not contain %q", out, tc.out)
			}
		})
	}
}

func brokersRun(args ...string) (string, int) {
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return out.String() + errOut.String(), code
}

// TestBrokersMosquitto: up starts a Mosquitto and prints its URL, a
// second up finds it, status shows it running, down stops it and removes
// its directory. Needs the mosquitto binary.
func TestBrokersMosquitto(t *testing.T) {
	if err := mqtt.Installed(); err != nil {
		t.Skip(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Cleanup(func() { _, _ = mqtt.Standing.Down() })

	out, code := brokersRun("brokers", "up", "mosquitto")
	if code != ExitPass || !strings.Contains(out, "mosquitto: managed broker up in ") || !strings.Contains(out, "running  tcp://127.0.0.1:") ||
		!strings.Contains(out, `until "dqbench brokers down mosquitto"`) {
		t.Fatalf("up: exit %d\n%s", code, out)
	}
	st, err := mqtt.Standing.Status()
	if err != nil || st.Running() != 1 {
		t.Fatalf("after up: %+v, %v; want one node running", st, err)
	}
	url := st.Nodes[0].URL
	if !strings.Contains(out, "addresses: ["+url+"]") {
		t.Errorf("up does not say how to use %s:\n%s", url, out)
	}

	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"brokers", "up", "mqtt"}, ExitPass, "mqtt: the managed broker already runs (up since "},
		{[]string{"brokers", "status", "mosquitto"}, ExitPass, "mosquitto: managed broker in " + st.Dir + ", running\n"},
		{[]string{"brokers", "status", "mqtt"}, ExitPass, url},
		{[]string{"brokers", "down", "mosquitto"}, ExitPass, "mosquitto: stopped the managed broker and removed " + st.Dir},
		{[]string{"brokers", "status", "mosquitto"}, ExitIncomplete, "mosquitto: no managed broker is running"},
		{[]string{"brokers", "down", "mqtt"}, ExitPass, "mqtt: no managed broker is running"},
	} {
		out, code := brokersRun(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("%s: exit %d, want %d; output %q does not contain %q", strings.Join(tc.args, " "), code, tc.code, out, tc.out)
		}
	}
	if _, err := os.Stat(st.Dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after down (%v)", st.Dir, err)
	}
}

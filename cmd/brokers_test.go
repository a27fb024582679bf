package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestBrokersCommand: the kinds "dqbench brokers" takes, and what status
// and down say when no managed cluster runs (no rabbitmq-server needed).
func TestBrokersCommand(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"brokers", "up", "kafka"}, ExitUsage, "takes one broker kind (allowed: rabbitmq)"},
		{[]string{"brokers", "down"}, ExitUsage, "takes one broker kind (allowed: rabbitmq)"},
		{[]string{"brokers", "status", "rabbitmq"}, ExitIncomplete, `no managed cluster is running; start one with "dqbench brokers up rabbitmq"`},
		{[]string{"brokers", "down", "rabbitmq"}, ExitPass, "no managed cluster is running"},
		{[]string{"brokers", "stop", "rabbitmq"}, ExitUsage, `unknown command "stop" for "dqbench brokers" (did you mean "down"?)`},
		{[]string{"brokers", "statu", "rabbitmq"}, ExitUsage, `(did you mean "status"?)`},
		{[]string{"brokers"}, ExitPass, "dqbench brokers up rabbitmq"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Execute(context.Background(), tc.args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
			if code != tc.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.code, errOut.String())
			}
			if got := out.String() + errOut.String(); !strings.Contains(got, tc.out) {
				t.Errorf("output %q does not contain %q", got, tc.out)
			}
		})
	}
}

package cmd

import (
	"strings"
	"testing"

	"github.com/dqbench/dqbench/catalog"
)

func TestListFaults(t *testing.T) {
	all := run(t, nil, "list", "faults", "--wide")
	if all.code != 0 {
		t.Fatalf("list faults: exit %d\n%s", all.code, all.err)
	}
	for _, f := range catalog.Faults {
		if !strings.Contains(all.out, string(f.Type)+"  ") {
			t.Errorf("list faults does not list %s:\n%s", f.Type, all.out)
		}
	}
	one := run(t, nil, "list", "faults", "ack-lost", "--wide")
	for _, want := range []string{"ack-lost: an acknowledgement never arrives", "  packet: MQTT", "  rabbitmq managed: yes; not with consumer ack: auto (it drops the consumer's acknowledgement", "  mqtt managed: it is injected", "docs: docs/scenario.md#ack-lost"} {
		if !strings.Contains(one.out, want) {
			t.Errorf("list faults ack-lost lacks %q:\n%s", want, one.out)
		}
	}
	bad := run(t, nil, "list", "faults", "ack-lst")
	if bad.code != ExitUsage || !strings.Contains(bad.err, `did you mean "ack-lost"?`) {
		t.Errorf("unknown fault type: exit %d, %s", bad.code, bad.err)
	}
	done := run(t, nil, "__complete", "list", "faults", "part")
	if !strings.Contains(done.out, "partition\t") {
		t.Errorf("completion of fault types: %q", done.out)
	}
}

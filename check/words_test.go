package check_test

import (
	"strings"
	"testing"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
)

// TestCauseWordsFollowBroker: the why of an intent stored twice and of one
// delivered again after its ack, in the notes, Doc and Why, names the
// mechanism of the run's broker, not Kafka's producer idempotence or
// RabbitMQ's queues on every broker.
func TestCauseWordsFollowBroker(t *testing.T) {
	events := join(
		// 1: stored twice (two positions), both applied.
		published(1), one(delivered(1, 1), effect(1, true), delivered(1, 10), effect(1, true), ev(history.Ack, 1)),
		// 2: acked, then delivered again and applied again.
		published(2), one(delivered(2, 2), effect(2, true), ev(history.Ack, 2), delivered(2, 2), effect(2, true), ev(history.Ack, 2)),
	)
	audit := applied(map[int]int{1: 2, 2: 2})
	for _, tc := range []struct {
		broker      catalog.BrokerKind
		want, never []string
	}{
		{catalog.Kafka, []string{"producer idempotence", "new producer id", "offset commit"}, []string{"Nats-Msg-Id", "quorum queue"}},
		{catalog.NATS, []string{"duplicate window", "Nats-Msg-Id", "ack_wait"}, []string{"producer id", "idempotence", "quorum queue", "offset"}},
		{catalog.RabbitMQ, []string{"republish after a lost publisher confirm", "quorum queue"}, []string{"producer id", "idempotence", "Nats-Msg-Id"}},
		{catalog.MQTT, []string{"QoS 1 resend", "PUBACK"}, []string{"producer id", "idempotence", "Nats-Msg-Id", "quorum queue"}},
	} {
		plan := check.Plan{Broker: tc.broker, Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
		in, err := check.Inspect(plan, check.Meta{}, history.Events(events), map[string]history.Audit{"v": audit})
		if err != nil {
			t.Fatal(err)
		}
		if c := in.Intent("v", 1).Cause; c != check.DupStoredTwice {
			t.Fatalf("intent 1: %s, want %s", c, check.DupStoredTwice)
		}
		if c := in.Intent("v", 2).Cause; c != check.DupAckedAgain {
			t.Fatalf("intent 2: %s, want %s", c, check.DupAckedAgain)
		}
		text := strings.Join(append(in.Variants[0].Notes,
			check.DupStoredTwice.Doc(in.Broker), check.DupAckedAgain.Why(in.Broker)), "\n")
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the why does not say %q:\n%s", tc.broker, w, text)
			}
		}
		for _, w := range tc.never {
			if strings.Contains(text, w) {
				t.Errorf("%s: the why says %q, another broker's word:\n%s", tc.broker, w, text)
			}
		}
	}
}

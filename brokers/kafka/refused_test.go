package kafka

import (
	"errors"
	"fmt"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/dqbench/dqbench/brokers"
)

// Only errors that say the record was not written are refusals; a
// retriable error or an idempotent producer's sequence error leaves the
// outcome unknown.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("produce: %w", kerr.MessageTooLarge), true},
		{kerr.TopicAuthorizationFailed, true},
		{kerr.NotLeaderForPartition, false},
		{kerr.OutOfOrderSequenceNumber, false},
		{kerr.RequestTimedOut, false},
		{brokers.ErrUnconfirmed, false},
		{nil, false},
	} {
		if got := errors.Is(refused(tc.err), brokers.ErrRefused); got != tc.want {
			t.Errorf("refused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if !errors.Is(refusedKafkaGo(fmt.Errorf("write: %w", kafkago.MessageSizeTooLarge)), brokers.ErrRefused) {
		t.Error("kafka-go MessageSizeTooLarge is not a refusal")
	}
	if errors.Is(refusedKafkaGo(kafkago.NotLeaderForPartition), brokers.ErrRefused) {
		t.Error("kafka-go NotLeaderForPartition is a refusal")
	}
}

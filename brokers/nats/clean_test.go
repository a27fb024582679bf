package nats_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/brokers/nats"
)

// TestDeleteStreamOnlyDqbenchs: the sweep deletes only a stream named as
// dqbench names its own; another name in a ledger is refused before
// anything is dialed (nothing listens at port 1).
func TestDeleteStreamOnlyDqbenchs(t *testing.T) {
	err := nats.DeleteStream(context.Background(), "nats://127.0.0.1:1", "ORDERS")
	if err == nil || !strings.Contains(err.Error(), `stream "ORDERS": not one dqbench makes (dqbench-*), so it is left alone`) {
		t.Errorf("DeleteStream(ORDERS) = %v", err)
	}
}

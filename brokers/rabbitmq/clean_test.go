package rabbitmq_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/brokers/rabbitmq"
)

// TestDeleteQueueOnlyDqbenchs: the sweep deletes only a queue named as
// dqbench names its own; another name in a ledger is refused before
// anything is dialed (nothing listens at port 1).
func TestDeleteQueueOnlyDqbenchs(t *testing.T) {
	err := rabbitmq.DeleteQueue(context.Background(), "amqp://guest:guest@127.0.0.1:1/", "orders")
	if err == nil || !strings.Contains(err.Error(), `queue "orders": not one dqbench makes (dqbench-*), so it is left alone`) {
		t.Errorf("DeleteQueue(orders) = %v", err)
	}
}

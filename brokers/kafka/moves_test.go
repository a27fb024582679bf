package kafka

import (
	"slices"
	"testing"
)

// TestNextLeader: the in-sync replica after the leader, in the replicas'
// order, wrapping, leads next; the others keep their order; a partition
// without another in-sync replica stays.
func TestNextLeader(t *testing.T) {
	for _, tc := range []struct {
		leader        int32
		replicas, isr []int32
		want          []int32
	}{
		{1, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 1, 3}},
		{3, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{1, 2, 3}},
		{2, []int32{2, 3, 1}, []int32{2, 1}, []int32{1, 2, 3}},
		{1, []int32{1, 2, 3}, []int32{1}, nil},
		{1, []int32{1}, []int32{1}, nil},
	} {
		got, ok := nextLeader(tc.leader, tc.replicas, tc.isr)
		if !slices.Equal(got, tc.want) || ok != (tc.want != nil) {
			t.Errorf("leader %d of %v, in sync %v: %v %v, want %v", tc.leader, tc.replicas, tc.isr, got, ok, tc.want)
		}
	}
}

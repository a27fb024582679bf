package scenario

import (
	"testing"
	"time"
)

// TestUseMessagesScalesDeadline: more messages than the scenario's scale
// its deadline by as much, capped at MaxDeadline; fewer keep it.
func TestUseMessagesScalesDeadline(t *testing.T) {
	for _, tc := range []struct {
		messages, n int
		deadline    time.Duration
		want        time.Duration // the deadline after; set reports it unless kept
		kept        bool
	}{
		{300, 200_000, time.Minute, 40_000 * time.Second, false},
		{1000, 4000, 2 * time.Minute, 8 * time.Minute, false},
		{1000, 500, 2 * time.Minute, 2 * time.Minute, true},
		{1000, 1000, 2 * time.Minute, 2 * time.Minute, true},
		{10, 10_000_000, time.Hour, time.Duration(MaxDeadline), false},
	} {
		s := &Scenario{Messages: tc.messages, Deadline: Duration(tc.deadline)}
		set := s.UseMessages(tc.n)
		if s.Messages != tc.n || s.Deadline.D() != tc.want || (set == 0) != tc.kept || !tc.kept && set.D() != tc.want {
			t.Errorf("%d messages, deadline %s, --messages %d: messages %d, deadline %s, returned %s; want %d, %s (kept: %v)",
				tc.messages, tc.deadline, tc.n, s.Messages, s.Deadline, set, tc.n, tc.want, tc.kept)
		}
	}
}

package runner

import (
	"strings"
	"testing"
	"time"
)

// TestCutShortNamesTheFault: a run cut short by its deadline after a
// silence that began with a fault of its own (a partition outlasting the
// run) names the fault; a silence that began otherwise blames the broker.
func TestCutShortNamesTheFault(t *testing.T) {
	start := time.Now().Add(-10 * time.Second)
	for _, tc := range []struct {
		name    string
		faultAt time.Duration // 0: none injected
		want    string
	}{
		{"fault began the silence", time.Second, "since fault partition was injected (at 1s): the fault's doing"},
		{"no fault", 0, "the broker stopped answering"},
		{"a fault long before the silence", 200 * time.Millisecond, "the broker stopped answering"},
	} {
		var p Progress
		p.Total.Store(10)
		p.heard.Store(int64(time.Second))
		if tc.faultAt > 0 {
			p.lastFault.Store(&firedFault{name: "partition", at: tc.faultAt})
		}
		err := cutShort(ErrDeadline, 8*time.Second, start, &p, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
		}
	}
}

package scenario

import (
	"testing"
	"time"
)

func TestBackoffWait(t *testing.T) {
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name string
		b    *Backoff
		n    int
		u    float64
		want time.Duration
	}{
		{"none", nil, 1, 0.5, 0},
		{"fixed, first", &Backoff{Policy: FixedBackoff, Delay: ms(300)}, 1, 0, 300 * time.Millisecond},
		{"fixed, third", &Backoff{Policy: FixedBackoff, Delay: ms(300)}, 3, 0, 300 * time.Millisecond},
		{"exponential, default multiplier", &Backoff{Policy: ExponentialBackoff, Delay: ms(100)}, 3, 0, 400 * time.Millisecond},
		{"exponential, times 3", &Backoff{Policy: ExponentialBackoff, Delay: ms(400), Multiplier: 3}, 3, 0, 3600 * time.Millisecond},
		{"exponential, capped", &Backoff{Policy: ExponentialBackoff, Delay: ms(400), Multiplier: 3, Max: ms(500)}, 2, 0, 500 * time.Millisecond},
		{"exponential, huge", &Backoff{Policy: ExponentialBackoff, Delay: ms(1000), Multiplier: 10}, 100, 0, maxWait},
		{"jitter takes up to its fraction off", &Backoff{Policy: FixedBackoff, Delay: ms(1000), Jitter: 0.25}, 1, 1, 750 * time.Millisecond},
		{"jitter at u=0.5", &Backoff{Policy: FixedBackoff, Delay: ms(1000), Jitter: 0.5}, 1, 0.5, 750 * time.Millisecond},
		{"jitter after the cap", &Backoff{Policy: ExponentialBackoff, Delay: ms(400), Max: ms(500), Jitter: 0.2}, 5, 0.5, 450 * time.Millisecond},
	} {
		if got := tc.b.Wait(tc.n, tc.u); got != tc.want {
			t.Errorf("%s: Wait(%d, %v) = %v, want %v", tc.name, tc.n, tc.u, got, tc.want)
		}
	}
}

package amqp

import (
	"bytes"
	"slices"
	"sync/atomic"
	"testing"
)

// TestCutOnConfirm: the confirm of the chosen publish and everything
// after it are dropped; a reset cuts the connection there, a partition
// goes dark instead (and Dark drops the other direction from then on).
func TestCutOnConfirm(t *testing.T) {
	stream := captured(t, "producer-from-broker.bin")
	for _, reset := range []bool{true, false} {
		for _, chunk := range chunkings {
			var hit []int
			dark := new(atomic.Bool)
			f := CutOnConfirm(tagsFor(), func(intent, attempt int) bool { return intent == 115 && attempt == 1 },
				func(intent, _ int) { hit = append(hit, intent) }, reset, dark)()
			up := Dark(dark)()
			if out, _ := up.Filter([]byte("publish")); string(out) != "publish" {
				t.Errorf("reset %v: the other direction dropped data before the hit", reset)
			}
			out, cut := feed(f, stream, chunk)
			if cut != reset || dark.Load() == reset {
				t.Errorf("reset %v, reads of %d: cut %v, dark %v", reset, chunk, cut, dark.Load())
			}
			if !slices.Equal(hit, []int{115}) {
				t.Errorf("reset %v, reads of %d: hit %v, want [115]", reset, chunk, hit)
			}
			if got := confirmed(t, out); !slices.Equal(got, seq(1, 13)) {
				t.Errorf("reset %v, reads of %d: confirmed %v, want 1..13 (the ack with the multiple bit that covers the chosen one, 14..20, is dropped whole)", reset, chunk, got)
			}
			if !bytes.HasPrefix(stream, out) {
				t.Errorf("reset %v, reads of %d: what was forwarded is not the stream's start", reset, chunk)
			}
			if out, _ := up.Filter([]byte("publish")); !reset && len(out) != 0 {
				t.Errorf("partition: the other direction still passes %q", out)
			}
		}
	}
}

// TestWatchConfirms: the chosen confirm is seen once and nothing is
// dropped or cut.
func TestWatchConfirms(t *testing.T) {
	stream := captured(t, "producer-from-broker.bin")
	for _, chunk := range chunkings {
		var hit []int
		f := WatchConfirms(tagsFor(), func(intent, attempt int) bool { return intent == 115 && attempt == 1 },
			func(intent, _ int) { hit = append(hit, intent) })()
		out, cut := feed(f, stream, chunk)
		if cut || !bytes.Equal(out, stream) {
			t.Errorf("reads of %d: cut %v, forwarded %d of %d bytes", chunk, cut, len(out), len(stream))
		}
		if !slices.Equal(hit, []int{115}) {
			t.Errorf("reads of %d: hit %v, want [115]", chunk, hit)
		}
	}
}

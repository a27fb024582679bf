package amqp

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The captured streams (TestCapture): a consumer's bytes to the broker
// (handshake, basic.consume, 20 basic.ack for tags 1..20, a basic.qos) and
// the broker's bytes to a producer (handshake, the confirms of 20
// publishes, some with the multiple bit).
func captured(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chunkings cut a stream into reads of these sizes (the last: all at once).
var chunkings = []int{1, 2, 5, 7, 13, 64, 1 << 20}

// feed runs stream through a filter in reads of size chunk and returns
// what it forwarded and whether it cut the connection.
func feed(f interface {
	Filter([]byte) ([]byte, bool)
}, stream []byte, chunk int) (out []byte, cut bool) {
	for b := stream; len(b) > 0 && !cut; {
		k := min(chunk, len(b))
		var o []byte
		o, cut = f.Filter(b[:k])
		out = append(out, o...)
		b = b[k:]
	}
	return out, cut
}

// acks lists the basic.ack frames in a stream: tag and multiple bit.
type ackSeen struct {
	tag      uint64
	multiple bool
}

func acks(t *testing.T, stream []byte) []ackSeen {
	t.Helper()
	var s Splitter
	var out []ackSeen
	if held := s.Split(stream, func(f []byte) {
		if class, id, args, ok := method(f); ok && class == classBasic && id == methodAck {
			tag, multiple, _ := ackArgs(args)
			out = append(out, ackSeen{tag, multiple})
		}
	}); held != 0 {
		t.Fatalf("%d bytes left inside a frame", held)
	}
	return out
}

// confirmed expands a producer's confirms into the sequence numbers they
// confirm, as a client does (multiple: every number up to the tag not
// answered yet).
func confirmed(t *testing.T, stream []byte) []uint64 {
	var high uint64
	var out []uint64
	for _, a := range acks(t, stream) {
		from := a.tag
		if a.multiple {
			from = high + 1
		}
		for n := from; n <= a.tag; n++ {
			out = append(out, n)
		}
		high = max(high, a.tag)
	}
	slices.Sort(out)
	return out
}

func seq(from, to uint64, except ...uint64) []uint64 {
	var out []uint64
	for n := from; n <= to; n++ {
		if !slices.Contains(except, n) {
			out = append(out, n)
		}
	}
	return out
}

func TestSplitterKeepsEveryByte(t *testing.T) {
	for _, name := range []string{"consumer-to-broker.bin", "producer-from-broker.bin"} {
		stream := captured(t, name)
		for _, chunk := range chunkings {
			var s Splitter
			var out []byte
			for b := stream; len(b) > 0; {
				k := min(chunk, len(b))
				s.Split(b[:k], func(f []byte) { out = append(out, f...) })
				b = b[k:]
			}
			if !bytes.Equal(out, stream) {
				t.Errorf("%s in reads of %d: frames do not add up to the stream", name, chunk)
			}
		}
	}
	if got := acks(t, captured(t, "consumer-to-broker.bin")); len(got) != 20 {
		t.Errorf("consumer stream: %d acks, want 20", len(got))
	}
	if got := confirmed(t, captured(t, "producer-from-broker.bin")); !slices.Equal(got, seq(1, 20)) {
		t.Errorf("producer stream confirms %v, want 1..20", got)
	}
}

// tagsFor maps tags 1..20 to intents 101..120, first attempts.
func tagsFor() *Tags {
	tags := new(Tags)
	for n := 1; n <= 20; n++ {
		tags.Put(uint64(n), 100+n, 1)
	}
	return tags
}

func TestLoseAcks(t *testing.T) {
	stream := captured(t, "consumer-to-broker.bin")
	for _, chunk := range chunkings {
		var lost []int
		f := LoseAcks(tagsFor(), func(intent, attempt int) bool { return intent == 107 && attempt == 1 },
			func(intent, _ int) { lost = append(lost, intent) })()
		out, cut := feed(f, stream, chunk)
		if !cut {
			t.Errorf("reads of %d: the connection was not cut", chunk)
		}
		if !slices.Equal(lost, []int{107}) {
			t.Errorf("reads of %d: lost %v, want [107]", chunk, lost)
		}
		var tags []uint64
		for _, a := range acks(t, out) {
			tags = append(tags, a.tag)
		}
		if !slices.Equal(tags, seq(1, 6)) {
			t.Errorf("reads of %d: acks forwarded %v, want 1..6 (none from the lost one on)", chunk, tags)
		}
		if !bytes.HasPrefix(stream, out) {
			t.Errorf("reads of %d: what was forwarded is not the stream's start", chunk)
		}
	}
}

func TestLoseAcksOnlyWhenScheduled(t *testing.T) {
	stream := captured(t, "consumer-to-broker.bin")
	tags := new(Tags)
	tags.Put(7, 107, 2) // a redelivery: the schedule says no
	f := LoseAcks(tags, func(intent, attempt int) bool { return attempt == 1 }, func(int, int) { t.Error("lost") })()
	out, cut := feed(f, stream, 13)
	if cut || !bytes.Equal(out, stream) {
		t.Errorf("cut %v, stream changed %v: want it passed as it was", cut, !bytes.Equal(out, stream))
	}
}

func TestLoseConfirms(t *testing.T) {
	stream := captured(t, "producer-from-broker.bin")
	for _, hit := range [][]int{nil, {105}, {101, 112, 120}, {110, 111}} {
		for _, chunk := range chunkings {
			var lost []int
			f := LoseConfirms(tagsFor(), func(intent, attempt int) bool { return slices.Contains(hit, intent) && attempt == 1 },
				func(intent, _ int) { lost = append(lost, intent) })()
			out, cut := feed(f, stream, chunk)
			if cut {
				t.Errorf("hit %v, reads of %d: cut", hit, chunk)
			}
			if !slices.Equal(lost, hit) {
				t.Errorf("hit %v, reads of %d: lost %v", hit, chunk, lost)
			}
			var withheld []uint64
			for _, i := range hit {
				withheld = append(withheld, uint64(i-100))
			}
			if got := confirmed(t, out); !slices.Equal(got, seq(1, 20, withheld...)) {
				t.Errorf("hit %v, reads of %d: confirmed %v", hit, chunk, got)
			}
			if hit == nil && !bytes.Equal(out, stream) {
				t.Errorf("reads of %d: nothing hit, but the stream changed", chunk)
			}
		}
	}
}

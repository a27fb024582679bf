package kafka

import (
	"encoding/binary"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fires says whether the fault hits this send (attempt, from 1) of intent
// (a faults.Schedule); Lost is called with the intents of each produce
// request whose response is lost.
type (
	Fires func(intent, attempt int) bool
	Lost  func(intents []int)
)

// LoseProduce loses the responses of chosen produce requests: each
// request's record batches are read for the intents they carry (record
// keys), each intent's send is counted in Sightings, and when Fires says
// yes for any of them, the request goes on to the broker, and when its
// response comes back (the broker has the records) Lost is called with
// them all, the response is withheld and the connection cut, before
// anything else reaches the client. The producer never learns the outcome
// and sends the records again on a new connection (and the broker appends
// them again, unless the producer is idempotent). Responses due on that
// connection after the lost one are lost with it, and requests behind it
// that the broker had not read yet are never handled (a Kafka broker reads
// a connection's next request only once it has answered the one before),
// as when a real connection breaks.
//
// Lost is called when the response arrives, not when the request passes:
// a request queued behind another on its connection may never be handled
// if that connection breaks first, and only an answer says the broker
// stored it. A chosen request whose answer never comes (its connection
// broke first) was not lost by the fault, and Lost is not called.
//
// A produce request with acks 0 gets no response: its intents are counted
// as sent, and Fires is not asked. Compressed batches are not read
// (dqbench's producers send them uncompressed).
type LoseProduce struct {
	// Intent reads an intent from a record key (false: not one).
	Intent func(key []byte) (intent int, ok bool)
	Fires  Fires
	Lost   Lost
	// Sightings counts each intent's sends; share one between filter sets
	// (relays) a producer's requests may go through. Nil: the filter set
	// keeps its own.
	Sightings *Sightings
}

// Sightings counts, for each intent, the produce requests that carried
// it. The zero value is ready.
type Sightings struct {
	mu sync.Mutex
	n  map[int]int
}

// See counts one more request carrying intent and returns the count.
func (s *Sightings) See(intent int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[int]int{}
	}
	s.n[intent]++
	return s.n[intent]
}

// judge counts req's intents and says whether its response is to be lost,
// with the intents to give Lost when it comes. answered is false for a
// request that gets no response.
func (l *LoseProduce) judge(req *kmsg.ProduceRequest, answered bool, own *Sightings) (bool, []int) {
	sightings := l.Sightings
	if sightings == nil {
		sightings = own
	}
	intents := Intents(req, l.Intent)
	hit := false
	for _, in := range intents {
		attempt := sightings.See(in)
		hit = answered && l.Fires(in, attempt) || hit
	}
	return hit, intents
}

// Intents reads the intents in req's record batches: the keys of the
// records of its uncompressed version-2 batches that intent reads.
func Intents(req *kmsg.ProduceRequest, intent func([]byte) (int, bool)) []int {
	var out []int
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			for raw := p.Records; len(raw) > 0; {
				var b kmsg.RecordBatch
				if b.ReadFrom(raw) != nil || b.Magic != 2 {
					break
				}
				raw = raw[min(len(raw), 12+int(b.Length)):] // offset, length, then Length bytes
				if b.Attributes&0x0007 != 0 {
					continue
				}
				out = appendKeys(out, b.Records, b.NumRecords, intent)
			}
		}
	}
	return out
}

// appendKeys appends the intents of the n records in raw (a batch's
// records, each a varint length and that many bytes).
func appendKeys(out []int, raw []byte, n int32, intent func([]byte) (int, bool)) []int {
	for range n {
		length, k := binary.Varint(raw)
		if k <= 0 || length < 0 || length > int64(len(raw)-k) {
			break
		}
		var r kmsg.Record
		if r.ReadFrom(raw[:k+int(length)]) == nil {
			if in, ok := intent(r.Key); ok {
				out = append(out, in)
			}
		}
		raw = raw[k+int(length):]
	}
	return out
}

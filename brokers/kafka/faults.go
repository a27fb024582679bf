package kafka

import (
	"context"
	"encoding/binary"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dqbench/dqbench/brokers"
)

// loseProduceResponses answers chosen produce requests with
// REQUEST_TIMED_OUT after kfake has appended them: the records are in the
// log, the producer sees no success and retries. With the idempotent
// producer the broker recognises the retry by its sequence number and drops
// it; without, the retry is appended again.
//
// Only the embedded broker can do this, so only its destinations have the
// power (scenario validation rejects the fault with mode: external); on an
// external cluster it would need a network fault layer.
func (c embeddedDest) loseProduceResponses(fires func(intent, attempt int) bool, lost func(intents []int)) {
	c.fault = c.loseOn(c.topic, fires, lost)
	if c.stage != nil {
		// Inside the stage's transactions too: its producer is
		// idempotent, so the broker drops the retried batch.
		c.stage.fault = c.loseOn(c.stage.out, fires, lost)
	}
}

// loseOn loses the responses of chosen produce requests to topic.
func (c embeddedDest) loseOn(topic string, fires func(intent, attempt int) bool, lost func(intents []int)) *kfake.FaultHandle {
	var mu sync.Mutex
	sightings := map[int]int{} // intent → produce requests that carried it
	// kfake asks When once per partition of a request; decide once per
	// request so a request's intents are sighted once.
	var last kmsg.Request
	var lastHit bool
	return c.k.cluster.Fault(kfake.Fault{
		Keys:  []kmsg.Key{kmsg.Produce},
		Topic: topic,
		Err:   kerr.RequestTimedOut,
		Count: -1,
		When: func(req kmsg.Request) bool {
			mu.Lock()
			defer mu.Unlock()
			if req == last {
				return lastHit
			}
			intents := producedIntents(req.(*kmsg.ProduceRequest))
			hit := false
			for _, in := range intents {
				sightings[in]++
				hit = fires(in, sightings[in]) || hit
			}
			if hit {
				lost(intents)
			}
			last, lastHit = req, hit
			return hit
		},
	})
}

// producedIntents decodes the intent ids (record keys) in req's batches.
// Each variant has its own producer and topic, and the fault selects the
// topic, so every batch in req is the variant's (from produce v13 on the
// request names topics by id only). The producer sends uncompressed batches,
// so no codec is needed.
func producedIntents(req *kmsg.ProduceRequest) []int {
	var out []int
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(p.Records); err != nil || b.Attributes&0x0007 != 0 {
				continue
			}
			raw := b.Records
			for range b.NumRecords {
				var r kmsg.Record
				if err := r.ReadFrom(raw); err != nil {
					break
				}
				if in, err := brokers.ParseKey(string(r.Key)); err == nil {
					out = append(out, in)
				}
				length, n := binary.Varint(raw)
				if n <= 0 || int(length)+n > len(raw) {
					break
				}
				raw = raw[int(length)+n:]
			}
		}
	}
	return out
}

// crashProducer kills the variant's producer client when the broker
// receives a chosen produce request: the request is appended (and answered
// REQUEST_TIMED_OUT, which nobody reads), and the client is killed from
// the broker's handler, before the answer is written, so it never learns
// the outcome (producer.go). The next publish starts a new client.
func (c embeddedDest) crashProducer(fires func(intent, attempt int) bool, crashed func(intents []int)) {
	pc := new(producerCrash)
	c.crash = pc
	c.crashFault = c.loseOn(c.topic, fires, func(intents []int) {
		pc.kill()
		crashed(intents)
	})
}

// producerCrash is the variant's live producer client, for a
// producer-crash fault to kill.
type producerCrash struct {
	mu sync.Mutex
	p  *producer
	g  *generation
}

// serve makes g, p's new client, the one the next crash kills.
func (pc *producerCrash) serve(p *producer, g *generation) {
	pc.mu.Lock()
	pc.p, pc.g = p, g
	pc.mu.Unlock()
}

// kill kills the live client; it does not block (it runs in kfake's
// handler).
func (pc *producerCrash) kill() {
	pc.mu.Lock()
	p, g := pc.p, pc.g
	pc.mu.Unlock()
	if g != nil {
		p.kill(g)
	}
}

// Apply injects the embedded cluster's fault powers: lost produce
// responses, producer crashes and leader moves.
func (c embeddedDest) Apply(_ context.Context, p brokers.Power) error {
	switch p := p.(type) {
	case brokers.LoseProduceResponses:
		c.loseProduceResponses(p.Fires, p.Lost)
	case brokers.CrashProducer:
		c.crashProducer(p.Fires, p.Crashed)
	case brokers.MoveLeaders:
		c.moveLeaders(p.Fires, p.Moved)
	default:
		return brokers.NoPower(p)
	}
	return nil
}

package kafka

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// asked records a LoseProduce's questions and losses.
type asked struct {
	fires [][2]int // intent, attempt
	lost  [][]int
}

func (a *asked) loseProduce(hit func(intent, attempt int) bool) *LoseProduce {
	return &LoseProduce{
		Intent: intentOf,
		Fires: func(intent, attempt int) bool {
			a.fires = append(a.fires, [2]int{intent, attempt})
			return hit(intent, attempt)
		},
		Lost: func(intents []int) { a.lost = append(a.lost, intents) },
	}
}

// TestLoseProduce: on reads of every size, the response to the produce
// request carrying the chosen intent is withheld and the connection cut
// there (the responses before it pass); Lost gets every intent of the
// request; the acks-0 produce request is never offered to Fires; and a
// second connection sharing the sightings counts the next send of the
// same intents as their second attempt.
func TestLoseProduce(t *testing.T) {
	for n := 1; n <= len(brokerSide); n += max(1, n/3) {
		var a asked
		var tr trace
		lp := a.loseProduce(func(intent, attempt int) bool { return intent == 2 && attempt == 1 })
		lp.Sightings = new(Sightings)
		fs := &Filters{LoseProduce: lp, Observe: tr.observe}
		up, down, _ := fs.Conn(nil)
		if out, cut := feed(up, clientSide, n); !bytes.Equal(out, clientSide) || cut {
			t.Fatalf("reads of %d: the requests did not all pass (cut %v)", n, cut)
		}
		out, cut := feed(down, brokerSide, n)
		if want := bytes.Join(brokerFrames[:2], nil); !bytes.Equal(out, want) || !cut {
			t.Fatalf("reads of %d: passed %d bytes (cut %v), want the %d before the produce response, then a cut", n, len(out), cut, len(want))
		}
		if want := [][2]int{{1, 1}, {2, 1}}; !slices.Equal(a.fires, want) {
			t.Fatalf("reads of %d: Fires asked %v, want %v", n, a.fires, want)
		}
		if len(a.lost) != 1 || !slices.Equal(a.lost[0], []int{1, 2}) {
			t.Fatalf("reads of %d: lost %v, want [[1 2]]", n, a.lost)
		}
		if last := tr.events[len(tr.events)-1]; last != (seen{kmsg.Produce, 2, true, Dropped}) {
			t.Fatalf("reads of %d: last observed %v", n, last)
		}

		// The producer sends again on a new connection (of another
		// filter set, sharing the sightings): the second attempt.
		a.fires = nil
		again := &Filters{LoseProduce: &LoseProduce{Intent: intentOf, Fires: lp.Fires, Lost: lp.Lost, Sightings: lp.Sightings}}
		up, down, _ = again.Conn(nil)
		feed(up, request(produceRequest(-1, "2", "1", "x"), 9, 0), n)
		if out, cut := feed(down, brokerFrames[2], n); !bytes.Equal(out, brokerFrames[2]) || cut {
			t.Fatalf("reads of %d: the second send's response did not pass", n)
		}
		if want := [][2]int{{2, 2}, {1, 2}}; !slices.Equal(a.fires, want) {
			t.Fatalf("reads of %d: Fires asked %v, want %v", n, a.fires, want)
		}
	}
}

// TestIntents: the intents of every uncompressed batch of every
// partition; a compressed batch and keys that are not intents are
// skipped.
func TestIntents(t *testing.T) {
	req := produceRequest(-1, "4", "not an intent", "5")
	compressed := batch("6")
	compressed[22] |= 1 // the attributes' low byte (offset 8, length 4, epoch 4, magic 1, crc 4, then 2): gzip
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = 1, append(batch("7", "8"), compressed...)
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
	if got := Intents(req, intentOf); !slices.Equal(got, []int{4, 5, 7, 8}) {
		t.Fatalf("intents %v, want [4 5 7 8]", got)
	}
}

// TestRules: each action on the OffsetCommit request When picks (the
// second one, of group g2), on reads of every size: what passes each way,
// where the connection is cut, and what the observer sees.
func TestRules(t *testing.T) {
	var (
		client = bytes.Join([][]byte{
			clientFrames[0],
			request(offsetCommitRequest("g1"), 8, 1),
			request(offsetCommitRequest("g2"), 8, 2),
			request(kmsg.NewPtrHeartbeatRequest(), 4, 3),
		}, nil)
		answers = [][]byte{
			brokerFrames[0],
			response(kmsg.NewPtrOffsetCommitResponse(), 8, 1, nil),
			response(kmsg.NewPtrOffsetCommitResponse(), 8, 2, nil),
			response(kmsg.NewPtrHeartbeatResponse(), 4, 3, nil),
		}
		broker = bytes.Join(answers, nil)
		// the requests up to the picked one, and their answers
		before, beforeAnswers = client[:len(client)-len(request(kmsg.NewPtrHeartbeatRequest(), 4, 3))-len(request(offsetCommitRequest("g2"), 8, 2))], bytes.Join(answers[:2], nil)
	)
	for _, c := range []struct {
		action           Action
		up               []byte // what reaches the broker
		upCut            bool
		answered         []byte // what the broker answers, before the relay cuts
		down             []byte // what reaches the client
		downCut          bool
		picked, response Fate // the picked request's fate, and its response's (-1: none seen)
	}{
		{DropRequest, before, true, beforeAnswers, beforeAnswers, false, Dropped, -1},
		{CutAfterRequest, client[:len(before)+len(request(offsetCommitRequest("g2"), 8, 2))], true, beforeAnswers, beforeAnswers, false, CutAfter, -1},
		{DropResponse, client, false, broker, beforeAnswers, true, Passed, Dropped},
		{DelayResponse, client, false, broker, broker, false, Passed, Delayed},
	} {
		for _, n := range []int{1, 6, len(broker)} {
			name := fmt.Sprintf("%v, reads of %d", c.action, n)
			var tr trace
			var asked []string
			fs := &Filters{Observe: tr.observe, Rules: []Rule{{
				Key: kmsg.OffsetCommit, Action: c.action, Delay: time.Millisecond,
				When: func(r Request) bool {
					group := r.Body.(*kmsg.OffsetCommitRequest).Group
					asked = append(asked, fmt.Sprintf("%s %d", group, r.Seen))
					return group == "g2"
				},
			}}}
			up, down, _ := fs.Conn(nil)
			out, cut := feed(up, client, n)
			if !bytes.Equal(out, c.up) || cut != c.upCut {
				t.Fatalf("%s: %d bytes went up (cut %v), want %d (cut %v)", name, len(out), cut, len(c.up), c.upCut)
			}
			if !slices.Equal(asked, []string{"g1 1", "g2 2"}) {
				t.Fatalf("%s: When asked of %v", name, asked)
			}
			out, cut = feed(down, c.answered, n)
			if !bytes.Equal(out, c.down) || cut != c.downCut {
				t.Fatalf("%s: %d bytes came down (cut %v), want %d (cut %v)", name, len(out), cut, len(c.down), c.downCut)
			}
			var picked []Fate
			for _, e := range tr.events {
				if e.key == kmsg.OffsetCommit && e.id == 2 {
					picked = append(picked, e.fate)
				}
			}
			want := []Fate{c.picked}
			if c.response >= 0 {
				want = append(want, c.response)
			}
			if !slices.Equal(picked, want) {
				t.Fatalf("%s: the picked request and its response were %v, want %v", name, picked, want)
			}
		}
	}
}

// TestDelay: a delayed response is held back at least its delay; in a
// relay (Start), the responses before it in the same read leave first;
// and a delay ends, cutting the connection, as soon as the connection ends
// (Stop).
func TestDelay(t *testing.T) {
	const delay = 20 * time.Millisecond
	fs := &Filters{Rules: []Rule{{Key: kmsg.OffsetCommit, Action: DelayResponse, Delay: delay}}}
	up, down, _ := fs.Conn(nil)
	feed(up, clientSide, len(clientSide))
	var early bytes.Buffer
	down.(*downFilter).Start(&early)
	start := time.Now()
	out, cut := down.Filter(bytes.Clone(brokerSide))
	if took := time.Since(start); took < delay {
		t.Errorf("the response was held back %v, want %v at least", took, delay)
	}
	last := brokerFrames[len(brokerFrames)-1]
	if cut || !bytes.Equal(early.Bytes(), brokerSide[:len(brokerSide)-len(last)]) || !bytes.Equal(out, last) {
		t.Fatalf("wrote %d bytes before the delay and returned %d (cut %v), want %d then the OffsetCommit response", early.Len(), len(out), cut, len(brokerSide)-len(last))
	}

	fs.Rules[0].Delay = time.Hour
	up, down, _ = fs.Conn(nil)
	feed(up, clientSide, len(clientSide))
	down.(*downFilter).Stop()
	if out, cut := down.Filter(bytes.Clone(brokerSide)); !cut || !bytes.Equal(out, brokerSide[:len(brokerSide)-len(last)]) {
		t.Fatalf("a delay on an ended connection returned %d bytes, cut %v", len(out), cut)
	}
}

// Package history records what happened during a run: every publish attempt,
// confirm or failure, delivery, effect, ack and fault injection, each with a
// monotonic offset from the run's start. The checker reads only this and the
// final store audit.
package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Type is the kind of an event.
type Type string

// Event types. Every broker adapter and consumer loop must record these; see
// docs/extending.md for the contract.
const (
	Publish    Type = "publish"     // the producer sent an intent (Attempt counts application-level sends)
	Confirm    Type = "confirm"     // the broker acknowledged the intent
	PubFailed  Type = "pub-failed"  // the send ended without a confirm; the outcome is unknown
	Deliver    Type = "deliver"     // a consumer received the intent (Redelivered: the broker flagged it, or the same log position came again)
	Effect     Type = "effect"      // the strategy applied the effect (Applied) or skipped it (Reason)
	Ack        Type = "ack"         // the consumer acked / committed the delivery
	Fault      Type = "fault"       // a fault was injected (Fault, Point)
	Crash      Type = "crash"       // a consumer instance died (after a fault)
	Start      Type = "start"       // a consumer instance started
	DeadLetter Type = "dead-letter" // the intent went to a dead-letter queue
	Drain      Type = "drain"       // the drain ended; Drained says whether everything acknowledged was consumed
)

// Event is one line of a history.
type Event struct {
	T           time.Duration `json:"t"`                // offset from the run's start
	Variant     string        `json:"variant"`          // the variant's name
	Type        Type          `json:"type"`             // what happened
	Intent      int           `json:"intent,omitempty"` // the business intent, 1-based
	Attempt     int           `json:"attempt,omitempty"`
	Consumer    int           `json:"consumer,omitempty"` // consumer instance generation, 1-based
	Partition   int32         `json:"partition,omitempty"`
	Offset      int64         `json:"offset,omitempty"`
	Redelivered bool          `json:"redelivered,omitempty"`
	Applied     bool          `json:"applied,omitempty"`
	Fault       string        `json:"fault,omitempty"`
	Point       string        `json:"point,omitempty"`
	Drained     bool          `json:"drained,omitempty"`
	Reason      string        `json:"reason,omitempty"`
}

// Recorder collects events from many goroutines.
type Recorder struct {
	start  time.Time
	mu     sync.Mutex
	events []Event
}

// NewRecorder starts a history at start.
func NewRecorder(start time.Time) *Recorder {
	return &Recorder{start: start, events: make([]Event, 0, 1<<14)}
}

// Record appends e, stamping its offset from the run's start.
func (r *Recorder) Record(e Event) {
	r.mu.Lock()
	e.T = time.Since(r.start) // under the lock, so offsets grow in history order
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns a copy of the events recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Variant returns a recorder that stamps every event with variant's name.
func (r *Recorder) Variant(name string) *VariantRecorder {
	return &VariantRecorder{r: r, name: name}
}

// VariantRecorder records the events of one variant.
type VariantRecorder struct {
	r    *Recorder
	name string
}

// Record appends e for this variant.
func (v *VariantRecorder) Record(e Event) {
	e.Variant = v.name
	v.r.Record(e)
}

// Write writes events as JSON lines.
func Write(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Read reads JSON lines written by Write. Errors name the line.
func Read(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var out []Event
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if e.Type == "" || e.Variant == "" {
			return nil, fmt.Errorf("line %d: event without type or variant", line)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return out, nil
}

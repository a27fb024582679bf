// Package history records what happened during a run: every publish attempt,
// confirm or failure, delivery, effect, ack and fault injection, each with a
// monotonic offset from the run's start. The checker reads only this and the
// final store audit.
//
// A run streams its history to a file as it is recorded (history.jsonl, one
// JSON object per line), so a run's memory does not grow with its length;
// the checker reads the file back in one pass.
package history

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"sync"
	"time"
)

// Type is the kind of an event.
type Type string

// Event types. The recording clients (recording.go) and the runner record
// these; see docs/extending.md for who records what.
const (
	Publish   Type = "publish"    // the producer sent an intent (Attempt counts application-level sends)
	Confirm   Type = "confirm"    // the broker acknowledged the intent
	PubFailed Type = "pub-failed" // the send ended without a confirm: the outcome is unknown, or (Refused) the broker said it did not take it
	Deliver   Type = "deliver"    // a consumer received the intent (Attempt: its delivery count; Redelivered: the broker flagged it, or the same position came again)
	Effect    Type = "effect"     // the strategy applied the effect (Applied), skipped it (Reason) or refused it (Rejected)
	Ack       Type = "ack"        // the consumer acked / committed the delivery
	// AckUnconfirmed: the consumer asked the broker to confirm its ack
	// (NATS's double ack) and no confirmation came in time (Reason); it
	// acks again. The broker may or may not have had the ack.
	AckUnconfirmed Type = "ack-unconfirmed"
	Armed          Type = "armed"       // a configured fault (Fault) was armed in this variant
	Fault          Type = "fault"       // a fault was injected (Fault, Point; Intents for a fault that hit several at once)
	Crash          Type = "crash"       // a consumer instance died (after a fault, or Reason)
	Start          Type = "start"       // a consumer instance started
	DeadLetter     Type = "dead-letter" // the intent went to a dead-letter queue (recorded by the runner's dead-letter reader; Position: the copy)
	Drain          Type = "drain"       // the drain ended; Drained says whether the broker had nothing left, Reason why not (Intents: poison messages left looping, the only thing the broker still held)
	Stop           Type = "stop"        // a consumer process was stopped at the end of the run (process variants; Reason: how it exited)
	Limits         Type = "limits"      // the variant's broker drops messages past limits (Reason names them: a managed Mosquitto's max_queued_messages)
	// Written: the producer application committed the intent's business row
	// in its own store (producer.pattern dual-write; outbox: with its
	// outbox row, in the same transaction). The intent begins there: one
	// written and never published is lost.
	Written Type = "write"
	// Reject: the consumer handed the intent's delivery to the queue's
	// dead-letter exchange (basic.reject without requeue; Reason names
	// where the exchange routes it: the dead-letter queue, or the wait
	// queue of on_failure: retry-queue). Nothing confirms that hop: the
	// intent's next delivery or dead-letter event shows it arrived; none
	// after a complete drain, that the broker dropped it.
	Reject Type = "reject"
	// Interrupted: the run's caller stopped it here (Ctrl-C, SIGTERM),
	// recorded in every variant before anything it made the variant do.
	// What a consumer held then was in flight, not lost, and the
	// expectations are not judged: the run did not end.
	Interrupted Type = "interrupted"

	// A consume-transform-produce stage's events (recording.Stage);
	// Consumer is the stage instance's generation, Txn numbers its batches
	// (transactions) within the variant.
	StageStart  Type = "stage-start"  // a stage instance started
	StageRead   Type = "stage-read"   // the stage polled the intent from its input (Attempt: its read count; Position: the input copy)
	StageWrite  Type = "stage-write"  // the stage wrote the intent to its output in batch Txn (Position: the output copy)
	StageCommit Type = "stage-commit" // the stage committed batch Txn's input offsets (Intents), and its transaction
	StageAbort  Type = "stage-abort"  // batch Txn's transaction aborted (Reason): a reader with read_uncommitted still sees its records
	StageCrash  Type = "stage-crash"  // a stage instance died (after a fault, or Reason)
)

// Event is one line of a history.
type Event struct {
	T           time.Duration `json:"t"`                // offset from the run's start
	Variant     string        `json:"variant"`          // the variant's name
	Type        Type          `json:"type"`             // what happened
	Intent      int           `json:"intent,omitempty"` // the business intent, 1-based
	Intents     []int         `json:"intents,omitempty"`
	Attempt     int           `json:"attempt,omitempty"`
	Consumer    int           `json:"consumer,omitempty"` // consumer instance generation, 1-based
	Position    string        `json:"pos,omitempty"`      // where the broker kept the delivered message
	Redelivered bool          `json:"redelivered,omitempty"`
	Applied     bool          `json:"applied,omitempty"`
	Rejected    bool          `json:"rejected,omitempty"` // with effect: the strategy refused the message (out of order, illegal transition)
	Fault       string        `json:"fault,omitempty"`
	Point       string        `json:"point,omitempty"`
	Drained     bool          `json:"drained,omitempty"`
	Backlog     int64         `json:"backlog,omitempty"` // with drain: messages the broker still held
	Reason      string        `json:"reason,omitempty"`
	Txn         int           `json:"txn,omitempty"` // with stage events: the batch (transaction) number
	// PID is the operating system's id of a consumer process (process
	// variants): with start, the process started; with fault and crash,
	// the process killed or that exited.
	PID int    `json:"pid,omitempty"`
	QoS string `json:"qos,omitempty"` // with deliver: the QoS level the delivery arrived with (MQTT: "0", "1", "2")
	// Retained, with deliver: the broker sent it from its retained
	// messages, for a subscription the consumer made (MQTT: the RETAIN
	// flag on a delivery), not as the message's routing.
	Retained bool `json:"retained,omitempty"`
	// Intents, with crash: the messages the broker had sent the instance
	// and it had not yet handed to the consumer when it died, which the
	// broker had already forgotten (RabbitMQ autoAck): they die with it.
	//
	// Held, with fault: the broker had received the Intents when the
	// fault hit them (subscriber-offline), so they count as had, like
	// confirmed ones, even where nobody confirmed them (QoS 0).
	Held bool `json:"held,omitempty"`
	// Refused, with pub-failed: the broker answered that it did not take
	// the publish (a nack, a reject, an error saying so): a definite
	// refusal the producer heard, not an unknown outcome.
	Refused bool `json:"refused,omitempty"`
	// Starved, with drain: the drain ended with healthy messages still
	// waiting behind poison messages that loop (Intents): each delivery
	// fails and is requeued, and the consumer's prefetch holds only them.
	// A finding (the starved count), not a broken run.
	Starved bool `json:"starved,omitempty"`
	// Deaths, with deliver: how many times the broker had dead-lettered
	// the message before this delivery (RabbitMQ's x-death counts, summed:
	// with on_failure retry-queue, one rejection from the variant's queue
	// and one expiry from the wait queue per trip).
	Deaths int `json:"deaths,omitempty"`
	// LeaseLost, with crash: the instance stalled past its lease
	// (consumer-zombie) rather than died: the broker gave its deliveries
	// to another instance while it still held them. (Reason begins with
	// LeaseLost too, for people.)
	LeaseLost bool `json:"lease_lost,omitempty"`
	// FireAndForget, with pub-failed: the send asked for no confirm
	// (Kafka acks=0, MQTT QoS 0: brokers.ErrUnconfirmed), so its outcome
	// is unknown by design, not because something failed.
	FireAndForget bool `json:"fire_and_forget,omitempty"`
	// Packet and Leg, with the fault of an MQTT ack-lost: the
	// acknowledgement packet it lost (a catalog.MQTTPacket) and the leg it
	// lost it on (a catalog.Leg: "publisher", "subscriber"). Point says
	// the same for people: "PUBREC/subscriber".
	Packet string `json:"packet,omitempty"`
	Leg    string `json:"leg,omitempty"`
}

// Recorder writes events from many goroutines to one stream, in the order
// they are recorded.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	w     *bufio.Writer
	buf   []byte
	err   error
	// closed: the run is over and its history written out; what a
	// straggling goroutine records after that is dropped, never written
	// into a file that is already being read back.
	closed bool
}

// NewRecorder starts a history at start that writes to w. Call Flush when
// the run ends.
func NewRecorder(start time.Time, w io.Writer) *Recorder {
	return &Recorder{start: start, w: bufio.NewWriterSize(w, 256<<10)}
}

// Record writes e, stamping its offset from the run's start.
func (r *Recorder) Record(e Event) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	e.T = time.Since(r.start) // under the lock, so offsets grow in history order
	r.buf = appendEvent(r.buf[:0], &e)
	if _, err := r.w.Write(r.buf); err != nil && r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

// Flush writes out what is buffered and returns the first write error.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.w.Flush(); err != nil && r.err == nil {
		r.err = err
	}
	return r.err
}

// Close writes out what is buffered, returns the first write error, and
// ends the history: events recorded after it are dropped. Call it once
// every recording goroutine should have stopped, before the history is
// read back from the same file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.w.Flush(); err != nil && r.err == nil {
		r.err = err
	}
	r.closed = true
	return r.err
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

// Record writes e for this variant.
func (v *VariantRecorder) Record(e Event) {
	e.Variant = v.name
	v.r.Record(e)
}

// Write writes events as JSON lines.
func Write(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for i := range events {
		buf = appendEvent(buf[:0], &events[i])
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Read reads all the JSON lines written by Write. Errors name the line.
func Read(r io.Reader) ([]Event, error) {
	var out []Event
	for e, err := range Scan(r) {
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// ErrMalformed marks a history that no run can have written: a line that
// is not an event, or an event that cannot have happened.
var ErrMalformed = errors.New("malformed history")

// LeaseLost begins the Reason of a crash event whose instance stalled past
// its lease (consumer-zombie) rather than died: the broker gave its
// deliveries to another instance while it still held them.
const LeaseLost = "lease lost"

// fireAndForgetText is what brokers.ErrUnconfirmed said in the pub-failed
// Reason of the builds that recorded no FireAndForget.
const fireAndForgetText = "sent without confirmation (fire and forget)"

// typedFromText sets the typed fields of e that a history from an older
// build says only in its text (LeaseLost, FireAndForget, Packet and Leg),
// so that a saved run is judged and told the same by this build. A newer
// build's events carry both, and come out unchanged.
func typedFromText(e *Event) {
	switch e.Type {
	case Crash:
		e.LeaseLost = e.LeaseLost || strings.HasPrefix(e.Reason, LeaseLost)
	case PubFailed:
		e.FireAndForget = e.FireAndForget || strings.Contains(e.Reason, fireAndForgetText)
	case Fault:
		if packet, leg, ok := strings.Cut(e.Point, "/"); ok && e.Packet == "" && e.Leg == "" {
			e.Packet, e.Leg = packet, leg // an MQTT protocol fault: "PUBREC/subscriber"
		}
	}
}

// Scan reads JSON lines one event at a time; it stops at the first error,
// which names the line and wraps ErrMalformed when the file is at fault.
func Scan(r io.Reader) iter.Seq2[Event, error] { return ScanRun(r, 0) }

// ScanRun is Scan for the history of a run that published intents
// 1..messages (0: not known): a publish of any other intent, or a negative
// intent or attempt anywhere, is an event no run writes.
func ScanRun(r io.Reader, messages int) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 256*1024), 1<<20)
		intern := map[string]string{}
		line := 0
		for sc.Scan() {
			line++
			if len(sc.Bytes()) == 0 {
				continue
			}
			var e Event
			if err := decodeEvent(sc.Bytes(), &e, intern); err != nil {
				yield(Event{}, fmt.Errorf("%w: line %d: %w", ErrMalformed, line, err))
				return
			}
			if e.Type == "" || e.Variant == "" {
				yield(Event{}, fmt.Errorf("%w: line %d: event without type or variant", ErrMalformed, line))
				return
			}
			if why := impossible(&e, messages); why != "" {
				yield(Event{}, fmt.Errorf("%w: line %d: %s", ErrMalformed, line, why))
				return
			}
			typedFromText(&e)
			if !yield(e, nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = fmt.Errorf("%w: a line longer than 1 MiB (%w)", ErrMalformed, err)
			}
			yield(Event{}, fmt.Errorf("line %d: %w", line+1, err))
		}
	}
}

// Impossible says why e cannot be an event of any run (a negative intent
// or attempt, a publish of intent 0, a time before the start), or "" when
// it can be: Read rejects such an event with the line.
func Impossible(e Event) string { return impossible(&e, 0) }

// impossible says why e cannot be an event of a run that published
// intents 1..messages, or "" when it can be.
func impossible(e *Event, messages int) string {
	switch {
	case e.Intent < 0:
		return fmt.Sprintf("%s event with intent %d: intents are numbered from 1", e.Type, e.Intent)
	case e.Attempt < 0:
		return fmt.Sprintf("%s event with attempt %d: attempts are counted from 1", e.Type, e.Attempt)
	case e.T < 0:
		return fmt.Sprintf("%s event at %s, before the run started", e.Type, e.T)
	case e.Type == Publish && e.Intent < 1:
		return fmt.Sprintf("publish of intent %d: intents are numbered from 1", e.Intent)
	case e.Type == Publish && messages > 0 && e.Intent > messages:
		return fmt.Sprintf("publish of intent %d, but the run published intents 1..%d", e.Intent, messages)
	case e.Type == Written && e.Intent < 1:
		return fmt.Sprintf("write of intent %d: intents are numbered from 1", e.Intent)
	case e.Type == Written && messages > 0 && e.Intent > messages:
		return fmt.Sprintf("write of intent %d, but the run had intents 1..%d", e.Intent, messages)
	}
	for _, in := range e.Intents {
		if in < 0 {
			return fmt.Sprintf("%s event lists intent %d: intents are numbered from 1", e.Type, in)
		}
	}
	return ""
}

// Events iterates over events held in memory, as Scan does over a file.
func Events(events []Event) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for _, e := range events {
			if !yield(e, nil) {
				return
			}
		}
	}
}

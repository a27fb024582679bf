package history_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/history"
)

// sample has every event type and every field set somewhere.
func sample() []history.Event {
	return []history.Event{
		{T: 0, Variant: "naive", Type: history.Start, Consumer: 1},
		{T: time.Millisecond, Variant: "naive", Type: history.Publish, Intent: 1, Attempt: 1},
		{T: 2 * time.Millisecond, Variant: "naive", Type: history.Fault, Fault: "produce-response-lost", Intents: []int{1, 2, 3}},
		{T: 2 * time.Millisecond, Variant: "naive", Type: history.Armed, Fault: "produce-response-lost"},
		{T: 3 * time.Millisecond, Variant: "naive", Type: history.PubFailed, Intent: 1, Reason: "timed out"},
		{T: 4 * time.Millisecond, Variant: "naive", Type: history.Publish, Intent: 1, Attempt: 2},
		{T: 4 * time.Millisecond, Variant: "naive", Type: history.PubFailed, Intent: 2, Refused: true, Reason: "refused by the broker: basic.nack"},
		{T: 5 * time.Millisecond, Variant: "naive", Type: history.Confirm, Intent: 1},
		{T: 6 * time.Millisecond, Variant: "naive", Type: history.Deliver, Intent: 1, Attempt: 1, Consumer: 1, Position: "2@1099511627776"},
		{T: 7 * time.Millisecond, Variant: "naive", Type: history.Fault, Fault: "consumer-crash@after-effect-before-ack", Point: "after-effect-before-ack"},
		{T: 8 * time.Millisecond, Variant: "naive", Type: history.Crash, Consumer: 1, Reason: "connection reset"},
		{T: 9 * time.Millisecond, Variant: "naive", Type: history.Deliver, Intent: 1, Attempt: 2, Consumer: 2, Redelivered: true},
		{T: 9 * time.Millisecond, Variant: "mqtt", Type: history.Deliver, Intent: 4, Attempt: 1, Consumer: 1, Position: "c3/7", QoS: "1"},
		{T: 10 * time.Millisecond, Variant: "naive", Type: history.Effect, Intent: 1, Applied: true},
		{T: 10 * time.Millisecond, Variant: "cas", Type: history.Effect, Intent: 2, Rejected: true, Reason: "out of order"},
		{T: 11 * time.Millisecond, Variant: "dedup", Type: history.Effect, Intent: 1, Reason: "duplicate: message id already in the dedup table"},
		{T: 12 * time.Millisecond, Variant: "naive", Type: history.Ack, Intent: 1, Consumer: 2},
		{T: 13 * time.Millisecond, Variant: "naive", Type: history.DeadLetter, Intent: 3},
		{T: 14 * time.Millisecond, Variant: "retry", Type: history.Reject, Intent: 5, Attempt: 1, Consumer: 1, Reason: "wait queue dqbench-x-wait"},
		{T: 15 * time.Millisecond, Variant: "retry", Type: history.Deliver, Intent: 5, Attempt: 2, Consumer: 1, Deaths: 2},
		{T: 16 * time.Millisecond, Variant: "zombie", Type: history.Crash, Consumer: 2, LeaseLost: true, Reason: "lease lost: stalled at before-process past its session timeout; another instance took over"},
		{T: 17 * time.Millisecond, Variant: "qos0", Type: history.PubFailed, Intent: 6, Attempt: 1, FireAndForget: true, Reason: "sent without confirmation (fire and forget)"},
		{T: 18 * time.Millisecond, Variant: "qos2", Type: history.Fault, Fault: "sub-PUBREC", Point: "PUBREC/subscriber", Packet: "PUBREC", Leg: "subscriber", Intent: 7},
		{T: time.Minute, Variant: "naive \"quoted\" ünïcode", Type: history.Drain, Drained: true},
		{T: time.Minute, Variant: "poison", Type: history.Drain, Starved: true, Backlog: 110, Intents: []int{10, 20}, Reason: "starved"},
		{T: time.Hour, Variant: "ctl\x01\t<&>\u2028\\", Type: history.Drain, Backlog: 7, Reason: "no progress"},
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	in := sample()
	var buf bytes.Buffer
	if err := history.Write(&buf, in); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != len(in) {
		t.Errorf("Write wrote %d lines for %d events:\n%s", lines, len(in), buf.String())
	}
	out, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip changed the events:\n got %+v\nwant %+v", out, in)
	}
}

// A history from a build before the typed fields says lease lost, fire
// and forget and an MQTT fault's packet and leg only in its text: Read
// sets the typed fields from it, and leaves the rest alone.
func TestReadTypesOlderText(t *testing.T) {
	in := strings.Join([]string{
		`{"t":1,"variant":"v","type":"crash","consumer":2,"reason":"lease lost: stalled at before-process past its session timeout; another instance took over"}`,
		`{"t":2,"variant":"v","type":"crash","consumer":3,"reason":"connection reset"}`,
		`{"t":3,"variant":"v","type":"pub-failed","intent":1,"attempt":1,"reason":"mqtt: sent without confirmation (fire and forget)"}`,
		`{"t":4,"variant":"v","type":"pub-failed","intent":2,"attempt":1,"reason":"timed out"}`,
		`{"t":5,"variant":"v","type":"fault","intent":3,"fault":"sub-PUBREC","point":"PUBREC/subscriber"}`,
		`{"t":6,"variant":"v","type":"fault","intent":4,"fault":"crash","point":"before-process"}`,
	}, "\n")
	got, err := history.Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	typed := func(e history.Event) string {
		return fmt.Sprintf("lease_lost=%v fire_and_forget=%v packet=%q leg=%q", e.LeaseLost, e.FireAndForget, e.Packet, e.Leg)
	}
	want := []string{
		`lease_lost=true fire_and_forget=false packet="" leg=""`,
		`lease_lost=false fire_and_forget=false packet="" leg=""`,
		`lease_lost=false fire_and_forget=true packet="" leg=""`,
		`lease_lost=false fire_and_forget=false packet="" leg=""`,
		`lease_lost=false fire_and_forget=false packet="PUBREC" leg="subscriber"`,
		`lease_lost=false fire_and_forget=false packet="" leg=""`,
	}
	for i, e := range got {
		if typed(e) != want[i] {
			t.Errorf("line %d: %s, want %s", i+1, typed(e), want[i])
		}
	}
}

func TestWriteEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := history.Write(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("Write(nil) wrote %q", buf.String())
	}
	out, err := history.Read(&buf)
	if err != nil || len(out) != 0 {
		t.Errorf("Read(empty) = %v, %v; want no events, no error", out, err)
	}
}

// The on-disk format is part of the contract (dqbench check re-reads saved
// runs): pin the field names and omitempty.
func TestWriteFormat(t *testing.T) {
	var buf bytes.Buffer
	err := history.Write(&buf, []history.Event{
		{T: 1500 * time.Microsecond, Variant: "v", Type: history.Deliver, Intent: 4, Position: "1@9", Redelivered: true},
		{Variant: "v", Type: history.Drain},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"t":1500000,"variant":"v","type":"deliver","intent":4,"pos":"1@9","redelivered":true}` + "\n" +
		`{"t":0,"variant":"v","type":"drain"}` + "\n"
	if buf.String() != want {
		t.Errorf("Write:\n got %s\nwant %s", buf.String(), want)
	}
}

func TestReadSkipsBlankLinesAndCRLF(t *testing.T) {
	in := "\n" + `{"variant":"v","type":"publish","intent":1}` + "\r\n\n" + `{"variant":"v","type":"confirm","intent":1}`
	out, err := history.Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Event{
		{Variant: "v", Type: history.Publish, Intent: 1},
		{Variant: "v", Type: history.Confirm, Intent: 1},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("got %+v, want %+v", out, want)
	}
}

func TestReadErrors(t *testing.T) {
	good := `{"variant":"v","type":"publish","intent":1}`
	tests := []struct {
		name  string
		input string
		want  string // substring of the error
	}{
		{"bad JSON", good + "\n" + good + "\n{not json}\n" + good, "line 3: "},
		{"truncated JSON", good + "\n" + `{"variant":"v","type":`, "line 2: "},
		{"wrong field type", `{"variant":"v","type":"publish","intent":"one"}`, "line 1: "},
		{"blank lines count", "\n\n" + `[1,2]`, "line 3: "},
		{"no type", good + "\n" + `{"variant":"v","intent":1}`, "line 2: event without type or variant"},
		{"no variant", good + "\n" + good + "\n" + `{"type":"publish","intent":1}`, "line 3: event without type or variant"},
		{"null", `null`, "line 1: event without type or variant"},
		{"empty object", good + "\n{}", "line 2: event without type or variant"},
		{"negative intent", good + "\n" + `{"variant":"v","type":"deliver","intent":-3}`, "line 2: deliver event with intent -3"},
		{"attempt -1", `{"variant":"v","type":"publish","intent":1,"attempt":-1}`, "line 1: publish event with attempt -1"},
		{"publish of intent 0", `{"variant":"v","type":"publish"}`, "line 1: publish of intent 0"},
		{"negative intent in a list", `{"variant":"v","type":"fault","intents":[1,-2]}`, "line 1: fault event lists intent -2"},
		{"before the start", `{"t":-5,"variant":"v","type":"publish","intent":1}`, "line 1: publish event at -5ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := history.Read(strings.NewReader(tt.input))
			if err == nil {
				t.Fatalf("Read(%q) = %+v, nil; want an error", tt.input, out)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if !errors.Is(err, history.ErrMalformed) {
				t.Errorf("error %q is not ErrMalformed", err)
			}
			if out != nil {
				t.Errorf("Read returned events %+v with the error", out)
			}
		})
	}
}

// ScanRun refuses a publish of an intent past the run's messages (a
// tampered history once gave "attempted 51" of 50).
func TestScanRunIntentRange(t *testing.T) {
	in := `{"variant":"v","type":"publish","intent":50}` + "\n" + `{"variant":"v","type":"publish","intent":51}` + "\n"
	n := 0
	var err error
	for _, err = range history.ScanRun(strings.NewReader(in), 50) {
		if err != nil {
			break
		}
		n++
	}
	if n != 1 || !errors.Is(err, history.ErrMalformed) || !strings.Contains(err.Error(), "line 2: publish of intent 51, but the run published intents 1..50") {
		t.Errorf("read %d events, err %v; want 1 and line 2 named", n, err)
	}
}

// A line over the scanner's 1 MiB limit is an error, not a silent stop.
func TestReadLineTooLong(t *testing.T) {
	long := `{"variant":"v","type":"publish","reason":"` + strings.Repeat("x", 1<<20) + `"}`
	_, err := history.Read(strings.NewReader(`{"variant":"v","type":"publish","intent":1}` + "\n" + long + "\n"))
	if !errors.Is(err, bufio.ErrTooLong) {
		t.Errorf("err = %v, want %v", err, bufio.ErrTooLong)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	const goroutines, perGoroutine = 32, 200
	start := time.Now()
	var buf bytes.Buffer
	rec := history.NewRecorder(start, &buf)
	variants := []string{"a", "b", "c"}

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vr := rec.Variant(variants[g%len(variants)])
			for i := range perGoroutine {
				// The recorder stamps T and Variant itself.
				vr.Record(history.Event{T: -time.Hour, Variant: "ignored", Type: history.Publish, Intent: g*perGoroutine + i + 1})
			}
		}()
	}
	wg.Wait()
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)

	evs, err := history.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != goroutines*perGoroutine {
		t.Fatalf("recorded %d events, want %d", len(evs), goroutines*perGoroutine)
	}
	byVariant := map[string]int{}
	seen := map[int]bool{}
	var last time.Duration
	for _, e := range evs {
		byVariant[e.Variant]++
		if seen[e.Intent] {
			t.Errorf("intent %d recorded twice", e.Intent)
		}
		seen[e.Intent] = true
		if e.T < 0 || e.T > elapsed {
			t.Errorf("event T = %v, want in [0, %v]", e.T, elapsed)
		}
		if e.T < last {
			t.Errorf("offsets go back in file order: %v after %v", e.T, last)
		}
		last = e.T
	}
	want := map[string]int{}
	for g := range goroutines {
		want[variants[g%len(variants)]] += perGoroutine
	}
	if !reflect.DeepEqual(byVariant, want) {
		t.Errorf("events by variant = %v, want %v", byVariant, want)
	}
}

func TestRecorderStampsOffset(t *testing.T) {
	start := time.Now().Add(-time.Second)
	var buf bytes.Buffer
	rec := history.NewRecorder(start, &buf)
	rec.Record(history.Event{Variant: "v", Type: history.Start})
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	evs, err := history.Read(&buf)
	if err != nil || len(evs) != 1 {
		t.Fatalf("read back %v, %v", evs, err)
	}
	e := evs[0]
	if e.T < time.Second || e.T > time.Since(start) {
		t.Errorf("T = %v, want the offset from the run's start (≥ 1s)", e.T)
	}
	if e.Variant != "v" {
		t.Errorf("plain Recorder changed the variant to %q", e.Variant)
	}
}

// The hand-written encoder writes what encoding/json would.
func TestEncoderMatchesEncodingJSON(t *testing.T) {
	for _, e := range sample() {
		encodesLikeJSON(t, e)
	}
}

// encodesLikeJSON checks that Write writes e as encoding/json would.
func encodesLikeJSON(t *testing.T, e history.Event) {
	t.Helper()
	var got bytes.Buffer
	if err := history.Write(&got, []history.Event{e}); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("encoded\n got %s\nwant %s", got.String(), want.String())
	}
}

// A write error is kept and returned by Flush.
func TestRecorderWriteError(t *testing.T) {
	rec := history.NewRecorder(time.Now(), failingWriter{})
	for range 10000 {
		rec.Record(history.Event{Variant: "v", Type: history.Start})
	}
	if err := rec.Flush(); err == nil {
		t.Error("Flush returned no error after failed writes")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func FuzzEncode(f *testing.F) {
	f.Add("v", "reason", "0@1", "fault", 1, 2, "1")
	f.Add("\xff\u2028", "\x00<>&", "", "", -1, 0, "")
	f.Fuzz(func(t *testing.T, variant, reason, pos, fault string, intent, attempt int, qos string) {
		encodesLikeJSON(t, history.Event{Variant: variant, Type: history.Deliver, Reason: reason, Position: pos, Fault: fault, Intent: intent, Attempt: attempt, QoS: qos})
	})
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	if err := history.Write(&buf, sample()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	for _, s := range []string{
		"",
		"\n\n",
		"{}",
		"null",
		"[]",
		`{"variant":"v","type":"publish"}`,
		`{"variant":"v","type":"deliver","pos":"2@2147483648"}`,
		`{"variant":"v","type":"deliver","pos":"c1/1","qos":"2"}`,
		`{"variant":"v","type":"deliver","offset":1e30}`,
		`{"variant":"v","type":"x","t":"1s"}`,
		`{"variant":"\ud800","type":"\u0000"}`,
		"{\"variant\":\"v\",\"type\":\"publish\"}\r\n{",
		"\xff\xfe",
		`{"variant":"v","type":"deliver","intents":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := history.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i, e := range events {
			if e.Type == "" || e.Variant == "" {
				t.Fatalf("event %d has no type or variant: %+v", i, e)
			}
		}
		// Whatever Read accepts, Write writes and Read reads back the same.
		var out bytes.Buffer
		if err := history.Write(&out, events); err != nil {
			t.Fatalf("Write of read events: %v", err)
		}
		again, err := history.Read(&out)
		if err != nil {
			t.Fatalf("Read of written events: %v\n%s", err, out.String())
		}
		if len(events) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(events, again) {
			t.Fatalf("round trip changed events:\n%s\n got %+v\nwant %+v", out.String(), again, events)
		}
	})
}

// The fast decoder reads what encoding/json reads, or leaves the line to it.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	if err := history.Write(&buf, sample()); err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		f.Add([]byte(line))
	}
	f.Add([]byte(`{"t":1,"variant":"v","type":"deliver","intents":[]}`))
	f.Add([]byte(`{"t":1,"variant":"v","type":"deliver","intent":99999999999999999999}`))
	f.Add([]byte(`{"t":-0,"variant":"v","type":"x","pos":"é"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(bytes.TrimSpace(line)) == 0 || bytes.ContainsAny(line, "\r\n") {
			return // one line at a time; blank lines are skipped by design
		}
		fast, errFast := history.Read(bytes.NewReader(line))
		var slow history.Event
		errSlow := json.Unmarshal(line, &slow)
		if errSlow != nil || slow.Type == "" || slow.Variant == "" {
			if errFast == nil {
				t.Fatalf("Read accepted %q that encoding/json rejects (%v) or that lacks type/variant", line, errSlow)
			}
			return
		}
		if why := history.Impossible(slow); why != "" {
			if errFast == nil {
				t.Fatalf("Read accepted %q, an impossible event (%s)", line, why)
			}
			return
		}
		if errFast != nil {
			t.Fatalf("Read rejected %q: %v", line, errFast)
		}
		if len(slow.Intents) == 0 {
			slow.Intents = nil // an empty list is no list: the writer omits both
		}
		history.TypedFromText(&slow)
		if len(fast) != 1 || !reflect.DeepEqual(fast[0], slow) {
			t.Fatalf("Read(%q) = %+v, encoding/json gives %+v", line, fast, slow)
		}
	})
}

// TestRecordAfterClose: an event recorded after Close is dropped, so a
// straggler cannot write into a history already being read back.
func TestRecordAfterClose(t *testing.T) {
	var buf bytes.Buffer
	rec := history.NewRecorder(time.Now(), &buf)
	rec.Record(history.Event{Variant: "v", Type: history.Publish, Intent: 1})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	n := buf.Len()
	rec.Record(history.Event{Variant: "v", Type: history.Confirm, Intent: 1})
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != n {
		t.Errorf("an event recorded after Close was written: %q", buf.String()[n:])
	}
}

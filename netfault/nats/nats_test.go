package nats

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// The client's side of three publishes of the variant's (one with
// headers) and one elsewhere, and the server's side: INFO, two PubAcks (a
// MSG and an HMSG), an API error, a PONG and a MSG on a subject no publish
// used.
var (
	hdr        = "NATS/1.0\r\nNats-Msg-Id: 00000002\r\n\r\n"
	clientSide = "CONNECT {\"verbose\":false}\r\nPING\r\n" +
		"SUB _INBOX.abc.* 1\r\n" +
		pub("dqbench.v.00000001", "_INBOX.abc.t1", "hello") +
		"HPUB dqbench.v.00000002 _INBOX.abc.t2 " + strconv.Itoa(len(hdr)) + " " + strconv.Itoa(len(hdr)+3) + "\r\n" + hdr + "bye\r\n" +
		pub("other.subject", "_INBOX.abc.t3", "") +
		pub("dqbench.v.00000003", "_INBOX.abc.t4", "hi")
	ack1       = msg("_INBOX.abc.t1", `{"stream":"dqbench-v","seq":1}`)
	ack2       = "HMSG _INBOX.abc.t2 1 12 " + strconv.Itoa(12+len(dupAck)) + "\r\nNATS/1.0\r\n\r\n" + dupAck + "\r\n"
	dupAck     = `{"stream":"dqbench-v","seq":2,"duplicate":true}`
	refusal    = msg("_INBOX.abc.t4", `{"error":{"code":503,"err_code":10077,"description":"x"}}`)
	serverSide = "INFO {\"server_id\":\"x\"}\r\n+OK\r\n" + ack1 + ack2 + refusal + "PONG\r\n" + msg("elsewhere", "abc")
)

func pub(subject, reply, payload string) string {
	return "PUB " + subject + " " + reply + " " + strconv.Itoa(len(payload)) + "\r\n" + payload + "\r\n"
}

func msg(subject, payload string) string {
	return "MSG " + subject + " 1 " + strconv.Itoa(len(payload)) + "\r\n" + payload + "\r\n"
}

func intentOf(subject string) (int, bool) {
	k, ok := strings.CutPrefix(subject, "dqbench.v.")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(k)
	return n, err == nil
}

// feed passes s through f in pieces of size n.
func feed(f interface {
	Filter([]byte) ([]byte, bool)
}, s string, n int) string {
	var out bytes.Buffer
	for len(s) > 0 {
		k := min(n, len(s))
		b, cut := f.Filter([]byte(s[:k]))
		if cut {
			panic("cut")
		}
		out.Write(b)
		s = s[k:]
	}
	return out.String()
}

// TestSplitterOnSplitReads: whatever the size of the reads, the messages
// come out whole, with their subjects, reply subjects and payloads.
func TestSplitterOnSplitReads(t *testing.T) {
	for n := 1; n <= len(clientSide); n++ {
		var s Splitter
		var got []Message
		for i := 0; i < len(clientSide); i += n {
			s.Split([]byte(clientSide[i:min(i+n, len(clientSide))]), func(m Message) {
				m.Payload = bytes.Clone(m.Payload)
				m.Raw = bytes.Clone(m.Raw)
				got = append(got, m)
			})
		}
		want := []struct{ op, subject, reply, payload string }{
			{"CONNECT", "", "", ""},
			{"PING", "", "", ""},
			{"SUB", "", "", ""},
			{"PUB", "dqbench.v.00000001", "_INBOX.abc.t1", "hello"},
			{"HPUB", "dqbench.v.00000002", "_INBOX.abc.t2", "NATS/1.0\r\nNats-Msg-Id: 00000002\r\n\r\nbye"},
			{"PUB", "other.subject", "_INBOX.abc.t3", ""},
			{"PUB", "dqbench.v.00000003", "_INBOX.abc.t4", "hi"},
		}
		if len(got) != len(want) {
			t.Fatalf("reads of %d: %d messages, want %d", n, len(got), len(want))
		}
		var raw strings.Builder
		for i, w := range want {
			g := got[i]
			if g.Op != w.op || g.Subject != w.subject || g.Reply != w.reply || string(g.Payload) != w.payload {
				t.Errorf("reads of %d: message %d = %s %q %q %q, want %s %q %q %q", n, i, g.Op, g.Subject, g.Reply, g.Payload, w.op, w.subject, w.reply, w.payload)
			}
			raw.Write(g.Raw)
		}
		if raw.String() != clientSide {
			t.Errorf("reads of %d: the raw messages do not add up to the stream", n)
		}
	}
}

func TestParseServerMessages(t *testing.T) {
	for _, c := range []struct {
		line, op, subject, reply string
		n                        int
	}{
		{"MSG a.b 7 12", "MSG", "a.b", "", 12},
		{"MSG a.b 7 r.1 12", "MSG", "a.b", "r.1", 12},
		{"HMSG a.b 7 3 12", "HMSG", "a.b", "", 12},
		{"HMSG a.b 7 r.1 3 12", "HMSG", "a.b", "r.1", 12},
		{"msg a.b 7 4", "MSG", "a.b", "", 4},
		{"MSG a.b 7", "MSG", "", "", -1},
		{"MSG a.b 7 x", "MSG", "", "", -1},
		{"PONG", "PONG", "", "", -1},
	} {
		m, n := parse([]byte(c.line))
		if m.Op != c.op || m.Subject != c.subject || m.Reply != c.reply || n != c.n {
			t.Errorf("parse(%q) = %s %q %q %d, want %s %q %q %d", c.line, m.Op, m.Subject, m.Reply, n, c.op, c.subject, c.reply, c.n)
		}
	}
}

// TestLosePubAcks: on reads of every size, the learner passes the client's
// bytes unchanged and the loser drops exactly the chosen PubAck (a MSG or
// an HMSG), never an API error, and says which send it was.
func TestLosePubAcks(t *testing.T) {
	for _, c := range []struct {
		name   string
		intent int
		lost   string
	}{
		{"MSG", 1, ack1},
		{"HMSG", 2, ack2},
		{"refusal passes", 3, ""},
	} {
		for n := 1; n <= len(serverSide); n++ {
			table := NewTable()
			up := LearnPublishes(table, intentOf)()
			if got := feed(up, clientSide, n); got != clientSide {
				t.Fatalf("%s, reads of %d: the learner changed the client's bytes", c.name, n)
			}
			var lost []Sent
			down := LosePubAcks(table, func(intent, attempt int) bool { return intent == c.intent && attempt == 1 },
				func(intent, attempt int) { lost = append(lost, Sent{intent, attempt}) })()
			got := feed(down, serverSide, n)
			if want := strings.Replace(serverSide, c.lost, "", 1); c.lost != "" && got != want {
				t.Fatalf("%s, reads of %d: passed\n%q\nwant\n%q", c.name, n, got, want)
			}
			if c.lost == "" {
				if got != serverSide || len(lost) != 0 {
					t.Fatalf("%s, reads of %d: lost %v, passed %q", c.name, n, lost, got)
				}
				continue
			}
			if len(lost) != 1 || lost[0] != (Sent{c.intent, 1}) {
				t.Fatalf("%s, reads of %d: lost %v, want intent %d's first send", c.name, n, lost, c.intent)
			}
		}
	}
}

// TestSendsAreCounted: a second publish of an intent is its second send,
// and only the chosen send's PubAck is lost.
func TestSendsAreCounted(t *testing.T) {
	table := NewTable()
	up := LearnPublishes(table, intentOf)()
	feed(up, pub("dqbench.v.00000001", "_INBOX.x.a", "a")+pub("dqbench.v.00000001", "_INBOX.x.b", "a"), 7)
	var lost []Sent
	down := LosePubAcks(table, func(_, attempt int) bool { return attempt == 2 }, func(i, a int) { lost = append(lost, Sent{i, a}) })()
	first := msg("_INBOX.x.a", `{"stream":"dqbench-v","seq":1}`)
	second := msg("_INBOX.x.b", `{"stream":"dqbench-v","seq":2}`)
	if got := feed(down, first+second, 5); got != first {
		t.Fatalf("passed %q, want only the first send's ack", got)
	}
	if len(lost) != 1 || lost[0] != (Sent{1, 2}) {
		t.Fatalf("lost %v, want intent 1's second send", lost)
	}
}

// TestLoseAcks: on reads of every size, the loser drops exactly the first
// ack of the chosen delivery (a plain ack, or a double ack with its reply
// subject), passes a nak, other deliveries' acks and everything else, and
// lets the same delivery's ack sent again through.
func TestLoseAcks(t *testing.T) {
	const (
		ackA = "$JS.ACK.dqbench-v.dqbench.1.7.7.1700000000.0"
		ackB = "$JS.ACK.dqbench-v.dqbench.2.8.9.1700000001.0"
	)
	chosen := pub(ackB, "_INBOX.z.1", "+ACK")
	again := pub(ackB, "_INBOX.z.2", "+ACK")
	stream := "PING\r\n" + pub(ackA, "", "-NAK") + pub(ackA, "", "+ACK") + chosen + pub("dqbench.v.00000009", "", "x") + again
	for n := 1; n <= len(stream); n++ {
		var acks Acks
		acks.Put(ackA, 7, 1)
		acks.Put(ackB, 8, 2)
		var lost []Sent
		f := LoseAcks(&acks, func(intent, attempt int) bool { return intent == 8 && attempt == 2 },
			func(intent, attempt int) { lost = append(lost, Sent{intent, attempt}) })()
		got := feed(f, stream, n)
		if want := strings.Replace(stream, chosen, "", 1); got != want {
			t.Fatalf("reads of %d: passed\n%q\nwant\n%q", n, got, want)
		}
		if len(lost) != 1 || lost[0] != (Sent{8, 2}) {
			t.Fatalf("reads of %d: lost %v, want intent 8's second delivery", n, lost)
		}
	}
}

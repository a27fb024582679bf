package mqtt

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func publish(topic string, id uint16, payload string) []byte {
	body := []byte{byte(len(topic) >> 8), byte(len(topic))}
	body = append(body, topic...)
	body = append(body, byte(id>>8), byte(id))
	body = append(body, payload...)
	return append([]byte{Publish<<4 | 1<<1, byte(len(body))}, body...)
}

func ack(t byte, id uint16) []byte { return []byte{t << 4, 2, byte(id >> 8), byte(id)} }

// TestFilterLosesTheChosenAck: PUBLISH packets teach the table which intent
// each packet id carries, even cut across reads; the chosen intent's PUBACK
// is dropped with the connection cut, the others pass byte for byte.
func TestFilterLosesTheChosenAck(t *testing.T) {
	table := NewTable()
	intent := func(topic string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimPrefix(topic, "dqbench/v/"))
		return n, err == nil
	}
	var lost []int
	rule := &Rule{Type: Puback, Fires: func(in, attempt int) bool { return in == 2 && attempt == 1 }, Lost: func(in int) { lost = append(lost, in) }}
	pubs := NewFilter(Config{Intent: intent, Table: table})()
	acks := NewFilter(Config{Intent: intent, Table: table, Rules: func() []*Rule { return []*Rule{rule} }})()

	stream := append(publish("dqbench/v/1", 7, "a"), publish("dqbench/v/2", 8, "b")...)
	var passed []byte
	for _, piece := range [][]byte{stream[:3], stream[3:17], stream[17:]} {
		out, cut := pubs.Filter(piece)
		if cut {
			t.Fatal("PUBLISH direction cut")
		}
		passed = append(passed, out...)
	}
	if !bytes.Equal(passed, stream) {
		t.Fatalf("PUBLISH stream changed:\n got %x\nwant %x", passed, stream)
	}

	out, cut := acks.Filter(ack(Puback, 7))
	if cut || !bytes.Equal(out, ack(Puback, 7)) {
		t.Fatalf("intent 1's PUBACK: out %x cut %v, want it passed", out, cut)
	}
	out, cut = acks.Filter(append(ack(Puback, 8), ack(Puback, 9)...))
	if !cut || len(out) != 0 {
		t.Fatalf("intent 2's PUBACK: out %x cut %v, want it dropped and the connection cut", out, cut)
	}
	if len(lost) != 1 || lost[0] != 2 {
		t.Errorf("lost %v, want [2]", lost)
	}
}

func TestPacketLen(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		n    int
		full bool
	}{
		{[]byte{0x40}, 0, false},
		{[]byte{0x40, 2}, 4, true},
		{[]byte{0x30, 0x80}, 0, false},
		{[]byte{0x30, 0x80, 0x01}, 3 + 128, true},
	} {
		n, ok := packetLen(tc.b)
		if n != tc.n || ok != tc.full {
			t.Errorf("packetLen(%x) = %d, %v; want %d, %v", tc.b, n, ok, tc.n, tc.full)
		}
	}
}

package amqp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"testing"
)

// frame builds one AMQP frame.
func frame(typ byte, channel uint16, payload []byte) []byte {
	b := []byte{typ}
	b = binary.BigEndian.AppendUint16(b, channel)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return append(b, frameEnd)
}

func methodFrame(channel, class, id uint16, args []byte) []byte {
	p := binary.BigEndian.AppendUint16(nil, class)
	p = binary.BigEndian.AppendUint16(p, id)
	return frame(frameMethod, channel, append(p, args...))
}

func short(s string) []byte { return append([]byte{byte(len(s))}, s...) }

// delivery is a basic.deliver of tag with a content header carrying
// message id and a dqbench-copy header, and its body in two frames.
func delivery(channel uint16, tag uint64, messageID string, body []byte) []byte {
	args := short("ctag")
	args = binary.BigEndian.AppendUint64(args, tag)
	args = append(args, 0)
	args = append(args, short("")...)
	args = append(args, short("q")...)
	out := methodFrame(channel, classBasic, methodDeliver, args)

	table := append(short("dqbench-copy"), 'S')
	table = binary.BigEndian.AppendUint32(table, 4)
	table = append(table, "p#"+messageID...)
	h := binary.BigEndian.AppendUint16(nil, classBasic)
	h = binary.BigEndian.AppendUint16(h, 0)
	h = binary.BigEndian.AppendUint64(h, uint64(len(body)))
	// content-type, headers, delivery-mode, message-id
	h = binary.BigEndian.AppendUint16(h, 1<<15|1<<13|1<<12|1<<7)
	h = append(h, short("application/json")...)
	h = binary.BigEndian.AppendUint32(h, uint32(len(table)))
	h = append(h, table...)
	h = append(h, 2)
	h = append(h, short(messageID)...)
	out = append(out, frame(frameHeader, channel, h)...)
	out = append(out, frame(frameBody, channel, body[:len(body)/2])...)
	return append(out, frame(frameBody, channel, body[len(body)/2:])...)
}

func ack(channel uint16, tag uint64, multiple bool) []byte {
	args := binary.BigEndian.AppendUint64(nil, tag)
	bits := byte(0)
	if multiple {
		bits = 1
	}
	return methodFrame(channel, classBasic, methodAck, append(args, bits))
}

// The watcher sees each delivery whole, however the stream is cut, before
// any of it passes; an ack with the multiple bit settles every tag up to
// its own; a delivery it refuses is withheld and the connection cut.
func TestWatcher(t *testing.T) {
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	down := slices.Concat(delivery(1, 1, "17", []byte(`{"intent":17}`)), delivery(1, 2, "18", []byte(`{"intent":18}`)),
		delivery(1, 3, "19", []byte(`{"intent":19}`)))
	up := slices.Concat(ack(1, 2, true), ack(1, 3, false))
	for _, chunk := range chunkings {
		var seen []Delivery
		var acked [][]string
		w := &Watcher{
			CopyHeader: "dqbench-copy",
			Delivered: func(r net.Addr, d Delivery) error {
				if r != remote {
					t.Errorf("delivery from %v", r)
				}
				seen = append(seen, d)
				return nil
			},
			Acked: func(_ net.Addr, ds []Delivery) error {
				var ids []string
				for _, d := range ds {
					ids = append(ids, d.MessageID)
				}
				acked = append(acked, ids)
				return nil
			},
		}
		upF, downF, closed := w.Filters(remote)
		out, cut := feed(downF, down, chunk)
		if cut || !bytes.Equal(out, down) {
			t.Fatalf("chunk %d: the deliveries did not pass unchanged (cut %v)", chunk, cut)
		}
		if len(seen) != 3 || seen[0].MessageID != "17" || seen[2].Tag != 3 || seen[1].Copy != "p#18" {
			t.Errorf("chunk %d: deliveries seen %+v", chunk, seen)
		}
		held, err := w.Backlog(func() (int, int, error) { return 5, 0, nil })
		if err != nil || held != 5+3 {
			t.Errorf("chunk %d: backlog %d (%v), want 5 ready + 3 held", chunk, held, err)
		}
		if out, cut := feed(upF, up, chunk); cut || !bytes.Equal(out, up) {
			t.Errorf("chunk %d: the acks did not pass unchanged (cut %v)", chunk, cut)
		}
		if want := [][]string{{"17", "18"}, {"19"}}; !slices.EqualFunc(acked, want, slices.Equal) {
			t.Errorf("chunk %d: acked %v, want %v", chunk, acked, want)
		}
		closed()
	}

	// A refused delivery: nothing of it passes and the connection is cut;
	// a refused ack is dropped and cuts too.
	refuse := errors.New("killed")
	w := &Watcher{Delivered: func(net.Addr, Delivery) error { return refuse }}
	_, downF, _ := w.Filters(remote)
	if out, cut := feed(downF, delivery(1, 1, "17", []byte("{}")), 3); !cut || len(out) != 0 {
		t.Errorf("refused delivery: forwarded %d bytes, cut %v", len(out), cut)
	}
	w = &Watcher{Acked: func(net.Addr, []Delivery) error { return refuse }}
	upF, downF, _ := w.Filters(remote)
	feed(downF, delivery(1, 1, "17", []byte("{}")), 1<<20)
	if out, cut := feed(upF, ack(1, 1, false), 1<<20); !cut || len(out) != 0 {
		t.Errorf("refused ack: forwarded %d bytes, cut %v", len(out), cut)
	}
}

package rabbitmq

import (
	"encoding/binary"
	"testing"
)

// frame builds one AMQP frame of type typ with payload p.
func frame(typ byte, p []byte) []byte {
	b := []byte{typ, 0, 1}
	b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
	b = append(b, p...)
	return append(b, 0xCE)
}

func method(class, id uint16, args ...byte) []byte {
	p := binary.BigEndian.AppendUint16(nil, class)
	p = binary.BigEndian.AppendUint16(p, id)
	return frame(1, append(p, args...))
}

// TestFrameCounter: basic.deliver frames are counted however the stream
// is cut into reads; other methods, headers, bodies and heartbeats not.
func TestFrameCounter(t *testing.T) {
	var stream []byte
	stream = append(stream, method(10, 10, 1, 2, 3)...)                    // connection.start
	stream = append(stream, method(60, 60, make([]byte, 40)...)...)        // basic.deliver
	stream = append(stream, frame(2, make([]byte, 14))...)                 // content header
	stream = append(stream, frame(3, []byte{60, 0, 60, 0, 60, 60, 60})...) // body that looks like a deliver
	stream = append(stream, frame(8, nil)...)                              // heartbeat
	stream = append(stream, method(60, 80, 0, 0, 0, 0, 0, 0, 0, 1, 0)...)  // basic.ack
	stream = append(stream, method(60, 60, make([]byte, 30)...)...)        // basic.deliver
	stream = append(stream, method(60, 61)...)                             // basic.get (never from a broker, but not a deliver)
	for _, chunk := range []int{1, 2, 3, 7, 11, 13, len(stream)} {
		f := &frameCounter{}
		for b := stream; len(b) > 0; {
			k := min(chunk, len(b))
			f.scan(b[:k])
			b = b[k:]
		}
		if got := f.delivers.Load(); got != 2 {
			t.Errorf("reads of %d bytes: %d delivers counted, want 2", chunk, got)
		}
		if f.n != 0 || f.skip != 0 {
			t.Errorf("reads of %d bytes: stopped inside a frame (n %d, skip %d)", chunk, f.n, f.skip)
		}
	}
}

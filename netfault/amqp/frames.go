// Package amqp holds the AMQP 0-9-1 side of dqbench's network fault layer:
// a frame splitter and the protocol-aware filters (netfault.Filter) that
// lose one chosen frame: a consumer's basic.ack (LoseAcks) or the broker's
// publisher confirm (LoseConfirms).
//
// A filter sees frames, not intents. The adapter knows which delivery tag
// or publish sequence number carries which intent, and tells the filter
// through a Tags table it shares with it.
package amqp

import "encoding/binary"

// Frame types and the methods the filters act on (AMQP 0-9-1, section 4.2
// and the class/method ids of the spec).
const (
	frameMethod = 1
	frameEnd    = 0xCE

	classBasic  = 60
	methodAck   = 80
	methodNack  = 120
	headerBytes = 7 // type, channel, payload size
)

// protocolHeader is what a client sends before any frame.
var protocolHeader = []byte("AMQP\x00\x00\x09\x01")

// Splitter cuts one direction of a connection into whole frames, however
// the stream was cut into reads.
type Splitter struct {
	buf     []byte
	started bool // the protocol header, if any, was passed
}

// Split adds b to what was held back and calls frame with each frame now
// complete (the client's protocol header counts as one), in order. A frame
// is only valid until Split returns. It returns how many bytes were held
// back (the start of a frame whose end has not arrived).
func (s *Splitter) Split(b []byte, frame func([]byte)) int {
	s.buf = append(s.buf, b...)
	at := 0
	if !s.started && len(s.buf) > 0 {
		if s.buf[0] == 'A' {
			if len(s.buf) < len(protocolHeader) {
				return len(s.buf)
			}
			frame(s.buf[:len(protocolHeader)])
			at = len(protocolHeader)
		}
		s.started = true
	}
	for len(s.buf)-at >= headerBytes {
		size := int(binary.BigEndian.Uint32(s.buf[at+3 : at+7]))
		n := headerBytes + size + 1
		if len(s.buf)-at < n {
			break
		}
		frame(s.buf[at : at+n])
		at += n
	}
	rest := len(s.buf) - at
	s.buf = append([]byte(nil), s.buf[at:]...)
	return rest
}

// method is a method frame's class and method ids and arguments; ok is
// false for any other frame.
func method(f []byte) (class, id uint16, args []byte, ok bool) {
	if len(f) < headerBytes+4+1 || f[0] != frameMethod {
		return 0, 0, nil, false
	}
	p := f[headerBytes : len(f)-1]
	return binary.BigEndian.Uint16(p[0:2]), binary.BigEndian.Uint16(p[2:4]), p[4:], true
}

// ackArgs reads basic.ack's or basic.nack's delivery tag and multiple bit
// (both methods start with them).
func ackArgs(args []byte) (tag uint64, multiple, ok bool) {
	if len(args) < 9 {
		return 0, false, false
	}
	return binary.BigEndian.Uint64(args[0:8]), args[8]&1 != 0, true
}

// ackFrame is a basic.ack (or basic.nack, with id and the nack's other
// bits kept from the frame it replaces) for one delivery tag on channel.
func ackFrame(channel uint16, id uint16, tag uint64, bits byte) []byte {
	b := []byte{frameMethod}
	b = binary.BigEndian.AppendUint16(b, channel)
	b = binary.BigEndian.AppendUint32(b, 4+8+1)
	b = binary.BigEndian.AppendUint16(b, classBasic)
	b = binary.BigEndian.AppendUint16(b, id)
	b = binary.BigEndian.AppendUint64(b, tag)
	return append(b, bits, frameEnd)
}

func channelOf(f []byte) uint16 { return binary.BigEndian.Uint16(f[1:3]) }

package kafka

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxFrame is the largest frame the filters read whole (Kafka's own limit
// on requests, socket.request.max.bytes, is 100 MiB by default; clients
// ask for fetches of 50 MiB at most). A size field above it, or below
// zero, means the stream is not what the filters take it for, and they
// pass it on unread from there.
const maxFrame = 64 << 20

// Splitter cuts one direction of a connection into Kafka frames (a
// big-endian int32 size, then that many bytes), however the stream was
// cut into reads.
type Splitter struct {
	buf []byte
}

// Split adds b to what was held back and calls frame with each frame now
// complete, in order, its size field included; a frame is only valid until
// Split returns. When frame returns false Split stops there, and the bytes
// after that frame stay held back. Split returns false when the next size
// field is not one a Kafka peer sends (below zero or above 64 MiB): the
// bytes from that field on stay held back, and the stream is not to be
// split any further (Rest hands them back).
func (s *Splitter) Split(b []byte, frame func(f []byte) bool) bool {
	s.buf = append(s.buf, b...)
	at, ok := 0, true
	for len(s.buf)-at >= 4 {
		size := int32(binary.BigEndian.Uint32(s.buf[at:]))
		if size < 0 || size > maxFrame {
			ok = false
			break
		}
		n := 4 + int(size)
		if len(s.buf)-at < n {
			break
		}
		f := s.buf[at : at+n]
		at += n
		if !frame(f) {
			break
		}
	}
	switch {
	case at == len(s.buf):
		s.buf = nil // the next read's bytes start a fresh array
	case at > 0:
		s.buf = append([]byte(nil), s.buf[at:]...)
	}
	return ok
}

// Rest returns the bytes held back followed by b, and forgets them.
func (s *Splitter) Rest(b []byte) []byte {
	if len(s.buf) == 0 {
		return b
	}
	rest := append(s.buf, b...)
	s.buf = nil
	return rest
}

// Header is what a request's header says. A response carries only the
// correlation id; the filters give it its request's header.
type Header struct {
	Key           kmsg.Key
	Version       int16
	CorrelationID int32
	ClientID      string // "" when null
}

// readRequest reads the header of a request frame (size field included).
// body is the request's body, nil when kmsg does not know the key (then
// whether the header has a tagged-field section is not known either). ok
// is false when f is too short for a header or its fields make no sense.
func readRequest(f []byte) (h Header, body []byte, ok bool) {
	// size, key, version, correlation id, client id's length
	if len(f) < 4+2+2+4+2 {
		return Header{}, nil, false
	}
	p := f[4:]
	h.Key = kmsg.Key(binary.BigEndian.Uint16(p[0:]))
	h.Version = int16(binary.BigEndian.Uint16(p[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(p[4:]))
	if h.Key == kmsg.ControlledShutdown && h.Version == 0 {
		return h, p[8:], true // request header v0: no client id
	}
	n := int(int16(binary.BigEndian.Uint16(p[8:])))
	p = p[10:]
	switch {
	case h.Key < 0 || h.Version < 0 || n < -1 || n > len(p):
		return Header{}, nil, false
	case n >= 0:
		h.ClientID = string(p[:n])
		p = p[n:]
	}
	req := h.Key.Request()
	if req == nil {
		return h, nil, true
	}
	req.SetVersion(h.Version)
	if req.IsFlexible() {
		r := kbin.Reader{Src: p}
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return Header{}, nil, false
		}
		p = r.Src
	}
	return h, p, true
}

// correlationID reads a response frame's correlation id; false when f is
// too short to have one.
func correlationID(f []byte) (int32, bool) {
	if len(f) < 8 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(f[4:])), true
}

// responseHeaderLen is the length of a response frame's size field and
// header: the correlation id and, for a flexible version (except
// ApiVersions, whose response header is always version 0), a tagged-field
// section. false when the section cannot be read.
func responseHeaderLen(resp kmsg.Response, f []byte) (int, bool) {
	if !resp.IsFlexible() || resp.Key() == int16(kmsg.ApiVersions) {
		return 8, true
	}
	r := kbin.Reader{Src: f[8:]}
	kmsg.SkipTags(&r)
	if !r.Ok() {
		return 0, false
	}
	return len(f) - len(r.Src), true
}

// decode reads a request's body with kmsg at the header's version; nil
// when kmsg does not know the key or the version, or cannot read it. The
// request's byte slices (a produce request's records) point into body.
func decode(h Header, body []byte) kmsg.Request {
	req := h.Key.Request()
	if req == nil || body == nil || h.Version > req.MaxVersion() {
		return nil
	}
	req.SetVersion(h.Version)
	if req.ReadFrom(body) != nil {
		return nil
	}
	return req
}

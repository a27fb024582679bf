package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The client's side of one connection and the broker's: an ApiVersions
// v3 (flexible, but answered with a v0 response header), a Metadata v12,
// a produce v9 of intents 1 and 2 (acks all), a produce of intent 3 with
// acks 0 (never answered), a FindCoordinator v4 and an OffsetCommit v8;
// and the broker's answers, in order. Correlation ids from 0, as a client
// numbers them.
var (
	clientFrames = [][]byte{
		request(kmsg.NewPtrApiVersionsRequest(), 3, 0),
		request(kmsg.NewPtrMetadataRequest(), 12, 1),
		request(produceRequest(-1, "1", "2"), 9, 2),
		request(produceRequest(0, "3"), 9, 3),
		request(findCoordinatorRequest("g"), 4, 4),
		request(offsetCommitRequest("g"), 8, 5),
	}
	brokerFrames = [][]byte{
		response(kmsg.NewPtrApiVersionsResponse(), 3, 0, nil),
		response(metadataResponse(), 12, 1, taggedHeader),
		response(kmsg.NewPtrProduceResponse(), 9, 2, nil),
		response(findCoordinatorResponse(), 4, 4, nil),
		response(kmsg.NewPtrOffsetCommitResponse(), 8, 5, nil),
	}
	clientSide = bytes.Join(clientFrames, nil)
	brokerSide = bytes.Join(brokerFrames, nil)
)

// taggedHeader is a response header's tagged-field section with one tag
// (7, two bytes), which a rewrite keeps.
var taggedHeader = []byte{1, 7, 2, 0xAB, 0xCD}

// request frames req at version with correlation id, as a client writes it.
func request(req kmsg.Request, version int16, id int32) []byte {
	req.SetVersion(version)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("dqbench-test")).AppendRequest(nil, req, id)
}

// response frames resp at version with correlation id, as a broker writes
// it: with a tagged-field section in the header (tags, or an empty one)
// when the version is flexible, except for ApiVersions.
func response(resp kmsg.Response, version int16, id int32, tags []byte) []byte {
	resp.SetVersion(version)
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(id))
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		if tags == nil {
			tags = []byte{0}
		}
		b = append(b, tags...)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// batch is an uncompressed record batch of records with keys.
func batch(keys ...string) []byte {
	var recs []byte
	for i, k := range keys {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte(k), Value: []byte("v")}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // less the 1-byte length itself
		recs = r.AppendTo(recs)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.NumRecords = int32(len(keys))
	b.LastOffsetDelta = int32(len(keys) - 1)
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.Records = recs
	b.Length = int32(49 + len(recs))
	return b.AppendTo(nil)
}

func produceRequest(acks int16, keys ...string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "dqbench-v"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = batch(keys...)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func findCoordinatorRequest(group string) *kmsg.FindCoordinatorRequest {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group
	req.CoordinatorKeys = []string{group}
	return req
}

func offsetCommitRequest(group string) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	return req
}

// brokers names three brokers on 10.0.0.1-3:9092, nodes 1-3.
func metadataResponse() *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	for n := int32(1); n <= 3; n++ {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = n, fmt.Sprintf("10.0.0.%d", n), 9092
		resp.Brokers = append(resp.Brokers, b)
	}
	resp.ControllerID = 1
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = kmsg.StringPtr("dqbench-v")
	p := kmsg.NewMetadataResponseTopicPartition()
	p.Leader, p.Replicas, p.ISR = 2, []int32{2}, []int32{2}
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp
}

// findCoordinatorResponse names node 2 for group g, and none (an error)
// for group h.
func findCoordinatorResponse() *kmsg.FindCoordinatorResponse {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Host, c.Port = "g", 2, "10.0.0.2", 9092
	none := kmsg.NewFindCoordinatorResponseCoordinator()
	none.Key, none.NodeID, none.Port, none.ErrorCode = "h", -1, -1, 15
	resp.Coordinators = append(resp.Coordinators, c, none)
	return resp
}

// feed passes stream through f in reads of size n.
func feed(f interface {
	Filter([]byte) ([]byte, bool)
}, stream []byte, n int) (out []byte, cut bool) {
	for b := stream; len(b) > 0 && !cut; {
		k := min(n, len(b))
		var o []byte
		o, cut = f.Filter(bytes.Clone(b[:k])) // the relay reuses its buffer
		out = append(out, o...)
		b = b[k:]
	}
	return out, cut
}

// frames cuts a whole stream into frames.
func frames(t *testing.T, stream []byte) [][]byte {
	t.Helper()
	var s Splitter
	var out [][]byte
	if !s.Split(stream, func(f []byte) bool { out = append(out, bytes.Clone(f)); return true }) || len(s.buf) != 0 {
		t.Fatalf("the stream does not end with a whole frame (%d bytes left)", len(s.buf))
	}
	return out
}

// TestSplitterOnSplitReads: whatever the size of the reads, the frames
// come out whole and in order, and a frame's start is held back until its
// end arrives.
func TestSplitterOnSplitReads(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 7, 13, 64, len(clientSide)} {
		var s Splitter
		var got [][]byte
		for i := 0; i < len(clientSide); i += n {
			if !s.Split(clientSide[i:min(i+n, len(clientSide))], func(f []byte) bool {
				got = append(got, bytes.Clone(f))
				return true
			}) {
				t.Fatalf("reads of %d: the splitter gave up", n)
			}
		}
		if len(got) != len(clientFrames) {
			t.Fatalf("reads of %d: %d frames, want %d", n, len(got), len(clientFrames))
		}
		for i := range got {
			if !bytes.Equal(got[i], clientFrames[i]) {
				t.Errorf("reads of %d: frame %d differs", n, i)
			}
		}
		if len(s.buf) != 0 {
			t.Errorf("reads of %d: %d bytes held back after the last frame", n, len(s.buf))
		}
	}
}

// TestSplitterStops: a frame callback that says stop leaves the frames
// after it held back, and Rest hands them back with what follows.
func TestSplitterStops(t *testing.T) {
	var s Splitter
	calls := 0
	s.Split(clientSide, func([]byte) bool { calls++; return false })
	if calls != 1 {
		t.Fatalf("%d calls after a stop, want 1", calls)
	}
	if rest := s.Rest([]byte("x")); !bytes.Equal(rest, append(bytes.Join(clientFrames[1:], nil), 'x')) {
		t.Fatal("Rest did not hand back the frames after the stop")
	}
	if len(s.buf) != 0 {
		t.Fatal("Rest kept bytes")
	}
}

func TestReadRequest(t *testing.T) {
	for _, c := range []struct {
		name  string
		frame []byte
		want  Header
		ok    bool
	}{
		{"flexible", clientFrames[1], Header{kmsg.Metadata, 12, 1, "dqbench-test"}, true},
		{"not flexible", request(kmsg.NewPtrOffsetCommitRequest(), 7, 9), Header{kmsg.OffsetCommit, 7, 9, "dqbench-test"}, true},
		{"null client id", nullClientID(request(kmsg.NewPtrHeartbeatRequest(), 3, 4)), Header{kmsg.Heartbeat, 3, 4, ""}, true},
		{"unknown key", rawRequest(999, 0, 5, "c"), Header{999, 0, 5, "c"}, true},
		{"too short", []byte{0, 0, 0, 3, 0, 3, 0}, Header{}, false},
		{"negative key", rawRequest(-2, 0, 5, "c"), Header{}, false},
		{"client id past the end", rawRequest(3, 0, 5, "c")[:14], Header{}, false},
	} {
		h, _, ok := readRequest(c.frame)
		if h != c.want || ok != c.ok {
			t.Errorf("%s: readRequest = %+v %v, want %+v %v", c.name, h, ok, c.want, c.ok)
		}
	}
}

// rawRequest is a request frame with the given header fields and no body.
func rawRequest(key, version int16, id int32, client string) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(id))
	b = binary.BigEndian.AppendUint16(b, uint16(len(client)))
	b = append(b, client...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// nullClientID rewrites a non-flexible request's client id to null.
func nullClientID(f []byte) []byte {
	n := int(binary.BigEndian.Uint16(f[12:]))
	g := append(append(bytes.Clone(f[:12]), 0xFF, 0xFF), f[14+n:]...)
	binary.BigEndian.PutUint32(g, uint32(len(g)-4))
	return g
}

// seen is an Event in short, for comparing traces.
type seen struct {
	key      kmsg.Key
	id       int32
	response bool
	fate     Fate
}

func (s seen) String() string {
	dir := "request"
	if s.response {
		dir = "response"
	}
	return s.key.Name() + "#" + strconv.Itoa(int(s.id)) + " " + dir + " " + s.fate.String()
}

// trace collects the events of a filter set, in short.
type trace struct{ events []seen }

func (tr *trace) observe(e Event) {
	tr.events = append(tr.events, seen{e.Key, e.CorrelationID, e.Response, e.Fate})
}

// TestPassThrough: with nothing to rewrite or lose, on reads of every
// size, both directions pass their bytes unchanged, and every request and
// every response to a request seen (not the acks-0 produce's, which has
// none) is observed with its request's key.
func TestPassThrough(t *testing.T) {
	want := []seen{
		{kmsg.ApiVersions, 0, false, Passed}, {kmsg.Metadata, 1, false, Passed},
		{kmsg.Produce, 2, false, Passed}, {kmsg.Produce, 3, false, Passed},
		{kmsg.FindCoordinator, 4, false, Passed}, {kmsg.OffsetCommit, 5, false, Passed},
		{kmsg.ApiVersions, 0, true, Passed}, {kmsg.Metadata, 1, true, Passed},
		{kmsg.Produce, 2, true, Passed}, {kmsg.FindCoordinator, 4, true, Passed},
		{kmsg.OffsetCommit, 5, true, Passed},
	}
	for n := 1; n <= len(brokerSide); n += max(1, n/4) {
		var tr trace
		fs := &Filters{Observe: tr.observe}
		up, down, _ := fs.Conn(nil)
		if got, cut := feed(up, clientSide, n); !bytes.Equal(got, clientSide) || cut {
			t.Fatalf("reads of %d: the client's bytes changed (cut %v)", n, cut)
		}
		if got, cut := feed(down, brokerSide, n); !bytes.Equal(got, brokerSide) || cut {
			t.Fatalf("reads of %d: the broker's bytes changed (cut %v)", n, cut)
		}
		if fmt.Sprint(tr.events) != fmt.Sprint(want) {
			t.Fatalf("reads of %d: observed\n%v\nwant\n%v", n, tr.events, want)
		}
	}
}

// TestGiveUp: a size field a Kafka peer never sends, or a header that
// cannot be read, makes the filter pass everything from there on unread,
// in both directions, and never cut; so does a SaslHandshake v0, after
// which raw SASL tokens flow.
func TestGiveUp(t *testing.T) {
	huge := binary.BigEndian.AppendUint32(nil, maxFrame+1)
	for _, c := range []struct {
		name string
		bad  []byte
	}{
		{"negative size", []byte{0xFF, 0xFF, 0xFF, 0xF0, 1, 2, 3}},
		{"size above 64 MiB", append(huge, "and a little more"...)},
		{"short header", []byte{0, 0, 0, 2, 0, 3}},
		{"negative version", rawRequest(3, -1, 7, "c")},
		{"SaslHandshake v0", append(request(kmsg.NewPtrSASLHandshakeRequest(), 0, 6), 0, 0, 0, 1, 'x')},
	} {
		for _, n := range []int{1, 5, 1 << 20} {
			var tr trace
			fs := &Filters{Observe: tr.observe, Rewrite: func(int32, string, int32) (string, int32) { return "proxy", 1 }}
			up, down, _ := fs.Conn(nil)
			// The connection's first requests, then the bad bytes and more
			// requests: all pass unchanged.
			stream := bytes.Join([][]byte{clientFrames[0], clientFrames[1], c.bad, clientFrames[4]}, nil)
			if got, cut := feed(up, stream, n); !bytes.Equal(got, stream) || cut {
				t.Fatalf("%s, reads of %d: the client's bytes changed (cut %v)", c.name, n, cut)
			}
			// The broker's answers pass unread too: the metadata
			// response is not rewritten.
			answers := bytes.Join(brokerFrames[:2], nil)
			if got, cut := feed(down, answers, n); !bytes.Equal(got, answers) || cut {
				t.Fatalf("%s, reads of %d: the broker's bytes changed (cut %v)", c.name, n, cut)
			}
			for _, e := range tr.events {
				if e.response {
					t.Fatalf("%s, reads of %d: a response was read after the filter gave up: %v", c.name, n, e)
				}
			}
		}
	}
}

// FuzzFilters: whatever the bytes and however they are cut into reads, the
// filters do not panic; with nothing to rewrite or lose they forward a
// prefix of the stream, and hold back only the start of a frame not yet
// complete. The filters of a busy set (rewriting, losing produce
// responses, with rules) are fed a connection's real start first, so that
// the fuzzed bytes meet requests awaiting responses.
func FuzzFilters(f *testing.F) {
	f.Add(clientSide, uint8(1))
	f.Add(brokerSide, uint8(3))
	f.Add(append(bytes.Clone(clientFrames[1]), 0xFF, 0xFF, 0xFF, 0xFF), uint8(7))
	f.Add(append(bytes.Clone(brokerFrames[1][:40]), brokerFrames[3]...), uint8(2))
	f.Add(rawRequest(3, 12, 1, "c"), uint8(0))
	f.Add(binary.BigEndian.AppendUint32(nil, maxFrame+1), uint8(4))
	f.Fuzz(func(t *testing.T, stream []byte, piece uint8) {
		n := int(piece) + 1
		for _, plain := range []*Filters{{}, {Observe: func(Event) {}}} {
			up, down, _ := plain.Conn(nil)
			for _, d := range []interface {
				Filter([]byte) ([]byte, bool)
			}{up, down} {
				out, cut := feed(d, stream, n)
				held := 0
				switch d := d.(type) {
				case *upFilter:
					held = len(d.s.buf)
				case *downFilter:
					held = len(d.s.buf)
				}
				if cut || !bytes.Equal(out, stream[:len(out)]) || len(out)+held != len(stream) {
					t.Fatalf("a plain filter forwarded %d bytes of %d, held %d, cut %v", len(out), len(stream), held, cut)
				}
			}
		}
		busy := &Filters{
			Rewrite:     func(_ int32, host string, port int32) (string, int32) { return host + ".proxy", port + 1 },
			LoseProduce: &LoseProduce{Intent: intentOf, Fires: func(_, a int) bool { return a == 1 }, Lost: func([]int) {}},
			Rules:       []Rule{{Key: kmsg.OffsetCommit, Action: DropResponse}, {Key: kmsg.Metadata, Action: CutAfterRequest, When: func(r Request) bool { return r.Seen > 2 }}},
			Observe:     func(Event) {},
		}
		up, down, _ := busy.Conn(nil)
		feed(up, clientSide, len(clientSide))
		feed(up, stream, n)
		feed(down, stream, n)
	})
}

func intentOf(key []byte) (int, bool) {
	n, err := strconv.Atoi(string(key))
	return n, err == nil && n > 0
}

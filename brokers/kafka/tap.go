package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dqbench/dqbench/brokers"
)

// The tap sees every request and response on the embedded broker's client
// connections: kfake accepts them on a listener dqbench gives it
// (kfake.ListenFn), so each connection is dqbench's net.Conn around the
// real one. For a topic a process variant watches, it decodes the fetch
// responses (which records go to which connection) and the offset commits
// (which records a consumer commits), before kfake writes or reads them, so
// a consumer outside dqbench can be killed at the exact point. kfake reads a
// request as a 4-byte size and a body, and writes each response with one
// Write, which is what the conn below relies on.
type tap struct {
	n       atomic.Int32 // watched topics; 0: pass everything through
	mu      sync.Mutex
	byName  map[string]*watched
	byID    map[[16]byte]*watched
	byGroup map[string]*watched
}

// watched is one topic a process variant watches.
type watched struct {
	w brokers.ConsumerWatch

	mu        sync.Mutex
	intents   map[int32]map[int64]int // partition → offset → intent, from the records fetched
	committed map[int32]int64         // partition → the group's last commit seen
}

func newTap() *tap {
	return &tap{byName: map[string]*watched{}, byID: map[[16]byte]*watched{}, byGroup: map[string]*watched{}}
}

// watch starts watching topic (id is its topic id, which newer requests
// name it by).
func (t *tap) watch(topic, group string, id [16]byte, w brokers.ConsumerWatch) {
	wt := &watched{w: w, intents: map[int32]map[int64]int{}, committed: map[int32]int64{}}
	t.mu.Lock()
	t.byName[topic] = wt
	t.byGroup[group] = wt
	if id != ([16]byte{}) {
		t.byID[id] = wt
	}
	t.mu.Unlock()
	t.n.Add(1)
}

// connected tells every watch of a new connection.
func (t *tap) connected(remote net.Addr) {
	t.mu.Lock()
	ws := make([]*watched, 0, len(t.byName))
	for _, w := range t.byName {
		ws = append(ws, w)
	}
	t.mu.Unlock()
	for _, w := range ws {
		if w.w.Connected != nil {
			w.w.Connected(remote)
		}
	}
}

func (t *tap) lookup(name string, id [16]byte) *watched {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.byName[name]; name != "" && w != nil {
		return w
	}
	return t.byID[id]
}

// listen is kfake's ListenFn.
func (t *tap) listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return tapListener{Listener: ln, t: t}, nil
}

type tapListener struct {
	net.Listener
	t *tap
}

func (l tapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.t.n.Load() > 0 {
		l.t.connected(c.RemoteAddr())
	}
	return &tapConn{Conn: c, t: l.t, fetches: map[int32]int16{}, from: map[*watched]map[int32]int64{}}, nil
}

// errWithheld closes a connection whose request or response a watch
// withheld.
var errWithheld = errors.New("withheld by dqbench")

// tapConn is one client connection to kfake.
type tapConn struct {
	net.Conn
	t *tap

	pending []byte // the request being handed to kfake

	mu      sync.Mutex
	fetches map[int32]int16 // correlation id → version of a fetch in flight
	// from is where this connection's fetches of watched partitions
	// start: a response carries whole batches, and the client drops the
	// records before its fetch offset, so those are not delivered. A
	// fetch session omits a partition whose offset did not change.
	from map[*watched]map[int32]int64
}

// Read hands kfake one whole request at a time, after the tap has seen it.
func (c *tapConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		frame, err := readFrame(c.Conn)
		if err != nil {
			return 0, err
		}
		if c.t.n.Load() > 0 {
			if err := c.request(frame[4:]); err != nil {
				c.Conn.Close()
				return 0, err
			}
		}
		c.pending = frame
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// Write lets the tap see each response before it goes out.
func (c *tapConn) Write(p []byte) (int, error) {
	if c.t.n.Load() > 0 && len(p) >= 8 {
		if err := c.response(p); err != nil {
			c.Conn.Close()
			return 0, err
		}
	}
	return c.Conn.Write(p)
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<30 {
		return nil, fmt.Errorf("kafka request of %d bytes", n)
	}
	frame := make([]byte, 4+int(n))
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// request looks at one request body: it remembers fetches (to read their
// responses) and shows offset commits of watched topics to their watch.
func (c *tapConn) request(body []byte) error {
	r := kbin.Reader{Src: body}
	key, version, corr := r.Int16(), r.Int16(), r.Int32()
	r.NullableString() // client id
	switch kmsg.Key(key) {
	case kmsg.Fetch, kmsg.OffsetCommit, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat:
	default:
		return nil
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if r.Complete() != nil || req.ReadFrom(r.Src) != nil {
		return nil // kfake answers what it cannot read
	}
	if fetch, ok := req.(*kmsg.FetchRequest); ok {
		c.fetching(corr, fetch)
		return nil
	}
	group, member := groupMember(req)
	c.t.mu.Lock()
	w := c.t.byGroup[group]
	c.t.mu.Unlock()
	if w != nil && member != "" && w.w.Member != nil {
		w.w.Member(c.RemoteAddr(), member)
	}
	commit, ok := req.(*kmsg.OffsetCommitRequest)
	if !ok {
		return nil
	}
	for _, t := range commit.Topics {
		w := c.t.lookup(t.Topic, t.TopicID)
		if w == nil {
			continue
		}
		if err := w.committing(c.RemoteAddr(), t.Partitions); err != nil {
			return err
		}
	}
	return nil
}

// fetching notes a fetch request: its version, to read its response, and
// where it starts in each watched partition.
// groupMember is the group and member id a group request names; empty
// for any other request.
func groupMember(req kmsg.Request) (group, member string) {
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		return req.Group, req.MemberID
	case *kmsg.SyncGroupRequest:
		return req.Group, req.MemberID
	case *kmsg.HeartbeatRequest:
		return req.Group, req.MemberID
	case *kmsg.OffsetCommitRequest:
		return req.Group, req.MemberID
	}
	return "", ""
}

func (c *tapConn) fetching(corr int32, req *kmsg.FetchRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetches[corr] = req.Version
	for _, t := range req.Topics {
		w := c.t.lookup(t.Topic, t.TopicID)
		if w == nil {
			continue
		}
		if c.from[w] == nil {
			c.from[w] = map[int32]int64{}
		}
		for _, p := range t.Partitions {
			c.from[w][p.Partition] = p.FetchOffset
		}
	}
}

// committing shows a commit's newly committed records to the watch and,
// unless it withholds the commit, notes the commit.
func (w *watched) committing(remote net.Addr, parts []kmsg.OffsetCommitRequestTopicPartition) error {
	var ds []brokers.Delivery
	w.mu.Lock()
	for _, p := range parts {
		from := w.committed[p.Partition]
		var offsets []int64
		for o := range w.intents[p.Partition] {
			if o >= from && o < p.Offset {
				offsets = append(offsets, o)
			}
		}
		slices.Sort(offsets)
		for _, o := range offsets {
			ds = append(ds, brokers.Delivery{Intent: w.intents[p.Partition][o], Position: position(p.Partition, o)})
		}
	}
	w.mu.Unlock()
	if err := w.w.Committing(remote, ds); err != nil {
		return err
	}
	w.mu.Lock()
	for _, p := range parts {
		if p.Offset > w.committed[p.Partition] {
			w.committed[p.Partition] = p.Offset
		}
	}
	w.mu.Unlock()
	return nil
}

// response looks at one response frame: a fetch response carrying a
// watched topic goes to its watch before it is written.
func (c *tapConn) response(frame []byte) error {
	corr := int32(binary.BigEndian.Uint32(frame[4:8]))
	c.mu.Lock()
	version, ok := c.fetches[corr]
	delete(c.fetches, corr)
	c.mu.Unlock()
	if !ok {
		return nil
	}
	resp, ok := readFetchResponse(frame, version)
	if !ok {
		return nil
	}
	for _, t := range resp.Topics {
		w := c.t.lookup(t.Topic, t.TopicID)
		if w == nil {
			continue
		}
		c.mu.Lock()
		from := maps.Clone(c.from[w])
		c.mu.Unlock()
		if err := w.w.Fetched(c.RemoteAddr(), w.fetched(t.Partitions, from)); err != nil {
			return err
		}
	}
	return nil
}

// readFetchResponse reads a fetch response frame (size field included)
// at its request's version.
func readFetchResponse(frame []byte, version int16) (*kmsg.FetchResponse, bool) {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	body := frame[8:]
	if resp.IsFlexible() {
		if len(body) == 0 {
			return nil, false
		}
		body = body[1:] // the header's empty tagged fields
	}
	if resp.ReadFrom(body) != nil {
		return nil, false
	}
	return resp, true
}

// fetched decodes the records of a fetch response's partitions from the
// fetch offsets on and notes where each intent is.
func (w *watched) fetched(parts []kmsg.FetchResponseTopicPartition, from map[int32]int64) []brokers.Delivery {
	var ds []brokers.Delivery
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range parts {
		eachRecord(p.RecordBatches, func(offset int64, r *kmsg.Record) {
			intent, err := brokers.ParseKey(string(r.Key))
			if err != nil || offset < from[p.Partition] {
				return
			}
			if w.intents[p.Partition] == nil {
				w.intents[p.Partition] = map[int64]int{}
			}
			w.intents[p.Partition][offset] = intent
			ds = append(ds, brokers.Delivery{Intent: intent, Body: slices.Clone(r.Value), Position: position(p.Partition, offset)})
		})
	}
	return ds
}

// eachRecord calls fn with every record of the uncompressed, non-control
// batches in raw (a fetch response may end with a partial batch).
func eachRecord(raw []byte, fn func(offset int64, r *kmsg.Record)) {
	for len(raw) >= 12 {
		length := int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if length <= 0 || 12+length > len(raw) {
			return
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:12+length]); err == nil && b.Attributes&0x0007 == 0 && b.Attributes&0x0020 == 0 {
			recs := b.Records
			for range b.NumRecords {
				var r kmsg.Record
				if err := r.ReadFrom(recs); err != nil {
					break
				}
				fn(b.FirstOffset+int64(r.OffsetDelta), &r)
				n, sz := binary.Varint(recs)
				if sz <= 0 || int(n)+sz > len(recs) {
					break
				}
				recs = recs[int(n)+sz:]
			}
		}
		raw = raw[12+length:]
	}
}

func position(partition int32, offset int64) string { return fmt.Sprintf("%d@%d", partition, offset) }

package netfault

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// Filter sees one direction of one proxied connection as a stream of
// bytes, in the pieces the proxy reads them, and says what reaches the
// other side. A protocol's filter cuts the stream into its frames (holding
// back a frame's start until its end arrives) and acts on whole frames:
// passes, drops or rewrites them.
type Filter interface {
	// Filter takes the next bytes read and returns those to forward; cut
	// breaks the connection after forwarding them (the server sees the
	// client go away, nothing more passes in this direction).
	Filter(b []byte) (out []byte, cut bool)
}

// NewFilter makes the Filter of one connection.
type NewFilter func() Filter

// filterToxicType is the toxiproxy toxic type that runs Filters; its one
// attribute names the filter in the registry.
const filterToxicType = "dqbench-filter"

// The registry of protocol-aware filters. Toxiproxy builds a toxic from its
// type name and JSON attributes, so a filter (a Go value, with the shared
// tables and callbacks of the run) is registered here and named in the
// toxic's attributes.
var filters registry

type registry struct {
	mu   sync.Mutex
	m    map[string]NewFilter
	next atomic.Int64
}

func (r *registry) add(f NewFilter) string {
	id := "f" + strconv.FormatInt(r.next.Add(1), 10)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]NewFilter{}
	}
	r.m[id] = f
	return id
}

func (r *registry) get(id string) NewFilter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id]
}

func (r *registry) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

var registerOnce sync.Once

// registerToxics adds the filter toxic to toxiproxy's registry of toxic
// types (a process-wide map in package toxics).
func registerToxics() {
	registerOnce.Do(func() { toxics.Register(filterToxicType, new(filterToxic)) })
}

// filterToxic runs a registered Filter on each connection.
type filterToxic struct {
	Filter string `json:"filter"`
}

var (
	_ toxics.Toxic         = (*filterToxic)(nil)
	_ toxics.StatefulToxic = (*filterToxic)(nil)
)

// filterState is one connection's: its Filter and whether it was cut.
type filterState struct {
	f   Filter
	cut bool
}

func (t *filterToxic) NewState() any { return new(filterState) }

// Pipe passes what the filter returns. After a cut it closes its output
// (the proxy then closes the connection to the receiving side) and keeps
// reading its input until it ends, so the proxy's reader never blocks.
func (t *filterToxic) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*filterState)
	if st.f == nil {
		if nf := filters.get(t.Filter); nf != nil {
			st.f = nf()
		}
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if st.cut {
				continue
			}
			out, cut := c.Data, false
			if st.f != nil {
				out, cut = st.f.Filter(c.Data)
			}
			if len(out) > 0 {
				stub.Output <- &stream.StreamChunk{Data: out, Timestamp: c.Timestamp}
			}
			if cut {
				st.cut = true
				stub.Close()
			}
		}
	}
}

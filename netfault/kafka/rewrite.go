package kafka

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// namesBrokers says whether the response to a request with header h can
// name brokers a client dials: the cluster's (Metadata, DescribeCluster),
// a coordinator (FindCoordinator: one before v4, a list from v4), or a
// partition's new leader (KIP-951: Produce from v10, Fetch from v16, and
// the share-group requests).
func namesBrokers(h Header) bool {
	switch h.Key {
	case kmsg.Metadata, kmsg.FindCoordinator, kmsg.DescribeCluster, kmsg.ShareFetch, kmsg.ShareAcknowledge:
		return true
	case kmsg.Produce:
		return h.Version >= 10
	case kmsg.Fetch:
		return h.Version >= 16
	}
	return false
}

// rewrite returns response frame f (to a request with header h) with its
// broker addresses rewritten, re-encoded at its version, its header and
// size field kept and fixed; false, when Rewrite is not set, f names no
// broker, Rewrite changed none, or kmsg cannot read f.
func (fs *Filters) rewrite(h Header, f []byte) ([]byte, bool) {
	if fs.Rewrite == nil || !namesBrokers(h) {
		return nil, false
	}
	resp := h.Key.Response()
	if resp == nil || h.Version > resp.MaxVersion() {
		return nil, false
	}
	resp.SetVersion(h.Version)
	n, ok := responseHeaderLen(resp, f)
	if !ok || resp.ReadFrom(f[n:]) != nil || !rewriteBrokers(resp, fs.Rewrite) {
		return nil, false
	}
	g := resp.AppendTo(append(make([]byte, 0, len(f)+64), f[:n]...))
	binary.BigEndian.PutUint32(g, uint32(len(g)-4))
	return g, true
}

// rewriteBrokers applies to each broker entry of resp (but those naming
// node -1: no broker, as with an error); false when it changed none.
func rewriteBrokers(resp kmsg.Response, to func(int32, string, int32) (string, int32)) bool {
	changed := false
	set := func(node int32, host *string, port *int32) {
		if node < 0 {
			return
		}
		if h, p := to(node, *host, *port); h != *host || p != *port {
			*host, *port = h, p
			changed = true
		}
	}
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			b := &r.Brokers[i]
			set(b.NodeID, &b.Host, &b.Port)
		}
	case *kmsg.FindCoordinatorResponse:
		if r.Version < 4 {
			set(r.NodeID, &r.Host, &r.Port)
		}
		for i := range r.Coordinators {
			c := &r.Coordinators[i]
			set(c.NodeID, &c.Host, &c.Port)
		}
	case *kmsg.DescribeClusterResponse:
		for i := range r.Brokers {
			b := &r.Brokers[i]
			set(b.NodeID, &b.Host, &b.Port)
		}
	case *kmsg.ProduceResponse:
		for i := range r.Brokers {
			b := &r.Brokers[i]
			set(b.NodeID, &b.Host, &b.Port)
		}
	case *kmsg.FetchResponse:
		for i := range r.Brokers {
			b := &r.Brokers[i]
			set(b.NodeID, &b.Host, &b.Port)
		}
	case *kmsg.ShareFetchResponse:
		for i := range r.NodeEndpoints {
			b := &r.NodeEndpoints[i]
			set(b.NodeID, &b.Host, &b.Port)
		}
	case *kmsg.ShareAcknowledgeResponse:
		for i := range r.NodeEndpoints {
			b := &r.NodeEndpoints[i]
			set(b.NodeID, &b.Host, &b.Port)
		}
	}
	return changed
}

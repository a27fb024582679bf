package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// toProxy sends node n to proxy-n:1000n.
func toProxy(node int32, _ string, _ int32) (string, int32) {
	return fmt.Sprintf("proxy-%d", node), 10000 + node
}

// TestRewrite: a response that names brokers leaves with each broker's
// address rewritten, re-encoded at its version, its header (tags
// included) kept and its size field right; read again with kmsg, it is
// the response it was but for the addresses. Flexible versions (Metadata
// v12, FindCoordinator v4 with its list of coordinators, DescribeCluster,
// Produce v10's new-leader hints) and older ones (FindCoordinator v3's one
// coordinator, Metadata v1), on reads of 1 byte and whole.
func TestRewrite(t *testing.T) {
	fc3 := kmsg.NewPtrFindCoordinatorResponse()
	fc3.NodeID, fc3.Host, fc3.Port = 3, "10.0.0.3", 9092
	dc := kmsg.NewPtrDescribeClusterResponse()
	for n := int32(1); n <= 2; n++ {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port = n, "10.0.0.1", 9092+n
		dc.Brokers = append(dc.Brokers, b)
	}
	pr := kmsg.NewPtrProduceResponse()
	leader := kmsg.NewProduceResponseBroker()
	leader.NodeID, leader.Host, leader.Port = 2, "10.0.0.2", 9092
	pr.Brokers = append(pr.Brokers, leader)
	for _, c := range []struct {
		name    string
		key     kmsg.Key
		version int16
		tags    []byte
		resp    kmsg.Response
		want    func(kmsg.Response) // rewrites a copy as the filter should
	}{
		{"Metadata v12", kmsg.Metadata, 12, taggedHeader, metadataResponse(), func(r kmsg.Response) {
			for i := range r.(*kmsg.MetadataResponse).Brokers {
				b := &r.(*kmsg.MetadataResponse).Brokers[i]
				b.Host, b.Port = toProxy(b.NodeID, b.Host, b.Port)
			}
		}},
		{"Metadata v1", kmsg.Metadata, 1, nil, metadataResponse(), func(r kmsg.Response) {
			for i := range r.(*kmsg.MetadataResponse).Brokers {
				b := &r.(*kmsg.MetadataResponse).Brokers[i]
				b.Host, b.Port = toProxy(b.NodeID, b.Host, b.Port)
			}
		}},
		{"FindCoordinator v4", kmsg.FindCoordinator, 4, nil, findCoordinatorResponse(), func(r kmsg.Response) {
			c := &r.(*kmsg.FindCoordinatorResponse).Coordinators[0] // the other names no broker
			c.Host, c.Port = toProxy(c.NodeID, c.Host, c.Port)
		}},
		{"FindCoordinator v3", kmsg.FindCoordinator, 3, nil, fc3, func(r kmsg.Response) {
			c := r.(*kmsg.FindCoordinatorResponse)
			c.Host, c.Port = toProxy(c.NodeID, c.Host, c.Port)
		}},
		{"DescribeCluster v1", kmsg.DescribeCluster, 1, []byte{0}, dc, func(r kmsg.Response) {
			for i := range r.(*kmsg.DescribeClusterResponse).Brokers {
				b := &r.(*kmsg.DescribeClusterResponse).Brokers[i]
				b.Host, b.Port = toProxy(b.NodeID, b.Host, b.Port)
			}
		}},
		{"Produce v10", kmsg.Produce, 10, nil, pr, func(r kmsg.Response) {
			b := &r.(*kmsg.ProduceResponse).Brokers[0]
			b.Host, b.Port = toProxy(b.NodeID, b.Host, b.Port)
		}},
	} {
		req := c.key.Request()
		if p, ok := req.(*kmsg.ProduceRequest); ok {
			p.Acks = -1
		}
		in := response(c.resp, c.version, 41, c.tags)
		for _, n := range []int{1, len(in)} {
			var tr trace
			fs := &Filters{Rewrite: toProxy, Observe: tr.observe}
			up, down, _ := fs.Conn(nil)
			feed(up, request(req, c.version, 41), n)
			out, cut := feed(down, in, n)
			if cut {
				t.Fatalf("%s: cut", c.name)
			}
			if int(binary.BigEndian.Uint32(out)) != len(out)-4 {
				t.Fatalf("%s: size field %d for a frame of %d bytes", c.name, binary.BigEndian.Uint32(out), len(out)-4)
			}
			hdr, _ := responseHeaderLen(c.resp, in)
			if !bytes.Equal(out[4:hdr], in[4:hdr]) {
				t.Fatalf("%s: header %x, want %x", c.name, out[4:hdr], in[4:hdr])
			}
			got, want := c.key.Response(), c.key.Response()
			got.SetVersion(c.version)
			want.SetVersion(c.version)
			if err := got.ReadFrom(out[hdr:]); err != nil {
				t.Fatalf("%s: the rewritten response does not read: %v", c.name, err)
			}
			if err := want.ReadFrom(in[hdr:]); err != nil {
				t.Fatal(err)
			}
			c.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, reads of %d: read back\n%+v\nwant\n%+v", c.name, n, got, want)
			}
			if last := tr.events[len(tr.events)-1]; last != (seen{c.key, 41, true, Rewritten}) {
				t.Fatalf("%s: observed %v", c.name, last)
			}
		}
	}
}

// TestRewriteLeavesAlone: a response Rewrite changes nothing in, and one
// naming no broker, pass byte for byte.
func TestRewriteLeavesAlone(t *testing.T) {
	same := func(_ int32, host string, port int32) (string, int32) { return host, port }
	fs := &Filters{Rewrite: same}
	up, down, _ := fs.Conn(nil)
	feed(up, clientSide, len(clientSide))
	if out, _ := feed(down, brokerSide, 3); !bytes.Equal(out, brokerSide) {
		t.Fatal("an identity rewrite changed the broker's bytes")
	}
	fs = &Filters{Rewrite: toProxy}
	up, down, _ = fs.Conn(nil)
	feed(up, clientFrames[5], 100) // OffsetCommit
	if out, _ := feed(down, brokerFrames[4], 100); !bytes.Equal(out, brokerFrames[4]) {
		t.Fatal("a response naming no broker changed")
	}
}

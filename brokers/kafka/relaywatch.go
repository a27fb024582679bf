package kafka

import (
	"context"
	"maps"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dqbench/dqbench/brokers"
	nfkafka "github.com/dqbench/dqbench/netfault/kafka"
)

var _ brokers.ConsumerWatcher = proxiedDest{}

// relayWatch is a process variant's watch on a real Kafka: its consumer
// processes reach the cluster through relays of their own (the
// destination's outside route), whose Kafka protocol filter shows it every
// fetch and commit of the variant's topic, and the fetch responses before
// they reach the process, as the tap does inside the embedded broker
// (tap.go). A commit or a response the watch withholds is dropped and its
// connection cut.
type relayWatch struct {
	topic, group string
	id           [16]byte // the topic's id, which newer requests name it by

	mu    sync.Mutex
	w     *watched                   // nil until WatchConsumers
	from  map[string]map[int32]int64 // by client address: where its fetches start
	route *route
}

// Outside says where a consumer process connects: the relays of the
// variant's outside route, the variant's topic and group.
func (c proxiedDest) Outside() brokers.Outside {
	seeds, err := c.outside().route.seeds(c.k.upstream)
	if err != nil {
		seeds = c.k.seeds // the run is ending
	}
	return brokers.Outside{Addresses: seeds, Topic: c.topic, Group: c.group}
}

// WatchConsumers shows w the fetches and commits of the variant's topic on
// every connection of its consumer processes.
func (c proxiedDest) WatchConsumers(w brokers.ConsumerWatch) {
	rw := c.outside()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if md, err := c.k.adm.Metadata(ctx, c.topic); err == nil {
		if t, ok := md.Topics[c.topic]; ok {
			rw.mu.Lock()
			rw.id = t.ID
			rw.mu.Unlock()
		}
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.w = &watched{w: w, intents: map[int32]map[int64]int{}, committed: map[int32]int64{}}
}

// outside returns the destination's watch, making it and its route the
// first time.
func (c proxiedDest) outside() *relayWatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watch != nil {
		return c.watch
	}
	rw := &relayWatch{topic: c.topic, group: c.group, from: map[string]map[int32]int64{}}
	member := func(r nfkafka.Request) bool { rw.member(r); return false }
	fs := &nfkafka.Filters{
		Rules: []nfkafka.Rule{
			{Key: kmsg.Fetch, When: rw.fetching},
			{Key: kmsg.OffsetCommit, Action: nfkafka.DropRequest, When: rw.committing},
			{Key: kmsg.JoinGroup, When: member},
			{Key: kmsg.SyncGroup, When: member},
			{Key: kmsg.Heartbeat, When: member},
		},
		Response: rw.response,
	}
	rw.route = newRoute(fs)
	rw.route.watch = &connWatch{opened: rw.opened, ended: rw.ended}
	c.watch = rw
	return rw
}

// watching returns the watch installed, or nil.
func (rw *relayWatch) watching() *watched {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.w
}

// ours says whether a request's topic (by name or id) is the variant's.
func (rw *relayWatch) ours(topic string, id [16]byte) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return topic == rw.topic || id != ([16]byte{}) && id == rw.id
}

func (rw *relayWatch) opened(remote net.Addr) {
	if w := rw.watching(); w != nil && w.w.Connected != nil {
		w.w.Connected(remote)
	}
}

func (rw *relayWatch) ended(remote net.Addr) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	delete(rw.from, remote.String())
}

// member shows the watch the member id of a group request of the
// variant's group.
func (rw *relayWatch) member(r nfkafka.Request) {
	group, member := groupMember(r.Body)
	w := rw.watching()
	if w != nil && group == rw.group && member != "" && w.w.Member != nil {
		w.w.Member(r.Remote, member)
	}
}

// fetching notes where a fetch of the variant's topic starts, per
// partition: a response carries whole batches, and the client drops the
// records before its fetch offset. It never picks the request.
func (rw *relayWatch) fetching(r nfkafka.Request) bool {
	req, ok := r.Body.(*kmsg.FetchRequest)
	if !ok {
		return false
	}
	for _, t := range req.Topics {
		if !rw.ours(t.Topic, t.TopicID) {
			continue
		}
		rw.mu.Lock()
		from := rw.from[r.Remote.String()]
		if from == nil {
			from = map[int32]int64{}
			rw.from[r.Remote.String()] = from
		}
		for _, p := range t.Partitions {
			from[p.Partition] = p.FetchOffset
		}
		rw.mu.Unlock()
	}
	return false
}

// committing shows the watch what a commit of the variant's topic newly
// commits; the rule picks (drops) a commit the watch withholds.
func (rw *relayWatch) committing(r nfkafka.Request) bool {
	rw.member(r)
	req, ok := r.Body.(*kmsg.OffsetCommitRequest)
	w := rw.watching()
	if !ok || w == nil {
		return false
	}
	for _, t := range req.Topics {
		if rw.ours(t.Topic, t.TopicID) && w.committing(r.Remote, t.Partitions) != nil {
			return true
		}
	}
	return false
}

// response shows the watch the records of a fetch response of the
// variant's topic before they reach the process; false withholds it.
func (rw *relayWatch) response(remote net.Addr, h nfkafka.Header, frame []byte) bool {
	w := rw.watching()
	if h.Key != kmsg.Fetch || w == nil {
		return true
	}
	resp, ok := readFetchResponse(frame, h.Version)
	if !ok {
		return true
	}
	for _, t := range resp.Topics {
		if !rw.ours(t.Topic, t.TopicID) {
			continue
		}
		rw.mu.Lock()
		from := maps.Clone(rw.from[remote.String()])
		rw.mu.Unlock()
		if w.w.Fetched(remote, w.fetched(t.Partitions, from)) != nil {
			return false
		}
	}
	return true
}

// outsideRoute is the route of the variant's consumer processes, or nil.
func (c *topicDest) outsideRoute() *route {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watch == nil {
		return nil
	}
	return c.watch.route
}

package kafka

import (
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Action is what a Rule does to a request it picks, or to its response.
type Action int

const (
	// DropRequest withholds the request and cuts the connection: the
	// broker never sees it.
	DropRequest Action = iota + 1
	// CutAfterRequest forwards the request, then cuts the connection:
	// the broker may act on it, the client never hears how.
	CutAfterRequest
	// DropResponse forwards the request and, when its response comes
	// back, withholds the response and cuts the connection.
	DropResponse
	// DelayResponse holds the response back for the rule's Delay (and
	// with it every later response on the connection: a connection's
	// responses come in order).
	DelayResponse
)

func (a Action) String() string {
	switch a {
	case DropRequest:
		return "drop request"
	case CutAfterRequest:
		return "cut after request"
	case DropResponse:
		return "drop response"
	case DelayResponse:
		return "delay response"
	}
	return "no action"
}

// Rule acts on the requests of one API key (kmsg.OffsetCommit,
// kmsg.TxnOffsetCommit, kmsg.EndTxn, kmsg.AddPartitionsToTxn,
// kmsg.AddOffsetsToTxn, kmsg.Produce, kmsg.Fetch, ...) that When picks.
// Every rule, the response ones included, decides when the request
// passes; a request that gets no response (a produce request with acks 0)
// is not offered to the response rules.
//
// A cut on a connection's first request may end the client's request
// instead of having it retried: kgo takes an EOF there for missing SASL
// and gives up (unless kgo.AlwaysRetryEOF), except for produce requests.
type Rule struct {
	Key    kmsg.Key
	Action Action
	Delay  time.Duration // DelayResponse's
	// When picks the requests to act on; nil picks every one. It is called
	// from the connections' goroutines, and must not keep the request's
	// Body past the call.
	When func(Request) bool
}

// Request is a request as a Rule sees it.
type Request struct {
	Header
	// Remote is the client's address.
	Remote net.Addr
	// Body is the request as kmsg reads it; nil when kmsg does not know
	// its key or version, or could not read it.
	Body kmsg.Request
	// Seen counts the requests of this key that passed through the
	// filter set, on every connection, this one included (from 1).
	Seen int
}

// Event is one frame that passed through a filter, for a trace of the
// connection (Filters.Observe).
type Event struct {
	// Header is the request's: a response carries only the correlation
	// id, and is shown with its request's key, version and client id.
	Header
	Remote   net.Addr
	Response bool // the broker's response (else the client's request)
	Size     int  // the frame's bytes as read, its size field included
	Fate     Fate
}

// Fate is what a filter did with a frame.
type Fate int

const (
	Passed    Fate = iota // forwarded as it was
	Rewritten             // forwarded with broker addresses rewritten
	Delayed               // forwarded after a delay (maybe rewritten too)
	Dropped               // withheld, and the connection cut
	CutAfter              // forwarded, then the connection cut
)

func (f Fate) String() string {
	switch f {
	case Passed:
		return "passed"
	case Rewritten:
		return "rewritten"
	case Delayed:
		return "delayed"
	case Dropped:
		return "dropped"
	case CutAfter:
		return "cut after"
	}
	return "unknown fate"
}

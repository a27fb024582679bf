package nats

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// TestClassify: only a definite answer that the stream did not take the
// publish is a refusal; anything else leaves the outcome unknown.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err     error
		refused bool
	}{
		{&jetstream.APIError{Code: 503, ErrorCode: 10077, Description: "maximum messages exceeded"}, true},
		{jetstream.ErrNoStreamResponse, true},
		{nats.ErrNoResponders, true},
		{nats.ErrTimeout, false},
		{nats.ErrConnectionClosed, false},
		{context.DeadlineExceeded, false},
	} {
		if got := errors.Is(classify(tc.err), brokers.ErrRefused); got != tc.refused {
			t.Errorf("classify(%v) refused = %v, want %v", tc.err, got, tc.refused)
		}
	}
}

// TestMsgIDOf: what goes into Nats-Msg-Id for each msg_id setting.
func TestMsgIDOf(t *testing.T) {
	m := brokers.Message{Intent: 7, Attempt: 2, Key: "7"}
	for _, tc := range []struct {
		src  catalog.NATSMsgID
		want string
	}{
		{catalog.BusinessMsgID, "7"},
		{catalog.PerSendMsgID, "7.2"},
		{catalog.NoMsgID, ""},
	} {
		d := &dest{settings: catalog.NATSSettings{MsgID: tc.src}}
		if got := d.msgID(m); got != tc.want {
			t.Errorf("msg_id %s: Nats-Msg-Id %q, want %q", tc.src, got, tc.want)
		}
	}
}

package mqtt

import (
	"testing"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// TestSessionStoreGetsCopies: the session store hands paho a fresh copy of
// a stored packet each time, so resume() setting DUP on what it got
// changes neither the packet the client sent nor the stored one
// (paho.mqtt.golang #703).
func TestSessionStoreGetsCopies(t *testing.T) {
	v := newSessionStore().view()
	sent := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	sent.Qos, sent.MessageID, sent.TopicName, sent.Payload = 2, 7, "t", []byte("intent 1")
	v.Put("o.7", sent)

	got, ok := v.Get("o.7").(*packets.PublishPacket)
	if !ok || got == sent {
		t.Fatalf("Get = %#v, want a copy of the packet put", got)
	}
	if got.MessageID != 7 || got.Qos != 2 || got.TopicName != "t" || string(got.Payload) != "intent 1" || got.Dup {
		t.Errorf("Get = %+v, want the packet put", got)
	}
	got.Dup = true // what resume() does
	if sent.Dup {
		t.Error("setting DUP on the copy changed the packet the client sent")
	}
	if again := v.Get("o.7").(*packets.PublishPacket); again.Dup {
		t.Error("setting DUP on one copy changed the stored packet")
	}
	if v.Get("o.8") != nil {
		t.Error("Get of a key never put is not nil")
	}
	v.Del("o.7")
	if v.Get("o.7") != nil {
		t.Error("Get after Del is not nil")
	}
}

package catalog

import (
	"testing"
	"time"
)

func TestNATSURL(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"nats://127.0.0.1:4222", true},
		{"nats://user:pw@nats.example:4222", true},
		{"nats://127.0.0.1", false},
		{"tcp://127.0.0.1:4222", false},
		{"127.0.0.1:4222", false},
		{"nats://:4222", false},
		{"nats://127.0.0.1:99999", false},
	} {
		if err := NATSURL(tc.addr); (err == nil) != tc.ok {
			t.Errorf("NATSURL(%q) = %v, want ok %v", tc.addr, err, tc.ok)
		}
	}
}

func TestNATSDefaults(t *testing.T) {
	var s NATSSettings
	s.Defaults()
	want := NATSSettings{Storage: FileStorage, Replicas: 1, DuplicateWindow: Duration(2 * time.Minute), AckWait: Duration(30 * time.Second), MaxDeliver: -1, MsgID: BusinessMsgID, Ack: SyncAck}
	if s != want {
		t.Errorf("defaults %+v, want %+v", s, want)
	}
	set := NATSSettings{Storage: MemoryStorage, Replicas: 3, AckWait: Duration(time.Second), MaxDeliver: 5, MaxAckPending: 10, MsgID: NoMsgID, Ack: PlainAck}
	got := set
	got.Defaults()
	set.DuplicateWindow = Duration(2 * time.Minute)
	if got != set {
		t.Errorf("defaults changed what was set: %+v, want %+v", got, set)
	}
}

// TestNATSForVariant: a variant's nats mapping overrides msg_id and
// duplicate_window, and leaves the broker's settings as they were.
func TestNATSForVariant(t *testing.T) {
	base := NATSSettings{}
	base.Defaults()
	got := base.ForVariant(VariantKeys{Overrides: BrokerOverrides{NATS: &NATSOverrides{MsgID: NoMsgID, DuplicateWindow: Duration(time.Second)}}}).(*NATSSettings)
	if got.MsgID != NoMsgID || got.DuplicateWindow != Duration(time.Second) || got.AckWait != DefaultNATSAckWait {
		t.Errorf("with overrides: %+v", *got)
	}
	if base.MsgID != BusinessMsgID || base.DuplicateWindow != DefaultNATSDuplicateWindow {
		t.Errorf("the broker's settings changed: %+v", base)
	}
	if got := base.ForVariant(VariantKeys{}).(*NATSSettings); *got != base {
		t.Errorf("without overrides: %+v, want %+v", *got, base)
	}
}

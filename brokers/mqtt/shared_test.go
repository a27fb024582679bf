package mqtt

import (
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
)

// TestSelectShared: the members take the intents in turn, sorted by
// client id, whatever the map's order; with one member gone the others
// share them.
func TestSelectShared(t *testing.T) {
	members := map[string]packets.Subscription{"dqb-v-s3": {Qos: 1}, "dqb-v-s1": {Qos: 1}, "dqb-v-s2": {Qos: 1}}
	for intent, want := range map[int]string{1: "dqb-v-s1", 2: "dqb-v-s2", 3: "dqb-v-s3", 4: "dqb-v-s1", 300: "dqb-v-s3"} {
		for range 20 { // map order changes from range to range
			if got, _ := selectShared(members, intent); got != want {
				t.Fatalf("intent %d went to %s, want %s", intent, got, want)
			}
		}
	}
	delete(members, "dqb-v-s2")
	if got, _ := selectShared(members, 2); got != "dqb-v-s3" {
		t.Errorf("intent 2 with s2 unsubscribed went to %s, want dqb-v-s3", got)
	}
}

// TestClaimSessions: each instance holds its own session; a replacement
// gets the session its crashed instance released; a variant with one
// session keeps the client id dqb-NAME-s.
func TestClaimSessions(t *testing.T) {
	d := &dest{name: "v", topic: "dqbench/v/"}
	d.sessions(3)
	if d.filter != "$share/dqb-v/dqbench/v/+" {
		t.Errorf("filter %q", d.filter)
	}
	a, b, c := d.claim(1), d.claim(2), d.claim(3)
	if a.id != "dqb-v-s1" || b.id != "dqb-v-s2" || c.id != "dqb-v-s3" {
		t.Fatalf("claimed %s, %s, %s", a.id, b.id, c.id)
	}
	d.release(b)
	if r := d.claim(4); r != b {
		t.Errorf("the replacement got %s, want the released %s", r.id, b.id)
	}
	one := &dest{name: "v", topic: "dqbench/v/"}
	one.sessions(1)
	if len(one.subs) != 1 || one.subs[0].id != "dqb-v-s" || one.filter != "dqbench/v/+" || one.shared() {
		t.Errorf("one instance: sessions %d, id %s, filter %q", len(one.subs), one.subs[0].id, one.filter)
	}
	if s := one.claim(1); s != one.subs[0] || one.claim(2) != one.subs[0] {
		t.Error("one session: every instance takes it (over)")
	}
}

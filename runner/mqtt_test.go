package runner

import (
	"bytes"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/scenario"

	"github.com/dqbench/dqbench/internal/testenv"
)

// TestMQTTQoSLevels runs mqtt-qos-levels on the embedded broker twice with
// one seed: QoS 0 loses, QoS 1 duplicates, QoS 2 neither, with the same
// duplicates, lost and effects both times, and each duplicate attributed to
// a leg. (faults_injected can differ by one at QoS 1: when a lost ack
// breaks the connection, the delivery the consumer had already taken is
// given up before its crash point, so the crash meets that intent on its
// second delivery only.)
func TestMQTTQoSLevels(t *testing.T) {
	want := map[string]func(c map[string]int) bool{
		// Every intent that never took effect is lost: at-most-once loss
		// is counted, not hidden in indeterminate.
		"qos0": func(c map[string]int) bool {
			return c["lost"] > 1 && c["duplicates"] == 0 && c["lost"] == c["attempted"]-c["effects"]
		},
		"qos1": func(c map[string]int) bool { return c["duplicates"] > 0 && c["lost"] == 0 },
		"qos2": func(c map[string]int) bool { return c["duplicates"] == 0 && c["lost"] == 0 },
	}
	// Duplicates and lost repeat with the seed, but for qos0's lost (how
	// many QoS 0 messages were published while no subscriber was online
	// is timing), which is not compared.
	runs := passedRuns(t, "mqtt-qos-levels")
	seen := make([]map[string][2]int, len(runs))
	for i, res := range runs {
		seen[i] = map[string][2]int{}
		for _, v := range res.Run.Variants {
			c := counts(v)
			if !want[v.Name](c) {
				t.Errorf("variant %s: unexpected counts %v", v.Name, c)
			}
			if v.Legs == nil {
				t.Fatalf("variant %s: no legs", v.Name)
			}
			if v.Duplicates > 0 && v.Legs.Publisher.Duplicates+v.Legs.Subscriber.Duplicates < v.Duplicates {
				t.Errorf("variant %s: %d duplicates, legs %+v attribute fewer", v.Name, v.Duplicates, *v.Legs)
			}
			if l := v.Legs; l.Publisher.Lost+l.Subscriber.Lost+l.UnconfirmedLost != v.Lost {
				t.Errorf("variant %s: %d lost, legs %+v add up to another number", v.Name, v.Lost, *l)
			}
			if v.Name == "qos0" {
				seen[i][v.Name] = [2]int{v.Duplicates, 0}
				continue
			}
			seen[i][v.Name] = [2]int{v.Duplicates, v.Lost}
		}
	}
	if len(seen) == 2 && !maps.Equal(seen[0], seen[1]) {
		t.Errorf("same seed, different counts (duplicates, lost): %v then %v", seen[0], seen[1])
	}
}

// passedRuns runs built-in name as shipped twice with its seed (once under
// -race: the race detector needs one run, the counts are compared without
// it) and stops the test unless each run passed and is valid.
func passedRuns(t *testing.T, name string) []*judged {
	t.Helper()
	n := 2
	if raceEnabled {
		n = 1
	}
	var runs []*judged
	for range n {
		runs = append(runs, passedBuiltin(t, name))
	}
	return runs
}

// TestMQTTQoSLevelsExternal runs mqtt-qos-levels against the Mosquitto at
// 127.0.0.1:1883 (or DQBENCH_MQTT_ADDR), its lost acks injected by the MQTT
// toxic in the in-process toxiproxy: the same signs as on the embedded
// broker. Skipped when no broker answers, unless DQBENCH_REQUIRE_BROKERS=1.
func TestMQTTQoSLevelsExternal(t *testing.T) {
	addr := os.Getenv("DQBENCH_MQTT_ADDR")
	if addr == "" {
		addr = "tcp://127.0.0.1:1883"
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(addr, "tcp://"), time.Second); err != nil {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatalf("no MQTT broker at %s: %v", addr, err)
		}
		t.Skipf("no MQTT broker at %s (set DQBENCH_MQTT_ADDR, or start one: apt-get install mosquitto): %v", addr, err)
	} else {
		c.Close()
	}
	s, err := scenario.Resolve("mqtt-qos-levels")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UseExternalBroker([]string{addr}); err != nil {
		t.Fatal(err)
	}
	passed(t, s)
}

// TestMQTTQoS2LostPubrelExternal: on an external broker, a PUBREL lost on
// the subscriber leg (the toxic drops it and breaks the connection) still
// counts the copy acked, since the broker sent PUBREL only once it had the
// PUBREC: before, the consumer's failed ack left it counted as held, and
// the drain gave up (INVALID) with 10 messages "still on the broker".
// Skipped when no broker answers, unless DQBENCH_REQUIRE_BROKERS=1.
func TestMQTTQoS2LostPubrelExternal(t *testing.T) {
	addr := os.Getenv("DQBENCH_MQTT_ADDR")
	if addr == "" {
		addr = "tcp://127.0.0.1:1883"
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(addr, "tcp://"), time.Second); err != nil {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatalf("no MQTT broker at %s: %v", addr, err)
		}
		t.Skipf("no MQTT broker at %s (set DQBENCH_MQTT_ADDR, or start one: apt-get install mosquitto): %v", addr, err)
	} else {
		c.Close()
	}
	s, err := scenario.Parse(t.Name()+".yaml", []byte(`
version: 1
name: qos2-lost-pubrel
seed: 1
messages: 300
deadline: 60s
drain: 5s
broker: {kind: mqtt, mode: embedded, qos: 2, subscription_qos: 2}
producer: {window: 1}
faults:
  - {type: ack-lost, packet: PUBREL, leg: subscriber, every: 30}
variants:
  - name: paho
    strategy: none
    mqtt: {client: paho}
    expect: {duplicates: 0, lost: 0, faults_injected: 10}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UseExternalBroker([]string{addr}); err != nil {
		t.Fatal(err)
	}
	passed(t, s)
}

// TestMQTTEffectiveQoS: every delivery arrives at min(publish QoS,
// subscription QoS).
func TestMQTTEffectiveQoS(t *testing.T) {
	s, err := scenario.Resolve("mqtt-effective-qos")
	if err != nil {
		t.Fatal(err)
	}
	res := passed(t, s)
	for _, v := range res.Run.Variants {
		var pub, sub int
		for _, vs := range s.Variants {
			if vs.Name == v.Name {
				pub, sub = *vs.MQTT.QoS, *vs.MQTT.SubscriptionQoS
			}
		}
		want := map[string]int{strconv.Itoa(min(pub, sub)): v.Delivered}
		if !maps.Equal(v.DeliveredQoS, want) {
			t.Errorf("variant %s: delivered_qos %v, want %v", v.Name, v.DeliveredQoS, want)
		}
	}
}

// TestMQTTClientQoS2 runs mqtt-client-qos2 (each QoS 2 ack packet lost on
// each leg, window 1) and checks dqbench's counts against the raw clients'
// (brokers/mqtt/qos2truth): paho.golang 0 duplicates; paho.mqtt.golang one
// per lost subscriber PUBREC (subscriber leg, MQTT-4.3.3-2) and one per lost
// publisher PUBCOMP (publisher leg, MQTT-4.3.3-1), plus at most one per lost
// publisher PUBREC or PUBREL (the same re-send, when it loses a race). The
// consumer takes one message at a time: before it did, the next delivery's
// effect applied while an ack broke the connection was a duplicate of
// dqbench's own on every subscriber-leg fault.
func TestMQTTClientQoS2(t *testing.T) {
	res := passedBuiltin(t, "mqtt-client-qos2")
	const each = 10 // of each of the six faults, in 300 intents
	for _, v := range res.Run.Variants {
		l := v.Legs
		if l == nil {
			t.Fatalf("variant %s: no legs", v.Name)
		}
		if v.FaultsInjected != 6*each {
			t.Errorf("variant %s: %d faults, want %d", v.Name, v.FaultsInjected, 6*each)
		}
		if len(v.DeliveredQoS) != 1 || v.DeliveredQoS["2"] < v.Delivered {
			t.Errorf("variant %s: delivered_qos %v, want every delivery at QoS 2", v.Name, v.DeliveredQoS)
		}
		switch v.Name {
		case "paho":
			if l.Subscriber.Duplicates != each {
				t.Errorf("paho: %d subscriber-leg duplicates, want %d (one per lost subscriber PUBREC, none for PUBREL, PUBCOMP)", l.Subscriber.Duplicates, each)
			}
			if l.Publisher.Duplicates < each || l.Publisher.Duplicates > 3*each {
				t.Errorf("paho: %d publisher-leg duplicates, want %d to %d (one per lost publisher PUBCOMP, at most one per lost PUBREC, PUBREL)", l.Publisher.Duplicates, each, 3*each)
			}
			want := strconv.Itoa(each) + " intents were applied twice after the subscriber's PUBREC was lost"
			if !slices.ContainsFunc(v.Notes, func(n string) bool { return strings.HasPrefix(n, want) && strings.Contains(n, "MQTT-4.3.3-2") }) {
				t.Errorf("paho: no note %q... naming MQTT-4.3.3-2: %q", want, v.Notes)
			}
			if !slices.ContainsFunc(v.Notes, func(n string) bool { return strings.Contains(n, "MQTT-4.3.3-1") }) {
				t.Errorf("paho: no note naming MQTT-4.3.3-1: %q", v.Notes)
			}
		case "paho.golang", "paho-dedup-table":
			if v.Duplicates != 0 || l.Subscriber.Duplicates != 0 {
				t.Errorf("%s: %d duplicates, legs %+v: want none", v.Name, v.Duplicates, *l)
			}
		}
		if v.Name == "paho.golang" && v.Redelivered != 0 {
			t.Errorf("paho.golang: %d redelivered, want 0: it keeps its session state", v.Redelivered)
		}
	}
}

// TestMQTTBrokerQueueLimit runs mqtt-broker-queue-limit on managed
// Mosquittos: past max_queued_messages the broker drops acknowledged
// messages (lost, with a note naming the limit); with it raised, none.
// Skipped without the mosquitto binary unless DQBENCH_REQUIRE_BROKERS=1.
func TestMQTTBrokerQueueLimit(t *testing.T) {
	testenv.SkipShort(t, "Mosquitto")
	needMosquitto(t)
	res := passedBuiltin(t, "mqtt-broker-queue-limit")
	for _, v := range res.Run.Variants {
		if v.Name != "default-limits" {
			continue
		}
		named := false
		for _, n := range v.Notes {
			named = named || strings.Contains(n, "max_queued_messages")
		}
		if !named {
			t.Errorf("default-limits: no note names max_queued_messages: %q", v.Notes)
		}
	}
}

// TestMQTTBrokerRestart runs mqtt-broker-restart on managed Mosquittos: a
// restart with persistence keeps the queued messages, without it they are
// lost.
func TestMQTTBrokerRestart(t *testing.T) {
	testenv.SkipShort(t, "Mosquitto")
	needMosquitto(t)
	passedBuiltin(t, "mqtt-broker-restart")
}

// needMosquitto skips a test without the mosquitto binary, unless
// DQBENCH_REQUIRE_BROKERS=1.
func needMosquitto(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("runs a Mosquitto process: covered without -race")
	}
	if _, err := exec.LookPath("mosquitto"); err == nil {
		return
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return
	}
	if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
		t.Fatal("mode managed needs the mosquitto binary, which is not installed")
	}
	t.Skip("mode managed needs the mosquitto binary, which is not installed (apt-get install mosquitto)")
}

func counts(v check.Variant) map[string]int {
	c := map[string]int{}
	for _, name := range check.CountNames() {
		c[name], _ = v.Counts.Get(name)
	}
	return c
}

// TestMQTTSubscriberOffline runs mqtt-subscriber-offline twice with one
// seed: each window of 10 intents loses its 10 at QoS 0 and at QoS 1 with
// a clean session, none with a persistent session, the same both times.
func TestMQTTSubscriberOffline(t *testing.T) {
	want := map[string]int{"qos0": 20, "qos1-clean": 20, "qos1-persistent": 0}
	var seen [2]map[string][3]int
	for i := range seen {
		res := passedBuiltin(t, "mqtt-subscriber-offline")
		seen[i] = map[string][3]int{}
		for _, v := range res.Run.Variants {
			if v.Lost != want[v.Name] || v.Duplicates != 0 {
				t.Errorf("variant %s: lost %d, duplicates %d; want lost %d, no duplicates (faults %d, delivered %d)", v.Name, v.Lost, v.Duplicates, want[v.Name], v.FaultsInjected, v.Delivered)
			}
			seen[i][v.Name] = [3]int{v.Duplicates, v.Lost, v.Effects}
		}
	}
	if !maps.Equal(seen[0], seen[1]) {
		t.Errorf("same seed, different counts (duplicates, lost, effects): %v then %v", seen[0], seen[1])
	}
}

// TestMQTTSharedSubscription runs mqtt-shared-subscription (three instances
// in one $share group, crashes after the effect) twice with one seed: none
// duplicates exactly the crashed intents, dedup-table neither duplicates
// nor loses, the same both times. Every delivery of intent i comes on the
// session the embedded broker assigns it, ((i-1) mod 3)+1, the redelivery
// after a crash too: mochi-mqtt resends a crashed member's messages to
// its own session (its replacement), never to another member.
func TestMQTTSharedSubscription(t *testing.T) {
	runs := passedRuns(t, "mqtt-shared-subscription")
	seen := make([]map[string][4]int, len(runs))
	for i, res := range runs {
		seen[i] = map[string][4]int{}
		for _, v := range res.Run.Variants {
			if v.FaultsInjected == 0 || v.Lost != 0 {
				t.Errorf("variant %s: %d faults, %d lost; want faults and no loss", v.Name, v.FaultsInjected, v.Lost)
			}
			if want := map[string]int{"none": v.FaultsInjected, "dedup-table": 0}[v.Name]; v.Duplicates != want {
				t.Errorf("variant %s: %d duplicates, want %d (one per crash after the effect with none)", v.Name, v.Duplicates, want)
			}
			seen[i][v.Name] = [4]int{v.Duplicates, v.Lost, v.Effects, v.FaultsInjected}
		}
		sessions := map[string]map[string]bool{} // variant → sessions that delivered
		for e, err := range history.Scan(bytes.NewReader(res.History)) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Type != history.Deliver {
				continue
			}
			want := "s" + strconv.Itoa((e.Intent-1)%3+1) + "/"
			if !strings.HasPrefix(e.Position, want) {
				t.Errorf("variant %s: intent %d attempt %d delivered at %q, want on session %s", e.Variant, e.Intent, e.Attempt, e.Position, want)
			}
			if sessions[e.Variant] == nil {
				sessions[e.Variant] = map[string]bool{}
			}
			sess, _, _ := strings.Cut(e.Position, "/")
			sessions[e.Variant][sess] = true
		}
		for v, ss := range sessions {
			if len(ss) != 3 {
				t.Errorf("variant %s: deliveries on sessions %v, want all three", v, ss)
			}
		}
	}
	if len(seen) == 2 && !maps.Equal(seen[0], seen[1]) {
		t.Errorf("same seed, different counts (duplicates, lost, effects, faults): %v then %v", seen[0], seen[1])
	}
}

// TestMQTTRetainedResubscribe runs mqtt-retained-resubscribe: a clean
// session without retain loses, with retain every crash's resubscription
// brings the retained intents back (none duplicates, each duplicate
// retained-again and on the subscriber leg; dedup-table 0/0; nothing
// lost), and a persistent session, which does not subscribe again, gets no
// retained delivery: one duplicate per crash.
func TestMQTTRetainedResubscribe(t *testing.T) {
	s, err := scenario.Resolve("mqtt-retained-resubscribe")
	if err != nil {
		t.Fatal(err)
	}
	res := passed(t, s)
	in, err := check.Inspect(s.Plan(), res.Meta, history.Scan(bytes.NewReader(res.History)), res.Audits)
	if err != nil {
		t.Fatal(err)
	}
	retained := map[string]int{} // deliveries flagged retained, by variant
	for e, err := range history.Scan(bytes.NewReader(res.History)) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == history.Deliver && e.Retained {
			retained[e.Variant]++
		}
	}
	for _, v := range in.Variants {
		a := in.Anomalies(v.Name, 3)
		switch v.Name {
		case "clean-no-retain":
			if v.Lost == 0 || retained[v.Name] != 0 {
				t.Errorf("%s: %d lost, %d retained deliveries; want losses and none retained", v.Name, v.Lost, retained[v.Name])
			}
		case "clean-retain":
			if v.Duplicates == 0 || v.Lost != 0 || a.ByCause[check.DupRetained] != v.Duplicates || v.Legs.Subscriber.Duplicates != v.Duplicates || v.Legs.Publisher.Duplicates != 0 {
				t.Errorf("%s: %d duplicates (causes %v, legs %+v), %d lost; want duplicates, every one retained-again on the subscriber leg, none lost", v.Name, v.Duplicates, a.ByCause, *v.Legs, v.Lost)
			}
			if retained[v.Name] < v.Duplicates {
				t.Errorf("%s: %d retained deliveries for %d duplicates", v.Name, retained[v.Name], v.Duplicates)
			}
		case "clean-retain-dedup-table":
			if v.Duplicates != 0 || v.Lost != 0 || retained[v.Name] == 0 {
				t.Errorf("%s: %d duplicates, %d lost, %d retained deliveries; want 0, 0, some", v.Name, v.Duplicates, v.Lost, retained[v.Name])
			}
		case "persistent-retain":
			if v.Duplicates != v.FaultsInjected || v.Lost != 0 || retained[v.Name] != 0 {
				t.Errorf("%s: %d duplicates for %d crashes, %d lost, %d retained deliveries; want one per crash, none lost or retained", v.Name, v.Duplicates, v.FaultsInjected, v.Lost, retained[v.Name])
			}
		}
	}
}

// TestMQTTSessionExpiry runs mqtt-session-expiry: the subscriber offline
// for at least 4 s keeps its session, and every message published
// meanwhile, with the longest expiry and with 10 s; with 1 s the broker
// ends the session, and every intent routed during the window is lost,
// which the window's fault event says.
func TestMQTTSessionExpiry(t *testing.T) {
	res := passedBuiltin(t, "mqtt-session-expiry")
	windows := map[string]history.Event{}
	for e, err := range history.Scan(bytes.NewReader(res.History)) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == history.Fault && e.Fault == "subscriber-offline" {
			windows[e.Variant] = e
		}
	}
	for _, v := range res.Run.Variants {
		w, ok := windows[v.Name]
		if !ok || len(w.Intents) == 0 {
			t.Fatalf("%s: no subscriber-offline window with intents held (%+v)", v.Name, w)
		}
		ended := strings.Contains(w.Reason, "session ended")
		switch v.Name {
		case "expiry-1s":
			if !ended || v.Lost != len(w.Intents) || v.Duplicates != 0 {
				t.Errorf("%s: lost %d of %d held, duplicates %d, reason %q; want every held intent lost and the session ended", v.Name, v.Lost, len(w.Intents), v.Duplicates, w.Reason)
			}
		default:
			if ended || v.Lost != 0 || v.Duplicates != 0 {
				t.Errorf("%s: lost %d, duplicates %d, reason %q; want the session kept, nothing lost", v.Name, v.Lost, v.Duplicates, w.Reason)
			}
		}
	}
}

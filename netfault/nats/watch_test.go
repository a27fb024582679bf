package nats

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// TestWatcher: a delivery is seen whole in any chunking before it passes,
// with the stream sequence and delivery count of either ack subject form;
// the first ack of it is shown (a nak settles it unseen, a second ack
// passes unseen); dropped, the ack goes and the connection stays; an
// error withholds the delivery or the ack and cuts.
func TestWatcher(t *testing.T) {
	const (
		ack1 = "$JS.ACK.dqbench-v.dqbench.1.7.7.1700000000000000000.3"
		ack2 = "$JS.ACK.hub.ACCHASH.dqbench-v.dqbench.2.8.9.1700000000000000000.2.tok"
		ack3 = "$JS.ACK.dqbench-v.dqbench.1.9.10.1700000000000000000.1"
	)
	server := "INFO {}\r\n" +
		"MSG dqbench.v.00000001 5 " + ack1 + " 2\r\nhi\r\n" +
		"HMSG dqbench.v.00000002 5 " + ack2 + " 12 14\r\nNATS/1.0\r\n\r\nhi\r\n" +
		"MSG dqbench.v.00000003 5 " + ack3 + " 2\r\nhi\r\n" +
		"HMSG _INBOX.x 5 16 16\r\nNATS/1.0 408\r\n\r\n\r\n" +
		"MSG other 5 $JS.ACK.a.b.1.1.1.1.1 2\r\nhi\r\n"
	client := pub(ack1, "", "+ACK") + pub(ack2, "", "") + pub(ack2, "", "+ACK") + pub(ack3, "", "-NAK") + pub(ack3, "", "+ACK") + pub("elsewhere", "", "+ACK")
	for _, n := range []int{1, 5, 1000} {
		var delivered, acked []Delivery
		w := &Watcher{
			Intent:    intentOf,
			Delivered: func(_ net.Addr, d Delivery) error { delivered = append(delivered, d); return nil },
			Acked: func(_ net.Addr, d Delivery) (bool, error) {
				acked = append(acked, d)
				return d.Intent == 2, nil // ack-lost on intent 2
			},
		}
		up, down, _ := w.Filters(&net.TCPAddr{})
		if got := feed(down, server, n); got != server {
			t.Fatalf("chunks of %d: the server's side changed:\n%q", n, got)
		}
		want := []Delivery{{1, ack1, 7, 1}, {2, ack2, 8, 2}, {3, ack3, 9, 1}}
		if len(delivered) != 3 || delivered[0] != want[0] || delivered[1] != want[1] || delivered[2] != want[2] {
			t.Fatalf("chunks of %d: delivered %+v, want %+v", n, delivered, want)
		}
		wantUp := pub(ack1, "", "+ACK") + pub(ack2, "", "+ACK") + pub(ack3, "", "-NAK") + pub(ack3, "", "+ACK") + pub("elsewhere", "", "+ACK")
		if got := feed(up, client, n); got != wantUp {
			t.Errorf("chunks of %d: client's side\n%q, want\n%q", n, got, wantUp)
		}
		if len(acked) != 2 || acked[0] != want[0] || acked[1] != want[1] {
			t.Errorf("chunks of %d: acked %+v", n, acked)
		}
	}

	cut := &Watcher{
		Intent:    intentOf,
		Delivered: func(_ net.Addr, d Delivery) error { return errors.New("kill") },
	}
	_, down, _ := cut.Filters(&net.TCPAddr{})
	out, c := down.Filter([]byte(server))
	if !c || string(out) != "INFO {}\r\n" {
		t.Errorf("a withheld delivery: %q, cut %v", out, c)
	}
	cut = &Watcher{
		Intent: intentOf,
		Acked:  func(net.Addr, Delivery) (bool, error) { return false, errors.New("kill") },
	}
	up, down, _ := cut.Filters(&net.TCPAddr{})
	feed(down, server, 1000)
	out, c = up.Filter([]byte("PING\r\n" + client))
	if !c || string(out) != "PING\r\n" || strings.Contains(string(out), "ACK") {
		t.Errorf("a withheld ack: %q, cut %v", out, c)
	}
}

package mqtt

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for the two directions' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// The watcher passes one unacknowledged PUBLISH at a time: the second
// waits until the consumer's PUBACK of the first went by; each PUBACK is
// shown with the intent its packet id carried.
func TestWatcherWindow(t *testing.T) {
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001}
	var mu sync.Mutex
	var events []string
	delivered := make(chan int, 2)
	w := &Watcher{
		Intent: func(topic string) (int, bool) {
			n, err := strconv.Atoi(strings.TrimPrefix(topic, "dqbench/v/"))
			return n, err == nil
		},
		Delivered: func(_ net.Addr, d Delivery) error {
			mu.Lock()
			events = append(events, "deliver "+strconv.Itoa(d.Intent))
			mu.Unlock()
			delivered <- d.Intent
			return nil
		},
		Acked: func(_ net.Addr, d Delivery) error {
			mu.Lock()
			events = append(events, "ack "+strconv.Itoa(d.Intent))
			mu.Unlock()
			return nil
		},
	}
	up, down, _ := w.Filters(remote)
	var toClient, toBroker syncBuffer
	up.(*packets).Start(&toBroker)
	down.(*packets).Start(&toClient)
	both := append(publish("dqbench/v/7", 1, "a"), publish("dqbench/v/8", 2, "b")...)
	done := make(chan bool)
	go func() {
		_, cut := down.Filter(both) // the broker sent both at once
		done <- cut
	}()
	<-delivered // the first passed; the second must wait for its ack
	if _, cut := up.Filter(ack(Puback, 1)); cut {
		t.Fatal("the PUBACK cut the connection")
	}
	<-delivered
	if <-done {
		t.Fatal("the PUBLISHes cut the connection")
	}
	want := []string{"deliver 7", "ack 7", "deliver 8"}
	if strings.Join(events, ", ") != strings.Join(want, ", ") {
		t.Errorf("events %v, want %v", events, want)
	}
	if !bytes.Equal(toClient.b.Bytes(), both) || !bytes.Equal(toBroker.b.Bytes(), ack(Puback, 1)) {
		t.Errorf("forwarded %x to the client and %x to the broker", toClient.b.Bytes(), toBroker.b.Bytes())
	}

	// A PUBLISH waiting for room gives up when the connection ends.
	go func() { _, cut := down.Filter(publish("dqbench/v/9", 3, "c")); done <- cut }()
	down.(*packets).Stop()
	if !<-done {
		t.Error("a PUBLISH held back passed after the connection ended")
	}
}

package netfault

import (
	"net"
	"strings"
	"testing"
)

// TestConnectHidesThePassword: an external toxiproxy that does not answer
// is an error naming its API URL with the password masked, malformed or
// valid: no piece of it is in the error.
func TestConnectHidesThePassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, pw := range []string{"PW1x%2FPW2y%20%23%25%40", "PW1x@PW2y", "PW1x/PW2y", "PW1x PW2y", "PW1x#PW2y", "PW1x%PW2y"} {
		l, err := Connect("http://u:" + pw + "@" + addr)
		if err == nil {
			l.Close()
			t.Errorf("%s: connected where nothing listens", pw)
			continue
		}
		if strings.Contains(err.Error(), "PW1x") || strings.Contains(err.Error(), "PW2y") {
			t.Errorf("password %q: the error holds it: %v", pw, err)
		}
	}
}

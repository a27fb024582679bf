package catalog

import (
	"strings"
	"testing"
)

func TestMaskURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:***@127.0.0.1:5672/"},
		{"amqp://u:p%40ss@h:5672/vh", "amqp://u:***@h:5672/vh"},
		{"amqp://guest:secret@[::1", "amqp://guest:***@[::1"}, // does not parse: masked all the same
		{"amqp://guest@127.0.0.1/", "amqp://guest@127.0.0.1/"},
		{"127.0.0.1:9092", "127.0.0.1:9092"},
		// The userinfo runs to the last @, whatever the password holds.
		{"postgres://u:PW/x@127.0.0.1:5440/test", "postgres://u:***@127.0.0.1:5440/test"},
		{"postgres://u:p w#x%y@z@h/db", "postgres://u:***@h/db"},
		{"nats://TOKEN/x@127.0.0.1:4222", "nats://***@127.0.0.1:4222"}, // a NATS token
		{"host=h user=u password=se/cret dbname=db", "host=h user=u password=*** dbname=db"},
		{"host=h password='se cr\\'et' dbname=db", "host=h password=*** dbname=db"},
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:6379"},
	} {
		if got := MaskURL(tc.in); got != tc.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	text := `addresses: ["amqp://guest:s1@a:5672/", amqp://u:s2@b/]` + "\nstore: postgres://pg:s3@h:5432/db\nredis: redis://127.0.0.1:6379\n" +
		`parse "postgres://u:s4 / # x@h:5432/db": invalid` + "\n" +
		`at 0@5, http://127.0.0.1:8474 then 1@7; two: amqp://u:s5/@a/,amqp://u:s6@b/ host=h password=s7` + "\n"
	want := `addresses: ["amqp://guest:***@a:5672/", amqp://u:***@b/]` + "\nstore: postgres://pg:***@h:5432/db\nredis: redis://127.0.0.1:6379\n" +
		`parse "postgres://u:***@h:5432/db": invalid` + "\n" +
		`at 0@5, http://127.0.0.1:8474 then 1@7; two: amqp://u:***@a/,amqp://u:***@b/ host=h password=***` + "\n"
	if got := MaskURLs(text); got != want {
		t.Errorf("MaskURLs:\n got %q\nwant %q", got, want)
	}
}

// TestParseURLHidesThePassword: every URL check says what is wrong with a
// user or password a URL cannot carry as it is, and how to write it, in
// an error that holds no piece of it; a percent-encoded one passes.
func TestParseURLHidesThePassword(t *testing.T) {
	checks := map[string]func(string) error{
		"amqp":     AMQPURL,
		"tcp":      MQTTURL,
		"nats":     NATSURL,
		"http":     ToxiproxyURL,
		"redis":    ParseRedis,
		"postgres": func(a string) error { _, err := ParseStore(a); return err },
	}
	hosts := map[string]string{"amqp": "127.0.0.1:5672/", "tcp": "127.0.0.1:1883", "nats": "127.0.0.1:4222",
		"http": "127.0.0.1:8474", "redis": "127.0.0.1:6379/0", "postgres": "127.0.0.1:5432/test"}
	for kind, check := range checks {
		scheme := kind
		for _, pw := range []string{"PW1x/PW2y", "PW1x PW2y", "PW1x#PW2y", "PW1x%PW2y", "PW1x?PW2y", "PW1x\"PW2y", "PW1x@PW2y"} {
			a := scheme + "://u:" + pw + "@" + hosts[kind]
			err := check(a)
			if err == nil || !strings.Contains(err.Error(), "percent-encode") {
				t.Errorf("%s: error %v, want one saying to percent-encode", MaskURL(a), err)
			}
			if err != nil && (strings.Contains(err.Error(), "PW1x") || strings.Contains(err.Error(), "PW2y")) {
				t.Errorf("%s: the error holds the password: %v", MaskURL(a), err)
			}
		}
		for _, pw := range []string{"PW1x%2FPW2y%20%23%25%3F%40"} {
			if err := check(scheme + "://u:" + pw + "@" + hosts[kind]); err != nil {
				t.Errorf("%s://u:%s@...: %v", scheme, pw, err)
			}
		}
	}
	if _, err := ParseStore("host=127.0.0.1 user=u password=PW1x dbname=test"); err == nil || strings.Contains(err.Error(), "PW1x") || !strings.Contains(err.Error(), "DSN") {
		t.Errorf("a DSN store: %v", err)
	}
}

// TestBrokerDuplicateWords: every kind says in its own words how it stores
// a publish twice and delivers an acked message again; the first is said
// in parentheses, so it has none of its own.
func TestBrokerDuplicateWords(t *testing.T) {
	for _, b := range Brokers {
		if b.StoredTwice == "" || b.AckedAgain == "" {
			t.Errorf("%s: StoredTwice %q, AckedAgain %q: want both", b.Kind, b.StoredTwice, b.AckedAgain)
		}
		if strings.ContainsAny(b.StoredTwice, "()") {
			t.Errorf("%s: StoredTwice has parentheses: %q", b.Kind, b.StoredTwice)
		}
	}
}

package catalog

import "testing"

func TestMaskURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:***@127.0.0.1:5672/"},
		{"amqp://u:p%40ss@h:5672/vh", "amqp://u:***@h:5672/vh"},
		{"amqp://guest:secret@[::1", "amqp://guest:***@[::1"}, // does not parse: masked all the same
		{"amqp://guest@127.0.0.1/", "amqp://guest@127.0.0.1/"},
		{"127.0.0.1:9092", "127.0.0.1:9092"},
	} {
		if got := MaskURL(tc.in); got != tc.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	text := `addresses: ["amqp://guest:s1@a:5672/", amqp://u:s2@b/]` + "\nstore: postgres://pg:s3@h:5432/db\nredis: redis://127.0.0.1:6379\n"
	want := `addresses: ["amqp://guest:***@a:5672/", amqp://u:***@b/]` + "\nstore: postgres://pg:***@h:5432/db\nredis: redis://127.0.0.1:6379\n"
	if got := MaskURLs(text); got != want {
		t.Errorf("MaskURLs:\n got %q\nwant %q", got, want)
	}
}

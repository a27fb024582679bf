package runner

import (
	"testing"

	"github.com/dqbench/dqbench/catalog"
)

func TestMessageID(t *testing.T) {
	if got := messageID(catalog.BusinessID, 1, 7, 2, 7, 50); got != "7" {
		t.Errorf("business id of intent 7 = %q, want \"7\"", got)
	}
	a, b := messageID(catalog.PerSendUUID, 1, 7, 1, 7, 50), messageID(catalog.PerSendUUID, 1, 7, 2, 7, 50)
	if a == b || len(a) != 36 {
		t.Errorf("per-send UUIDs of two sends: %q, %q; want two different UUIDs", a, b)
	}
	if again := messageID(catalog.PerSendUUID, 1, 7, 1, 7, 50); again != a {
		t.Errorf("the same seed gave another UUID: %q vs %q", again, a)
	}
	// Two intents with equal content share a content hash; others do not.
	if messageID(catalog.ContentHash, 1, 3, 1, 3, 50) != messageID(catalog.ContentHash, 1, 19, 1, 3, 50) {
		t.Error("equal content, different content hashes")
	}
	if messageID(catalog.ContentHash, 1, 3, 1, 3, 50) == messageID(catalog.ContentHash, 1, 3, 1, 3, 51) {
		t.Error("different amounts, one content hash")
	}
}

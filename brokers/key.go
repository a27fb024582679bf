package brokers

import (
	"fmt"
	"strconv"
)

// Key is the message key (and business id) of an intent.
func Key(intent int) string { return strconv.Itoa(intent) }

// ParseKey reads an intent back from a message key.
func ParseKey(key string) (int, error) {
	n, err := strconv.Atoi(key)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("message key %q is not a dqbench intent id", key)
	}
	return n, nil
}

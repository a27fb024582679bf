package leftover

import (
	"fmt"
	"os"
	"strings"
)

// startTime is when process pid started, in clock ticks since boot
// (/proc/PID/stat field 22): with the pid, it names one process, even
// after the pid is reused. A zombie has none: it is no longer running.
func startTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	if fields[0] == "Z" {
		// Dead, its exit not yet collected by its parent: its ledger is
		// an orphan's already.
		return "", fmt.Errorf("process %d has exited", pid)
	}
	return fields[19], nil // field 22 overall: 3 + 19
}

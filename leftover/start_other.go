//go:build !linux

package leftover

import (
	"os"
	"syscall"
)

// startTime, where /proc is not there: "0" for a live pid (a reused pid
// then looks alive: a sweep leaves its ledger for later).
func startTime(pid int) (string, error) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return "", err
	}
	if err := p.Signal(syscall.Signal(0)); err != nil {
		return "", err
	}
	return "0", nil
}

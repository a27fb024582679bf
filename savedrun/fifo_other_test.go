//go:build !unix

package savedrun_test

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs here") }

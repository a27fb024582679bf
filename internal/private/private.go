// Package private checks that what dqbench trusts on disk is the current
// user's alone: its cleanup ledger, the state files of the clusters it
// manages, and the directories it removes. They live under a shared
// temporary directory, where another local user could plant a directory
// or a symbolic link by the same name before dqbench makes its own; what
// such a directory lists (another directory, a queue, a cluster's
// processes) dqbench would then remove or kill. So a directory dqbench
// reads or writes there must not be a symbolic link, must belong to the
// current user and must not be writable by group or others; the
// directories above it must belong to the user or to root, and be
// writable by others only when sticky (like /tmp).
package private

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotPrivate is what every refusal wraps.
var ErrNotPrivate = errors.New("not private to this user")

// Owner reports the uid that owns a file whose Lstat (or Stat) is fi, and
// whether it is known (where the system does not say, as on Windows,
// there is nothing to check and everything passes).
// Tests replace it to play another local user.
var Owner = func(path string, fi fs.FileInfo) (uid int, ok bool) { return owner(fi) }

// Me is the uid files must belong to: the effective user's, who creates
// them.
var Me = os.Geteuid

// Error is a refusal: what, where, and why.
type Error struct {
	Path, Why string
}

func (e *Error) Error() string {
	return fmt.Sprintf("dqbench will not use %s: %s", e.Path, e.Why)
}

func (e *Error) Unwrap() error { return ErrNotPrivate }

// Dir checks that dir is a directory of the current user's (or of one of
// the users also: the one a managed RabbitMQ runs as), not a symbolic
// link, not writable by group or others, in directories no other user
// (but root) can change.
func Dir(dir string, also ...int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &Error{dir, "it is a symbolic link"}
	case !fi.IsDir():
		return &Error{dir, "it is not a directory"}
	}
	if err := mine(dir, fi, also); err != nil {
		return err
	}
	return parents(dir)
}

// File checks that path is a regular file of the current user's, not a
// symbolic link and not writable by group or others.
func File(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &Error{path, "it is a symbolic link"}
	case !fi.Mode().IsRegular():
		return &Error{path, "it is not a regular file"}
	}
	return mine(path, fi, nil)
}

// MkdirAll makes dir (and what is missing above it) readable by the
// current user only (0700), and checks it as Dir does: one that was
// there already may be another user's.
func MkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return Dir(dir)
}

// mine checks path's owner and mode.
func mine(path string, fi fs.FileInfo, also []int) error {
	uid, ok := Owner(path, fi)
	if !ok {
		return nil // no owners here, and no modes that say who may write
	}
	if uid != Me() && !contains(also, uid) {
		return &Error{path, fmt.Sprintf("it belongs to uid %d, not to you (uid %d); another user may have made it to have dqbench act on what it names", uid, Me())}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &Error{path, fmt.Sprintf("it is writable by group or others (mode %04o)", perm)}
	}
	return nil
}

// parents checks the directories above dir: each the current user's or
// root's, and writable by others only when sticky (another user cannot
// rename what is not theirs in /tmp).
func parents(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p) // /tmp may be a link (macOS: /private/tmp)
		if err != nil {
			return err
		}
		uid, ok := Owner(p, fi)
		if !ok {
			return nil
		}
		if uid != Me() && uid != 0 {
			return &Error{dir, fmt.Sprintf("%s above it belongs to uid %d, who could replace it", p, uid)}
		}
		if fi.Mode().Perm()&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return &Error{dir, fmt.Sprintf("%s above it is writable by anyone and not sticky", p)}
		}
		if parent := filepath.Dir(p); parent == p {
			return nil
		}
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

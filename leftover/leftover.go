// Package leftover keeps a ledger of what a dqbench process creates
// outside itself (temporary directories, RabbitMQ queues, PostgreSQL
// schemas), so that what a killed dqbench leaves behind (SIGKILL, a power
// cut: no program cleans up after those) can be found and removed later,
// by `dqbench clean` or by the next run.
//
// Each process appends to its own file, DIR/PID-START.jsonl, one line per
// resource created ("+") and removed ("-"); a process that ends normally
// removes its file. A file whose process is gone (no such pid, or the pid
// reused by a process that started at another time) is an orphan's.
//
// The ledger directory sits in a shared temporary directory, where another
// local user could make it first: it is used only when it is the current
// user's alone (package private), and a sweep removes only what dqbench
// made: a directory holding its Marker, a file named dqbench-*, and, on a
// server, names with dqbench's prefix (the removers check those).
package leftover

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/private"
)

// Kind is what a resource is.
type Kind string

// The kinds of resource the ledger records.
const (
	Dir    Kind = "dir"    // a directory made by MkdirTemp: Name is its path
	File   Kind = "file"   // a file made by CreateTemp: Name is its path
	Queue  Kind = "queue"  // a RabbitMQ queue: Where is the broker URL, Name the queue
	Schema Kind = "schema" // a PostgreSQL schema: Where is the database URL, Name the schema
	Keys   Kind = "keys"   // Redis keys: Where is the Redis URL, Name their common prefix
	Stream Kind = "stream" // a NATS JetStream stream: Where is the server URL, Name the stream
)

// Entry is one resource. Where holds a URL with its password when the
// resource needs one to be removed: the ledger is readable by its owner
// only (0600, in a 0700 directory), like ~/.pgpass.
type Entry struct {
	Kind  Kind   `json:"kind"`
	Where string `json:"where,omitempty"`
	Name  string `json:"name"`
}

// String is e as it may be printed: its URL masked.
func (e Entry) String() string {
	if e.Where == "" {
		return fmt.Sprintf("%s %s", e.Kind, e.Name)
	}
	return fmt.Sprintf("%s %s on %s", e.Kind, e.Name, catalog.MaskURL(e.Where))
}

type line struct {
	Op string `json:"op"` // "+" created, "-" removed
	Entry
}

// LedgerDir is where the ledgers live: DQBENCH_LEDGER_DIR, else
// TMPDIR/dqbench-ledger-UID.
func LedgerDir() string {
	if d := os.Getenv("DQBENCH_LEDGER_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("dqbench-ledger-%d", os.Getuid()))
}

// Check says whether the ledger directory may be used: nil when it is the
// current user's alone or not there yet; else why not, and what to do.
func Check() error {
	err := private.Dir(LedgerDir())
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, private.ErrNotPrivate):
		return fmt.Errorf("the cleanup ledger: %w; nothing it lists was removed, and runs keep no ledger until it is gone: remove it (as its owner or root) or set DQBENCH_LEDGER_DIR to a directory of your own", err)
	}
	return fmt.Errorf("the cleanup ledger: %w", err)
}

// Marker is the file MkdirTemp leaves in each directory it makes: a sweep
// removes a directory only when it holds it (and both are the user's).
const Marker = ".dqbench-made"

// MkdirTemp makes a new directory in the temporary directory (pattern as
// os.MkdirTemp's), marks it as dqbench's (Marker) and notes it: what a
// killed run leaves there is found and removed later.
func MkdirTemp(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, Marker), []byte("made by dqbench; removed with its directory by dqbench clean once its run is gone\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	Note(Entry{Kind: Dir, Name: dir})
	return dir, nil
}

// CreateTemp creates a new file in the temporary directory, named
// dqbench-* (pattern, as os.CreateTemp's, must start with it), and notes
// it.
func CreateTemp(pattern string) (*os.File, error) {
	if !strings.HasPrefix(pattern, filePrefix) {
		return nil, fmt.Errorf("leftover.CreateTemp(%q): the pattern must start with %s", pattern, filePrefix)
	}
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, err
	}
	Note(Entry{Kind: File, Name: f.Name()})
	return f, nil
}

// filePrefix starts the name of every file a sweep may remove.
const filePrefix = "dqbench-"

var (
	mu   sync.Mutex
	file *os.File // this process's ledger, opened at its first entry
	live = map[Entry]bool{}
)

// Note records that e was created. It never fails the caller: a ledger
// that cannot be written only means a kill could leave e unfound.
func Note(e Entry) { write(line{Op: "+", Entry: e}) }

// Path is this process's ledger, DIR/PID-START.jsonl; it exists once the
// process has noted something.
func Path() string {
	start, _ := startTime(os.Getpid())
	return filepath.Join(LedgerDir(), fmt.Sprintf("%d-%s.jsonl", os.Getpid(), start))
}

// Alive reports whether the process whose ledger is path is still
// running (a zombie, dead and not yet reaped, is not).
func Alive(path string) bool { return alive(filepath.Base(path)) }

// Forget records that e was removed.
func Forget(e Entry) { write(line{Op: "-", Entry: e}) }

func write(l line) {
	mu.Lock()
	defer mu.Unlock()
	if l.Op == "+" {
		live[l.Entry] = true
	} else {
		delete(live, l.Entry)
	}
	if file == nil {
		if private.MkdirAll(LedgerDir()) != nil {
			return // not the user's alone: a kill can leave l unfound (Check says why)
		}
		f, err := os.OpenFile(Path(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return
		}
		file = f
	}
	b, _ := json.Marshal(l)
	_, _ = file.Write(append(b, '\n'))
}

// Close removes this process's ledger when everything it noted was
// forgotten, and keeps it otherwise, for the next sweep.
func Close() {
	mu.Lock()
	defer mu.Unlock()
	if file == nil {
		return
	}
	name := file.Name()
	file.Close()
	file = nil
	if len(live) == 0 {
		os.Remove(name)
	}
}

// Remover removes one resource of its kind.
type Remover func(ctx context.Context, e Entry) error

// Sweep removes what the ledgers of dead dqbench processes still hold:
// directories and files itself (only what dqbench made: removeDir,
// removeFile), other kinds with remove[kind]. It returns what it removed
// and what it could not (with why); a ledger whose every entry is gone is
// deleted. err, when the ledger directory is not the user's alone (Check),
// says why nothing was read.
func Sweep(ctx context.Context, remove map[Kind]Remover) (removed []Entry, failed []error, err error) {
	ledgers, err := deadLedgers()
	if err != nil {
		return nil, nil, err
	}
	for _, path := range ledgers {
		if ctx.Err() != nil {
			break
		}
		left, err := read(path)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		var kept []Entry
		for _, e := range left {
			var err error
			switch {
			case e.Kind == Dir:
				err = removeDir(e.Name)
			case e.Kind == File:
				err = removeFile(e.Name)
			case remove[e.Kind] != nil:
				err = remove[e.Kind](ctx, e)
			default:
				err = errors.New("no way to remove it here")
			}
			if err != nil {
				failed = append(failed, fmt.Errorf("%s: %w", e, err))
				kept = append(kept, e)
				continue
			}
			removed = append(removed, e)
		}
		if len(kept) == 0 {
			os.Remove(path)
		}
	}
	return removed, failed, nil
}

// removeDir removes dir, when dqbench made it: a directory of the user's
// alone (not a symbolic link) holding the user's Marker. One already gone
// is removed.
func removeDir(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := private.Dir(dir); err != nil {
		return err
	}
	if err := private.File(filepath.Join(dir, Marker)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("it holds no %s: dqbench did not make it (or an older dqbench did), so it is left alone; remove it yourself if it is a leftover, then dqbench clean --forget", Marker)
	} else if err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// removeFile removes path, when dqbench made it: a regular file of the
// user's alone named dqbench-*. One already gone is removed.
func removeFile(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if !strings.HasPrefix(filepath.Base(path), filePrefix) {
		return fmt.Errorf("not a file dqbench makes (dqbench-*), so it is left alone")
	}
	if err := private.File(path); err != nil {
		return err
	}
	return os.Remove(path)
}

// ForgetOrphans deletes the ledgers of dead dqbench processes, with what
// they still list: resources the user gave up on (on a server gone for
// good), which no sweep will try again. It returns what was forgotten.
func ForgetOrphans() ([]Entry, error) {
	ledgers, err := deadLedgers()
	var out []Entry
	for _, path := range ledgers {
		left, _ := read(path)
		if os.Remove(path) == nil {
			out = append(out, left...)
		}
	}
	return out, err
}

// Orphans lists what the ledgers of dead dqbench processes still hold,
// without removing anything.
func Orphans() ([]Entry, error) {
	ledgers, err := deadLedgers()
	var out []Entry
	for _, path := range ledgers {
		left, _ := read(path)
		out = append(out, left...)
	}
	return out, err
}

// deadLedgers lists the ledgers of dqbench processes no longer running;
// the error is Check's: then it lists none.
func deadLedgers() ([]string, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	files, _ := filepath.Glob(filepath.Join(LedgerDir(), "*.jsonl"))
	var dead []string
	for _, path := range files {
		if !alive(filepath.Base(path)) {
			dead = append(dead, path)
		}
	}
	return dead, nil
}

// read replays a ledger: what was created and not removed, in order. A
// ledger that is not the user's alone (a link, another user's, writable
// by others) is not read.
func read(path string) ([]Entry, error) {
	if err := private.File(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var order []Entry
	live := map[Entry]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Name == "" {
			continue // a line cut short by the kill
		}
		if l.Op == "+" {
			if !live[l.Entry] {
				order = append(order, l.Entry)
			}
			live[l.Entry] = true
		} else {
			delete(live, l.Entry)
		}
	}
	var out []Entry
	for _, e := range order {
		if live[e] {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// alive reports whether the process that wrote the ledger named name
// (PID-START.jsonl) is still running: the pid exists and started when the
// ledger says.
func alive(name string) bool {
	pidText, start, ok := strings.Cut(strings.TrimSuffix(name, ".jsonl"), "-")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	now, err := startTime(pid)
	if err != nil {
		return false
	}
	return now == start
}

// Package savedrun keeps a run on disk and reads it back, so that
// "dqbench check DIR" can judge it again from its history alone.
//
// A run directory holds scenario.yaml (the scenario as it ran: defaults and
// the --seed, --messages and --timeout overrides applied), history.jsonl
// (every event, written as the run records it), audit.json (each variant's
// final store audit), meta.json and result.json (the judgement at run time,
// for people and scripts; check does not read it).
package savedrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/internal/ansi"
	"github.com/dqbench/dqbench/scenario"
)

// File names inside a run directory.
const (
	ScenarioFile = "scenario.yaml"
	HistoryFile  = "history.jsonl"
	AuditFile    = "audit.json"
	MetaFile     = "meta.json"
	ResultFile   = "result.json"
)

// ErrExists is returned by Create for a directory that already holds a run.
var ErrExists = errors.New("already holds a saved run")

// CheckOut makes sure runs can be saved under out before anything runs: out
// is (or can be made) a writable directory.
func CheckOut(out string) error {
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return fmt.Errorf("--out %s is a file, not a directory", out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	f, err := os.CreateTemp(out, ".dqbench-write-test-*")
	if err != nil {
		return fmt.Errorf("--out %s is not writable: %w", out, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// Dir is a run directory being written.
type Dir struct {
	Path    string
	History *os.File
}

// Create makes out/name/ for a run and opens its history file. It refuses a
// directory that holds a run already unless force is set.
func Create(out, name string, force bool) (*Dir, error) {
	path := filepath.Join(out, name)
	if _, err := os.Stat(filepath.Join(path, HistoryFile)); err == nil && !force {
		return nil, fmt.Errorf("%s %w; choose another --out, remove it, or add --force to overwrite it", path, ErrExists)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	for _, f := range []string{ScenarioFile, AuditFile, MetaFile, ResultFile} {
		if err := os.Remove(filepath.Join(path, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	h, err := os.Create(filepath.Join(path, HistoryFile))
	if err != nil {
		return nil, err
	}
	return &Dir{Path: path, History: h}, nil
}

// Finish closes the history and writes the rest of the run.
func (d *Dir) Finish(s *scenario.Scenario, meta check.Meta, audits map[string]history.Audit, judged *check.Run) error {
	if err := d.History.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	// Judging needs no password, and a saved run gets shared.
	y, err := s.SharedYAML()
	if err != nil {
		return err
	}
	y = []byte(catalog.MaskURLs(string(y))) // and the comment naming the file
	if err := os.WriteFile(filepath.Join(d.Path, ScenarioFile), y, 0o644); err != nil {
		return err
	}
	files := map[string]any{AuditFile: audits, MetaFile: meta}
	if judged != nil {
		files[ResultFile] = judged
	}
	for name, v := range files {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d.Path, name), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Discard removes what Create made for a run that produced nothing to save
// (the broker was unreachable): the history file, and the directory if
// nothing else is in it. The same --out can then be used again without
// --force, and Find does not list a run that cannot be loaded.
func (d *Dir) Discard() error {
	if err := d.History.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	if err := os.Remove(filepath.Join(d.Path, HistoryFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if entries, err := os.ReadDir(d.Path); err == nil && len(entries) == 0 {
		return os.Remove(d.Path)
	}
	return nil
}

// Find returns the run directories at or under dir: dir itself if it holds a
// history, else its subdirectories that do, sorted.
func Find(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, HistoryFile)); err == nil {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w; give the directory a run was saved to with \"dqbench run SCENARIO --out DIR\"", err)
	}
	var out []string
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(sub, HistoryFile)); e.IsDir() && err == nil {
			out = append(out, sub)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no saved run (no %s in it or its subdirectories); save one with \"dqbench run SCENARIO --out %s\"", dir, HistoryFile, dir)
	}
	return out, nil
}

// Run is a saved run, read back.
type Run struct {
	Scenario    *scenario.Scenario
	Meta        check.Meta
	HistoryPath string
	Audits      map[string]history.Audit
}

// Load reads the run saved in dir; the history stays on disk, to be read
// in one pass (history.Scan).
//
// A saved run may come from someone else (a CI artifact), so every file
// must be a regular file (not a FIFO, a device or a link to one) and every
// read is bounded: the audit by what the run's messages can account for.
func Load(dir string) (Run, error) {
	var r Run
	paths := map[string]string{}
	for _, name := range []string{ScenarioFile, HistoryFile, AuditFile, MetaFile} {
		path := filepath.Join(dir, name)
		if err := regular(path); err != nil {
			return r, err
		}
		paths[name] = path
	}
	s, err := scenario.Load(paths[ScenarioFile])
	if err != nil {
		return r, err
	}
	r.Scenario = s
	r.HistoryPath = paths[HistoryFile]
	if err := readJSON(paths[MetaFile], maxMetaSize, &r.Meta); err != nil {
		return r, err
	}
	inertMeta(&r.Meta)
	if r.Meta.Messages < 0 || r.Meta.Messages > scenario.MaxMessages {
		return r, fmt.Errorf("%s: messages %d is outside 1..%d", paths[MetaFile], r.Meta.Messages, scenario.MaxMessages)
	}
	intents := int64(max(r.Meta.Messages, s.Messages))
	limit := int64(maxMetaSize) + int64(len(s.Variants))*intents*auditBytesPerIntent
	for _, v := range s.Variants {
		if v.Effect.IsCall() {
			limit += intents * callBytesPerIntent
		}
		if p := s.ProducerFor(v).Pattern; p != "" && p != catalog.Direct {
			limit += intents * producerBytesPerIntent
		}
	}
	// Each intent in the audit was delivered or written, an event of at
	// least 40 bytes in the history: a saved run that claims
	// millions of messages in a small history gets no larger allowance.
	if fi, err := os.Stat(paths[HistoryFile]); err == nil {
		limit = min(limit, int64(maxMetaSize)+fi.Size()*auditBytesPerHistoryByte)
	}
	if err := readJSON(paths[AuditFile], limit, &r.Audits); err != nil {
		return r, err
	}
	return r, nil
}

const (
	// maxMetaSize bounds meta.json, and is the audit's allowance besides
	// its intents.
	maxMetaSize = 1 << 20
	// auditBytesPerIntent is far more than one intent's line in audit.json
	// ("123456": 1,) takes, indentation included.
	auditBytesPerIntent = 64
	// callBytesPerIntent is the allowance of a variant whose effect is a
	// call: the calls its service recorded, an entry of about 80 bytes
	// each, indented, for six deliveries of every intent.
	callBytesPerIntent = 512
	// producerBytesPerIntent is the allowance of a variant with a producer
	// store (producer.pattern dual-write or outbox): an intent's business
	// row, outbox row and sent mark, a line of about 16 bytes each.
	producerBytesPerIntent = 64
	// auditBytesPerHistoryByte bounds the audit by the history: an audit
	// entry (at most a call's 80 bytes, indented) stands for at least one
	// event line of the history (40 bytes or more).
	auditBytesPerHistoryByte = 4
)

// regular refuses anything but a regular file at path; a symbolic link
// too, even to a regular file: a saved scenario.yaml linked to another
// file of the user's would have parts of that file echoed in the errors.
func regular(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file but %s: a saved run holds plain files only; refusing to read it", path, fileKind(fi.Mode()))
	}
	return nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// Judge judges the saved run from its files alone.
func (r Run) Judge() (check.Run, error) {
	f, err := os.Open(r.HistoryPath)
	if err != nil {
		return check.Run{}, err
	}
	defer f.Close()
	run, err := check.Judge(r.Scenario.Plan(), r.Meta, history.ScanRun(f, r.Meta.Messages), r.Audits)
	for i := range run.Variants {
		v := &run.Variants[i]
		v.Name, v.Strategy = ansi.Inert(v.Name), ansi.Inert(v.Strategy)
		inertAll(v.Notes)
		inertAll(v.Invalid)
	}
	if err != nil {
		return run, fmt.Errorf("%s: %w", r.HistoryPath, err)
	}
	return run, nil
}

// inertMeta escapes, in what a saved run's meta.json says, what a
// terminal would act on (ansi.Inert): a saved run may come from anyone,
// and its text is printed by check, explain and the reports.
func inertMeta(m *check.Meta) {
	for _, s := range []*string{&m.Scenario, &m.Broker, &m.Incomplete, &m.Error} {
		*s = ansi.Inert(*s)
	}
	if p := m.Provenance; p != nil {
		for _, s := range []*string{&p.DQBench, &p.Go, &p.Broker} {
			*s = ansi.Inert(*s)
		}
		inertAll(p.Clients)
		inertAll(p.Stores)
	}
}

// inertAll escapes each of ss in place (ansi.Inert); the history's text
// reaches a judged run's notes and reasons.
func inertAll(ss []string) {
	for i, s := range ss {
		ss[i] = ansi.Inert(s)
	}
}

// readJSON decodes the file at path into v, reading at most limit bytes.
func readJSON(path string, limit int64, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return err
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("%s: larger than %d bytes, more than the run it belongs to can have written", path, limit)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errors.Join(fmt.Errorf("%s: not valid JSON", path), err)
	}
	return nil
}

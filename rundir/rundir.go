// Package rundir saves a run to a directory and loads it back, so that
// "dqbench check DIR" can re-judge it from its history alone.
//
// A run directory holds scenario.yaml (the scenario as run, with the seed and
// message count it ran with), history.jsonl (every event), audit.json (each
// variant's final store audit), meta.json and result.json (the judgement at
// run time, for people and scripts; check ignores it).
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/store"
)

// File names inside a run directory.
const (
	ScenarioFile = "scenario.yaml"
	HistoryFile  = "history.jsonl"
	AuditFile    = "audit.json"
	MetaFile     = "meta.json"
	ResultFile   = "result.json"
)

// Run is what a run directory holds.
type Run struct {
	Scenario *scenario.Scenario
	Meta     check.Meta
	Events   []history.Event
	Audits   map[string]store.Audit
}

// Save writes r into dir/<scenario name>/ and returns that directory.
// scenarioYAML is the scenario source to store; judged is written as result.json.
func Save(dir string, r Run, scenarioYAML []byte, judged check.Run) (string, error) {
	out := filepath.Join(dir, r.Meta.Scenario)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(out, ScenarioFile), scenarioYAML, 0o644); err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(out, HistoryFile))
	if err != nil {
		return "", err
	}
	if err := history.Write(f, r.Events); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	for name, v := range map[string]any{AuditFile: r.Audits, MetaFile: r.Meta, ResultFile: judged} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(out, name), append(b, '\n'), 0o644); err != nil {
			return "", err
		}
	}
	return out, nil
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

// Load reads the run saved in dir.
func Load(dir string) (Run, error) {
	var r Run
	s, err := scenario.Load(filepath.Join(dir, ScenarioFile))
	if err != nil {
		return r, err
	}
	r.Scenario = s
	f, err := os.Open(filepath.Join(dir, HistoryFile))
	if err != nil {
		return r, err
	}
	defer f.Close()
	if r.Events, err = history.Read(f); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, HistoryFile), err)
	}
	if err := readJSON(filepath.Join(dir, AuditFile), &r.Audits); err != nil {
		return r, err
	}
	if err := readJSON(filepath.Join(dir, MetaFile), &r.Meta); err != nil {
		return r, err
	}
	return r, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errors.Join(fmt.Errorf("%s: not valid JSON", path), err)
	}
	return nil
}

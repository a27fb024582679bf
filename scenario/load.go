package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/dqbench/dqbench/internal/strictyaml"
	"github.com/dqbench/dqbench/scenarios"
)

// Resolve finds a scenario by argument: the name of a built-in scenario,
// or a file. A built-in's name always means the built-in, even where a
// file of that name (or NAME.yaml, NAME.yml) is in the working directory:
// a folder must not be able to swap in a scenario of its own (its process
// command would run) for one the user knows. Such a file gets a warning
// saying how to run it: ./NAME, a path, which never names a built-in.
// Any other argument is a file path.
func Resolve(arg string) (*Scenario, error) {
	if !looksLikePath(arg) {
		if data, ok := scenarios.Read(arg); ok {
			s, err := Parse("builtin:"+arg, data)
			if err != nil {
				return nil, err
			}
			s.Warnings = append(s.Warnings, shadowWarnings(arg)...)
			return s, nil
		}
	}
	fi, err := os.Stat(arg)
	if err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory; give a scenario file (.yaml) or a built-in name (%s)", strictyaml.Clip(arg), listHint())
		}
		return Load(arg)
	}
	names := scenarios.Names()
	builtins := fmt.Sprintf("(%s)%s", listHint(),
		didYouMean(strings.TrimSuffix(strings.TrimSuffix(filepath.Base(arg), ".yaml"), ".yml"), names))
	var pe *fs.PathError
	switch {
	case !errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe):
		return nil, fmt.Errorf("%s: %v", strictyaml.Clip(arg), pe.Err) // the error without the path, which may be long
	case looksLikePath(arg):
		return nil, fmt.Errorf("%s: no such file; give an existing scenario file or a built-in name %s", strictyaml.Clip(arg), builtins)
	}
	return nil, fmt.Errorf("no scenario file or built-in named %s %s", echo(arg), builtins)
}

// listHint says where the built-in names are: there are too many to
// name in an error line.
func listHint() string {
	return fmt.Sprintf("%d built-ins: dqbench list names them", len(scenarios.Names()))
}

// shadowWarnings says which files in the working directory are named like
// the built-in name, and so are not what it runs.
func shadowWarnings(name string) []string {
	var out []string
	for _, file := range []string{name, name + ".yaml", name + ".yml"} {
		if fi, err := os.Lstat(file); err == nil && !fi.IsDir() {
			out = append(out, fmt.Sprintf("warning: %s is the built-in scenario %s, not the file %s here; to run the file, give its path: ./%s",
				name, name, file, file))
		}
	}
	return out
}

// looksLikePath reports whether arg names a file rather than a built-in.
func looksLikePath(arg string) bool {
	return strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml")
}

// ResolveContext is Resolve, but returns ctx.Err() as soon as ctx is done,
// so that Ctrl-C is not held up by a slow file (a named pipe, a slow disk,
// a large scenario). The abandoned read goes on in its goroutine until the
// file gives way; the process is about to exit anyway.
func ResolveContext(ctx context.Context, arg string) (*Scenario, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		s     *Scenario
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				// Panic again in the caller's goroutine, where dqbench's
				// guard catches it.
				done <- result{panic: fmt.Sprintf("%v\n\n%s", r, debug.Stack())}
			}
		}()
		s, err := Resolve(arg)
		done <- result{s: s, err: err}
	}()
	select {
	case r := <-done:
		if r.panic != nil {
			panic(r.panic)
		}
		return r.s, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Load reads and parses the scenario file at path.
func Load(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	defer f.Close()
	// Read one byte past the limit, so that Parse can tell the file is too
	// large without reading all of it.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, data)
}

// Parse parses, checks and completes the scenario in data, read from file
// (used in messages). On failure the error is an Errors listing every
// problem found, each at file:line:col.
func Parse(file string, data []byte) (*Scenario, error) {
	root, problems, err := strictyaml.Read(file, data, "scenario: start with version: 1, then name, broker and variants")
	if err != nil {
		return nil, err
	}
	d := strictyaml.New(file, root)
	d.Add(problems)
	var s Scenario
	d.Decode(root, &s)
	if o := d.Overflow(); o != nil {
		return nil, Errors{o}
	}
	c := checker{d: d, s: &s}
	c.check()
	if errs := d.Problems(); len(errs) > 0 {
		return nil, errs
	}
	s.File = file
	s.Source = data
	for i := range s.Faults {
		s.Faults[i].Line = d.Line(fmt.Sprintf("faults[%d]", i))
	}
	for i := range s.Variants {
		s.Variants[i].Line = d.Line(fmt.Sprintf("variants[%d]", i))
	}
	s.Warnings = append(programWarnings(&s, d), partitionWarnings(&s, d)...)
	if !d.Has("seed") {
		s.Seed = DefaultSeed // seed: 0 is a seed like any other
	}
	applyDefaults(&s)
	return &s, nil
}

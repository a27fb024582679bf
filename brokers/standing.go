package brokers

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dqbench/dqbench/internal/private"
)

// Standing is a broker that "dqbench brokers up KIND" starts and leaves
// running, for a kind with a managed mode; "brokers status KIND" and
// "brokers down KIND" find it again from another dqbench process through
// its state in StandingDir. An adapter with one exports it; brokers/all
// lists them by kind.
type Standing struct {
	// Name is the broker's own name, accepted by "dqbench brokers" beside
	// the kind ("mosquitto" for kind mqtt).
	Name string
	// Noun names what runs in messages: "cluster", "broker".
	Noun string
	// Doc says what "brokers up" starts and what uses it, for --help.
	Doc string
	// Starting is printed before a start: what starts and how long it takes.
	Starting string
	// Use says how runs use it, given its state and the command that
	// stops it; printed after "brokers up".
	Use func(st StandingState, down string) string
	// Up starts it, unless it runs already (running: true); starting is
	// called before a start.
	Up func(ctx context.Context, starting func()) (st StandingState, running bool, err error)
	// Down stops it and removes its files; ErrNoStanding when none runs.
	Down func() (StandingState, error)
	// Status reads its state and which of its nodes run; ErrNoStanding
	// when "brokers up" started none.
	Status func() (StandingState, error)
	// Orphans lists what runs that were killed left of this kind's
	// throwaway brokers ("dqbench clean" stops them); nil when nothing
	// can be left.
	Orphans func() []string
	// Fetch, for a broker whose server is not a system package, copies
	// it into a cache ("dqbench brokers fetch KIND"), writing the tool's
	// output to out; nil when there is nothing to fetch.
	Fetch func(ctx context.Context, out io.Writer) (dir string, took time.Duration, err error)
}

// StandingState is what a standing broker is: where its files are, when
// it started and its nodes.
type StandingState struct {
	Dir      string
	Started  time.Time
	StartDur time.Duration
	Nodes    []StandingNode
}

// StandingNode is one process of a standing broker.
type StandingNode struct {
	Name    string
	Running bool // its process lives and it accepts connections
	URL     string
}

// Running counts the nodes that run.
func (s StandingState) Running() int {
	n := 0
	for _, node := range s.Nodes {
		if node.Running {
			n++
		}
	}
	return n
}

// ErrNoStanding: "dqbench brokers up KIND" has no broker running.
var ErrNoStanding = errors.New("no standing broker is running")

// StandingDir is the well-known directory of the standing broker of kind:
// $XDG_RUNTIME_DIR/dqbench-brokers/KIND when XDG_RUNTIME_DIR is set, else
// under the system's temporary directory.
func StandingDir(kind string) string {
	base := os.Getenv("XDG_RUNTIME_DIR")
	if base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, "dqbench-brokers", kind)
}

// CheckStanding says why the standing broker's directory dir (StandingDir)
// may not be used, when it or the dqbench-brokers directory above it is
// there and not the user's alone (package private): another local user
// could have made either first, with a state file naming processes to
// kill and a directory to remove. also are uids dir may belong to besides
// the user's (the nodes' own).
func CheckStanding(dir string, also ...int) error {
	if err := private.Dir(filepath.Dir(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := private.Dir(dir, also...); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// StandingCalls makes a Standing's Down and Status from a kind's own:
// down and status return its broker (the zero C when there is none) and
// errNone when "brokers up" started none, which become ErrNoStanding;
// state describes a broker, asking its nodes whether they run when probe
// is set (Down does not: they have just been stopped).
func StandingCalls[C comparable](down, status func() (C, error), errNone error, state func(c C, probe bool) StandingState) (downF, statusF func() (StandingState, error)) {
	var none C
	downF = func() (StandingState, error) {
		c, err := down()
		if errors.Is(err, errNone) {
			return StandingState{}, ErrNoStanding
		}
		if c == none {
			return StandingState{}, err
		}
		return state(c, false), err
	}
	statusF = func() (StandingState, error) {
		c, err := status()
		if errors.Is(err, errNone) {
			return StandingState{}, ErrNoStanding
		}
		if err != nil {
			return StandingState{}, err
		}
		return state(c, true), nil
	}
	return downF, statusF
}

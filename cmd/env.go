package cmd

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// connectionEnv are the environment variables that stand in for run's
// connection flags when the flag is not given: a flag given wins.
var connectionEnv = []struct{ flag, env string }{
	{"broker-mode", "DQBENCH_BROKER_MODE"},
	{"addresses", "DQBENCH_ADDRESSES"},
	{"store", "DQBENCH_STORE"},
	{"redis", "DQBENCH_REDIS"},
	{"toxiproxy", "DQBENCH_TOXIPROXY"},
}

// envFor is the environment variable of a connection flag, or "".
func envFor(flag string) string {
	for _, c := range connectionEnv {
		if c.flag == flag {
			return c.env
		}
	}
	return ""
}

// envHelp is the paragraph of run --help that lists connectionEnv.
func envHelp() string {
	var b strings.Builder
	b.WriteString("Environment (a flag given wins over its variable; an empty one is unset):\n")
	for _, c := range connectionEnv {
		fmt.Fprintf(&b, "  %-18s --%s\n", c.env, c.flag)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// lookupEnv is the environment the command reads: s.LookupEnv, else the
// process's.
func (s Streams) lookupEnv(name string) (string, bool) {
	if s.LookupEnv != nil {
		return s.LookupEnv(name)
	}
	return os.LookupEnv(name)
}

// applyEnv sets each connection flag not given on the command line from
// its environment variable, and returns the flags so set, each with the
// variable it came from (for messages).
func applyEnv(f *pflag.FlagSet, lookup func(string) (string, bool)) (map[string]string, error) {
	from := map[string]string{}
	for _, c := range connectionEnv {
		if f.Changed(c.flag) {
			continue
		}
		v, ok := lookup(c.env)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		if err := f.Set(c.flag, v); err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", c.env, err))
		}
		from[c.flag] = c.env
	}
	return from, nil
}

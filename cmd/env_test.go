package cmd

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/catalog"
)

// TestRunConnectionEnv: DQBENCH_ADDRESSES, DQBENCH_STORE, DQBENCH_REDIS
// and DQBENCH_TOXIPROXY stand in for their flags, a flag given wins, and a
// bad value names the variable.
func TestRunConnectionEnv(t *testing.T) {
	cli, _ := scenarioFiles(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		test func(t *testing.T, r result)
	}{
		{name: "DQBENCH_ADDRESSES", env: map[string]string{"DQBENCH_ADDRESSES": "127.0.0.1:9092,127.0.0.1:9093"}, test: func(t *testing.T, r result) {
			if c := r.only(t); c.s.Broker.Mode != catalog.External || strings.Join(c.s.Broker.Addresses, ",") != "127.0.0.1:9092,127.0.0.1:9093" {
				t.Errorf("broker %+v, want external at the two addresses", c.s.Broker)
			}
		}},
		{name: "--addresses wins", env: map[string]string{"DQBENCH_ADDRESSES": "nohostport"}, args: []string{"--addresses", "127.0.0.1:9094"}, test: func(t *testing.T, r result) {
			if c := r.only(t); strings.Join(c.s.Broker.Addresses, ",") != "127.0.0.1:9094" {
				t.Errorf("addresses %v, want the flag's", c.s.Broker.Addresses)
			}
		}},
		{name: "bad DQBENCH_ADDRESSES", env: map[string]string{"DQBENCH_ADDRESSES": "nohostport"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if len(r.fake.calls) != 0 || !strings.Contains(r.err, "DQBENCH_ADDRESSES: nohostport: not host:port") {
				t.Errorf("calls %d, stderr %s", len(r.fake.calls), r.err)
			}
		}},
		{name: "DQBENCH_STORE", env: map[string]string{"DQBENCH_STORE": "postgres://postgres@127.0.0.1:5432/test"}, test: func(t *testing.T, r result) {
			c := r.only(t)
			if got := c.s.StoreFor(c.s.Variants[0]); got != "postgres://postgres@127.0.0.1:5432/test" {
				t.Errorf("store %q, want DQBENCH_STORE's", got)
			}
		}},
		{name: "--store wins", env: map[string]string{"DQBENCH_STORE": "sqlit"}, args: []string{"--store", "sqlite"}, test: func(t *testing.T, r result) {
			c := r.only(t)
			if got := c.s.StoreFor(c.s.Variants[0]); got != "sqlite" {
				t.Errorf("store %q, want the flag's sqlite", got)
			}
		}},
		{name: "bad DQBENCH_STORE", env: map[string]string{"DQBENCH_STORE": "sqlit"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if !strings.Contains(r.err, "DQBENCH_STORE=sqlit: must be sqlite") {
				t.Errorf("stderr %s", r.err)
			}
		}},
		{name: "DQBENCH_REDIS", env: map[string]string{"DQBENCH_REDIS": "redis://127.0.0.1:6380"}, test: func(t *testing.T, r result) {
			if c := r.only(t); c.s.Redis != "redis://127.0.0.1:6380" {
				t.Errorf("redis %q, want DQBENCH_REDIS's", c.s.Redis)
			}
		}},
		{name: "empty DQBENCH_REDIS is unset", env: map[string]string{"DQBENCH_REDIS": ""}, test: func(t *testing.T, r result) {
			if c := r.only(t); c.s.Redis != "redis://127.0.0.1:6379" {
				t.Errorf("redis %q, want the default", c.s.Redis)
			}
		}},
		{name: "DQBENCH_TOXIPROXY on kafka", env: map[string]string{"DQBENCH_TOXIPROXY": "http://127.0.0.1:8474"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if !strings.Contains(r.err, "DQBENCH_TOXIPROXY: broker kind kafka does not go through toxiproxy") {
				t.Errorf("stderr %s", r.err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeRunner{}
			var out, errOut bytes.Buffer
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			code := execute(t.Context(), append([]string{"run", cli}, tc.args...),
				Streams{In: strings.NewReader(""), Out: &out, Err: &errOut, LookupEnv: lookup}, fake.run)
			r := result{code: code, out: out.String(), err: errOut.String(), fake: fake}
			if r.code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.out, r.err)
			}
			if tc.test != nil {
				tc.test(t, r)
			}
		})
	}
}

// TestRunHelpNamesEnv: run --help shows each variable beside its flag.
func TestRunHelpNamesEnv(t *testing.T) {
	r := run(t, nil, "run", "--help")
	for _, c := range connectionEnv {
		if !regexp.MustCompile(`(?m)^  ` + c.env + ` +--` + c.flag + `$`).MatchString(r.out) {
			t.Errorf("run --help does not list %s for --%s:\n%s", c.env, c.flag, r.out)
		}
		if !strings.Contains(r.out, "env "+c.env) {
			t.Errorf("--%s's usage does not name %s", c.flag, c.env)
		}
	}
}

// TestRunVariantAndQuiet: --variant runs only the variants named; --quiet
// prints one verdict line per scenario and no notices.
func TestRunVariantAndQuiet(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/two.yaml"
	writeFile(t, path, `version: 1
name: two
messages: 3
broker: {kind: kafka}
variants:
  - name: none
    strategy: none
  - name: dedup
    strategy: dedup-table
`)
	r := run(t, nil, "run", path, "--variant", "dedup", "--quiet", "--out", dir+"/runs")
	if r.code != ExitPass {
		t.Fatalf("exit %d\n%s", r.code, r.err)
	}
	c := r.only(t)
	if len(c.s.Variants) != 1 || c.s.Variants[0].Name != "dedup" {
		t.Errorf("variants %+v, want dedup only", c.s.Variants)
	}
	if lines := strings.Split(strings.TrimSpace(r.out), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "PASS two  seed 1 · 3 messages per variant · fake") {
		t.Errorf("--quiet printed %q, want one verdict line", r.out)
	}
	if r.err != "" {
		t.Errorf("--quiet printed notices: %q", r.err)
	}

	bad := run(t, nil, "run", path, "--variant", "dedup,nonee")
	if bad.code != ExitUsage || len(bad.fake.calls) != 0 {
		t.Fatalf("unknown variant: exit %d after %d runs, want %d before any", bad.code, len(bad.fake.calls), ExitUsage)
	}
	if !strings.Contains(bad.err, `--variant: scenario two has no variant "nonee" (did you mean "none"?); its variants: none, dedup`) {
		t.Errorf("stderr %q", bad.err)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

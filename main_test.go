package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/dqbench/dqbench/brokers/kafka/cluster"
	"github.com/dqbench/dqbench/brokers/mqtt"
	rabbitcluster "github.com/dqbench/dqbench/brokers/rabbitmq/cluster"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/cmd"
	"github.com/dqbench/dqbench/internal/testenv"
)

// TestMain lets the scripts in testdata/script run dqbench as a command.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"dqbench": func() {
			os.Exit(cmd.Execute(context.Background(), os.Args[1:], cmd.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Undertaker: cmd.StartUndertaker}))
		},
	})
}

// TestScripts runs the CLI end to end: commands, their output and exit codes.
func TestScripts(t *testing.T) {
	if raceEnabled {
		// Each script runs the test binary as dqbench, end to end: under
		// the race detector that is minutes of CI for code whose
		// concurrency the cmd, runner and broker packages' own tests
		// already run with -race. The plain tier runs every script.
		t.Skip("the CLI scripts run in the plain test tier, not under -race")
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":        cmdExits,
			"count":        cmdCount,
			"samecounts":   cmdSameCounts,
			"waitfor":      cmdWaitFor,
			"waitgone":     cmdWaitGone,
			"procgone":     cmdProcGone,
			"tlsnats":      cmdTLSNATS,
			"tlsrabbitmq":  cmdTLSRabbitMQ,
			"tlsmosquitto": cmdTLSMosquitto,
			"tlskafka":     cmdTLSKafka,
		},
		Condition: func(cond string) (bool, error) {
			if testing.Short() && (cond == "mosquitto" || cond == "kafkajars") {
				return false, nil // -short starts no broker program
			}
			if cond == "mosquitto" { // the mosquitto binary is installed
				err := mqtt.Installed()
				return err == nil, nil
			}
			if cond == "rabbitmq" { // a RabbitMQ answers on 127.0.0.1:5672
				c, err := net.DialTimeout("tcp", "127.0.0.1:5672", 2*time.Second)
				if err != nil {
					if testenv.Required() {
						return false, fmt.Errorf("no RabbitMQ at 127.0.0.1:5672 (%s=1: the services must answer; start them with make services): %v", testenv.RequireEnv, err)
					}
					return false, nil
				}
				c.Close()
				return true, nil
			}
			if cond == "rabbitmqserver" { // rabbitmq-server is installed (or must be: CI)
				return !testing.Short() && (rabbitcluster.Installed() || testenv.Required()), nil
			}
			if cond == "kafkajars" { // Apache Kafka's jars and a Java runtime
				_, err := cluster.FindInstall()
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			// A standing broker a failed script left ("dqbench brokers up
			// mosquitto" outlives the command) is stopped with the script.
			env.Setenv("XDG_RUNTIME_DIR", filepath.Join(env.WorkDir, "run"))
			// The Kafka jars stay in the user's cache (HOME is not set here).
			env.Setenv(cluster.CacheEnv, cluster.CacheDir())
			env.Defer(func() { stopStanding(filepath.Join(env.WorkDir, "run", "dqbench-brokers", "mqtt", "state.json")) })
			return nil
		},
	})
}

// stopStanding kills the process group of the standing broker whose
// state file is at path, if there is one.
func stopStanding(path string) {
	var st struct {
		PID int `json:"pid"`
	}
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &st) == nil && st.PID > 0 {
		_ = syscall.Kill(-st.PID, syscall.SIGKILL)
	}
}

// exits N PROGRAM ARGS...: run PROGRAM and require exit code N.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

type jsonReport struct {
	Runs []struct {
		Variants []map[string]any `json:"variants"`
	} `json:"runs"`
}

// counts reads each variant's counts from a -o json report.
func counts(ts *testscript.TestScript, file string) map[string]map[string]float64 {
	var r jsonReport
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(file)), &r))
	out := map[string]map[string]float64{}
	for _, run := range r.Runs {
		for _, v := range run.Variants {
			name, _ := v["name"].(string)
			c := map[string]float64{}
			for _, k := range check.CountNames() {
				n, ok := v[k].(float64)
				if !ok {
					ts.Fatalf("%s: variant %s has no count %q", file, name, k)
				}
				c[k] = n
			}
			out[name] = c
		}
	}
	if len(out) == 0 {
		ts.Fatalf("%s: no variants", file)
	}
	return out
}

// variesOf reads the counts each variant of a -o json report declares
// in varies.
func variesOf(ts *testscript.TestScript, file string) map[string][]string {
	var r struct {
		Runs []struct {
			Variants []struct {
				Name   string `json:"name"`
				Varies []struct {
					Count string `json:"count"`
				} `json:"varies"`
			} `json:"variants"`
		} `json:"runs"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(file)), &r))
	out := map[string][]string{}
	for _, run := range r.Runs {
		for _, v := range run.Variants {
			for _, c := range v.Varies {
				out[v.Name] = append(out[v.Name], c.Count)
			}
		}
	}
	return out
}

// count FILE VARIANT FIELD OP N: check one count of a -o json report.
func cmdCount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 5 {
		ts.Fatalf("usage: count FILE VARIANT FIELD OP N")
	}
	c, ok := counts(ts, args[0])[args[1]]
	if !ok {
		ts.Fatalf("no variant %q in %s", args[1], args[0])
	}
	want, err := strconv.Atoi(args[4])
	ts.Check(err)
	got := int(c[args[2]])
	var holds bool
	switch args[3] {
	case "==":
		holds = got == want
	case ">":
		holds = got > want
	default:
		ts.Fatalf("count: unknown op %q", args[3])
	}
	if holds == neg {
		ts.Fatalf("%s %s = %d; want %s %d (negated: %v)", args[1], args[2], got, args[3], want, neg)
	}
}

// samecounts [-varies] A B: two -o json reports have identical counts per
// variant; with -varies, but for the counts a variant declares in varies
// (timing the seed does not decide).
func cmdSameCounts(ts *testscript.TestScript, neg bool, args []string) {
	varies := len(args) > 0 && args[0] == "-varies"
	if varies {
		args = args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: samecounts [-varies] A B")
	}
	a, b := counts(ts, args[0]), counts(ts, args[1])
	if varies {
		for _, file := range args {
			for variant, names := range variesOf(ts, file) {
				for _, n := range names {
					delete(a[variant], n)
					delete(b[variant], n)
				}
			}
		}
	}
	if reflect.DeepEqual(a, b) == neg {
		ts.Fatalf("counts of %s and %s: %v vs %v", args[0], args[1], a, b)
	}
}

// waitfor GLOB REGEXP: wait (up to a minute) until a file matching GLOB
// holds a line matching REGEXP: a background run got that far.
// waitgone GLOB: wait (up to a minute) until no file matches GLOB.
func cmdWaitGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitgone GLOB")
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if files, _ := filepath.Glob(ts.MkAbs(args[0])); len(files) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("files matching %s are still there after a minute", args[0])
}

// procgone TEXT: wait (up to a minute) until no process's command line
// holds TEXT (a path of the script's work directory, so that only its own
// processes are looked at).
func cmdProcGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: procgone TEXT")
	}
	text := []byte(args[0])
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		lines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range lines {
			if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, text) {
				left = append(left, filepath.Base(filepath.Dir(f)))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("processes %v still run with %s in their command line after a minute", left, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfor GLOB REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(ts.MkAbs(args[0]))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && re.Match(b) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("no file matching %s holds %s after a minute", args[0], args[1])
}

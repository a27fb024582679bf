// Command scale measures how the dqbench binary scales with the number of
// intents: it writes no-fault scenarios for each broker and size, runs
// "dqbench run FILE -o json" on each as a child process, checks that every
// variant lost nothing and applied every effect once, and prints wall time
// and the child's peak RSS, then how time grew from one size to the next.
//
// On embedded Kafka it runs one dedup-table variant and three variants
// (none, dedup-table, dedup-table-split); on embedded MQTT (mochi-mqtt, QoS
// 1, persistent session) and on the local RabbitMQ (a classic queue) one
// dedup-table variant. The MQTT runs set producer.max_lag 4096: mochi-mqtt
// keeps at most 8,192 unacknowledged messages per session and drops the
// rest, so a producer faster than the consumer would lose intents to that
// limit (which is what the run would then report).
//
//	go run ./bench/scale                                  # 10k, 100k, 1M ("make bench-scale")
//	go run ./bench/scale -sizes 10000,100000 -brokers kafka -bin ./dqbench
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// sets are the variant lists each size runs with, by name.
var sets = map[string][]string{
	"one":   {"dedup-table"},
	"three": {"none", "dedup-table", "dedup-table-split"},
}

// brokerYAML is each broker's part of the scenario, and setsFor the
// variant sets it runs.
var (
	brokerYAML = map[string]string{
		"kafka": `broker: {kind: kafka, mode: embedded}
producer: {idempotent: true, acks: all, window: 256}
consumer: {instances: 1, ack: after-process, prefetch: 100}
`,
		"mqtt": `broker: {kind: mqtt, mode: embedded, qos: 1, subscription_qos: 1, clean_session: false}
producer: {window: 256, max_lag: 4096}
consumer: {instances: 1, ack: after-process}
`,
		"rabbitmq": `broker: {kind: rabbitmq, queue_type: classic}
producer: {window: 256}
consumer: {instances: 1, ack: after-process, prefetch: 100}
`,
	}
	brokerNames = []string{"kafka", "mqtt", "rabbitmq"}
)

const scenarioYAML = `version: 1
name: scale-%s-%s-%d
messages: %d
deadline: 60m
drain: 30s
%svariants:
%s`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

type options struct {
	sizes   []int
	sets    []string
	brokers []string
	bin     string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "10000,100000,1000000", "comma-separated intents per variant")
	setNames := fs.String("sets", "one,three", `comma-separated variant sets: "one" (dedup-table), "three" (none, dedup-table, dedup-table-split)`)
	brokerList := fs.String("brokers", "kafka,mqtt,rabbitmq", "comma-separated brokers: kafka (embedded, every set), mqtt (embedded, the set \"one\"), rabbitmq (the local one at 127.0.0.1:5672, the set \"one\")")
	bin := fs.String("bin", "", "path to the dqbench binary (default: go build it into a temporary directory)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{bin: *bin}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return o, fmt.Errorf("-sizes: %q is not a positive number of intents", s)
		}
		o.sizes = append(o.sizes, n)
	}
	for _, s := range strings.Split(*setNames, ",") {
		s = strings.TrimSpace(s)
		if _, ok := sets[s]; !ok {
			return o, fmt.Errorf(`-sets: unknown set %q (allowed: one, three)`, s)
		}
		o.sets = append(o.sets, s)
	}
	for _, b := range strings.Split(*brokerList, ",") {
		b = strings.TrimSpace(b)
		if _, ok := brokerYAML[b]; !ok {
			return o, fmt.Errorf(`-brokers: unknown broker %q (allowed: %s)`, b, strings.Join(brokerNames, ", "))
		}
		o.brokers = append(o.brokers, b)
	}
	return o, nil
}

// result is one child run.
type result struct {
	broker   string
	set      string
	n        int
	wall     time.Duration // the child process, start to exit
	runTime  time.Duration // the run as dqbench reports it (duration_ms)
	maxRSS   int64         // KiB
	problems []string
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "dqbench-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.bin == "" {
		o.bin = filepath.Join(dir, "dqbench")
		fmt.Fprintf(stderr, "building dqbench into %s\n", o.bin)
		build := exec.Command("go", "build", "-o", o.bin, "github.com/dqbench/dqbench")
		build.Stdout, build.Stderr = stderr, stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build dqbench (run from inside the module, or pass -bin): %w", err)
		}
	}

	var results []result
	failed := false
	for _, b := range o.brokers {
		for _, n := range o.sizes {
			for _, set := range setsFor(b, o.sets) {
				r, err := runOne(o.bin, dir, b, set, n)
				if err != nil {
					return err
				}
				results = append(results, r)
				status := "ok"
				if len(r.problems) > 0 {
					status = "ERROR: " + strings.Join(r.problems, "; ")
					failed = true
				}
				fmt.Fprintf(stdout, "%s %s, %d intents: wall %v, run %v, peak RSS %.0f MiB: %s\n",
					b, set, n, r.wall.Round(time.Millisecond), r.runTime.Round(time.Millisecond), float64(r.maxRSS)/1024, status)
			}
		}
	}
	printTable(stdout, results, o)
	if failed {
		return errors.New("some runs lost intents or did not apply every effect (see ERROR lines)")
	}
	return nil
}

// setsFor is the variant sets broker runs: every set asked for on Kafka,
// only "one" (when asked for) on the others.
func setsFor(broker string, sets []string) []string {
	if broker == "kafka" {
		return sets
	}
	for _, s := range sets {
		if s == "one" {
			return []string{"one"}
		}
	}
	return nil
}

// runOne writes the scenario for broker, set and n, runs it, and checks the
// counts.
func runOne(bin, dir, broker, set string, n int) (result, error) {
	var variants strings.Builder
	for _, v := range sets[set] {
		fmt.Fprintf(&variants, "  - {name: %s, strategy: %s}\n", v, v)
	}
	file := filepath.Join(dir, fmt.Sprintf("scale-%s-%s-%d.yaml", broker, set, n))
	yaml := fmt.Sprintf(scenarioYAML, broker, set, n, n, brokerYAML[broker], variants.String())
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		return result{}, err
	}

	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, "run", file, "-o", "json")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := result{broker: broker, set: set, n: n, wall: time.Since(start)}
	if cmd.ProcessState == nil {
		return r, fmt.Errorf("start %s: %w", bin, err)
	}
	r.maxRSS = maxRSSKiB(cmd.ProcessState)
	if err != nil {
		msg := "dqbench: " + err.Error()
		if e := strings.TrimSpace(errOut.String()); e != "" {
			msg += ": " + e
		}
		r.problems = append(r.problems, msg)
	}

	var rep struct {
		Runs []struct {
			DurationMS int64 `json:"duration_ms"`
			Variants   []struct {
				Name    string `json:"name"`
				Effects int    `json:"effects"`
				Lost    int    `json:"lost"`
			} `json:"variants"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Runs) != 1 {
		r.problems = append(r.problems, fmt.Sprintf("no JSON report on stdout (%v)", err))
		return r, nil
	}
	r.runTime = time.Duration(rep.Runs[0].DurationMS) * time.Millisecond
	if got, want := len(rep.Runs[0].Variants), len(sets[set]); got != want {
		r.problems = append(r.problems, fmt.Sprintf("%d variants reported, want %d", got, want))
	}
	for _, v := range rep.Runs[0].Variants {
		if v.Lost != 0 || v.Effects != n {
			r.problems = append(r.problems, fmt.Sprintf("variant %s: lost %d, effects %d; want lost 0, effects %d", v.Name, v.Lost, v.Effects, n))
		}
	}
	return r, nil
}

// maxRSSKiB is the child's peak resident set size in KiB (Linux reports
// KiB, macOS bytes).
func maxRSSKiB(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) / 1024
	}
	return int64(ru.Maxrss)
}

func printTable(w io.Writer, results []result, o options) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "broker\tvariants\tintents\twall\trun\tintents/s\tpeak RSS MiB\tcheck")
	for _, r := range results {
		check := "ok"
		if len(r.problems) > 0 {
			check = "ERROR"
		}
		total := r.n * len(sets[r.set])
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1fs\t%.1fs\t%.0f\t%.0f\t%s\n", r.broker, strings.Join(sets[r.set], ","), r.n,
			r.wall.Seconds(), r.runTime.Seconds(), float64(total)/r.wall.Seconds(), float64(r.maxRSS)/1024, check)
	}
	tw.Flush()
	// How wall time grew from each size to the next (linear: the size ratio).
	for _, b := range o.brokers {
		for _, set := range setsFor(b, o.sets) {
			var prev *result
			for i := range results {
				r := &results[i]
				if r.broker != b || r.set != set {
					continue
				}
				if prev != nil {
					fmt.Fprintf(w, "%s %s: time(%s)/time(%s) = %.2f (intents x%.0f; peak RSS x%.2f)\n", b, set, short(r.n), short(prev.n),
						r.wall.Seconds()/prev.wall.Seconds(), float64(r.n)/float64(prev.n), float64(r.maxRSS)/float64(prev.maxRSS))
				}
				prev = r
			}
		}
	}
}

// short writes 1000000 as 1M and 100000 as 100k.
func short(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

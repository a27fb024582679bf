package scenario

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/strictyaml"
)

// Process is a variant whose consumer is a program outside dqbench: dqbench
// publishes the intents, runs Instances copies of the program, injects
// faults from outside (consumer-kill) and audits the store with the
// variant's audit query.
type Process struct {
	Command   []string          `yaml:"command" json:"command,omitempty" jsonschema:"minItems=1,description=The consumer's command line (program and arguments)\\, run in the scenario file's directory. Exactly one of command and build."`
	Build     string            `yaml:"build" json:"build,omitempty" jsonschema:"description=A Go package (e.g. ./naive\\, relative to the scenario file's directory) that dqbench builds once per run with go build and runs as the consumer. Exactly one of command and build."`
	Instances int               `yaml:"instances" json:"instances,omitempty" jsonschema:"minimum=1,maximum=64,description=Consumer processes running at once\\, all in one consumer group (default 1)."`
	Env       map[string]string `yaml:"env" json:"env,omitempty" jsonschema:"description=Extra environment variables for every instance (besides the DQBENCH_ ones)."`
	Ready     Duration          `yaml:"ready" json:"ready,omitempty" jsonschema:"description=How long a started instance may take to start consuming (its first fetch from the topic); an instance that exits or does not fetch by then ends the run (default 10s)."`
}

// Audit is how dqbench reads a process variant's store after the run.
type Audit struct {
	Query string `yaml:"query" json:"query" jsonschema:"required,description=SQL returning one row per message id: (message id\\, how many times its effect applied)\\, e.g. SELECT message_id\\, COUNT(*) FROM payments GROUP BY message_id."`
}

// DefaultReady is how long a consumer process may take to start consuming
// when the scenario does not say.
const DefaultReady = 10 * time.Second

// MaxReady bounds process.ready.
const MaxReady = 10 * time.Minute

// Label names the process in reports, in the strategy column: "process"
// and the program's or package's base name.
func (p *Process) Label() string {
	what := p.Build
	if len(p.Command) > 0 {
		what = p.Command[0]
	}
	return "process " + filepath.Base(what)
}

// processVariants checks every process variant: exactly one of strategy
// and process, exactly one of command and build, an audit query, and a
// broker dqbench can watch the process on. And a consumer-kill fault needs
// a process variant to act on.
func (c *checker) processVariants() {
	any, brokerSaid := false, false
	for i, v := range c.s.Variants {
		vp := fmt.Sprintf("variants[%d]", i)
		if v.Process == nil {
			if c.d.Has(vp + ".audit") {
				c.errorf(vp+".audit", "%s.audit: only a process variant is audited by a query; remove audit or add process", vp)
			}
			continue
		}
		any = true
		pp := vp + ".process"
		if c.d.Has(vp + ".strategy") {
			c.errorf(vp+".strategy", "%s: set either strategy (a built-in consumer) or process (your own consumer), not both", vp)
		}
		for _, key := range []string{"consumer", "id"} {
			if c.d.Has(vp + "." + key) {
				c.errorf(vp+"."+key, "%s.%s: does not apply to a process variant (the process is the consumer); use process.instances and process.env", vp, key)
			}
		}
		if c.d.Has(vp + ".effect") {
			c.errorf(vp+".effect", "%s.effect: does not apply to a process variant (the process applies its own effects, counted by audit.query); remove it", vp)
		}
		cmd, build := c.d.Has(pp+".command"), c.d.Has(pp+".build")
		switch {
		case cmd && build:
			c.errorf(pp+".build", "%s: set only one of command and build, not both", pp)
		case !cmd && !build:
			c.errorf(pp, `%s: needs command: [PROGRAM, ARGS...] or build: ./PACKAGE (a Go package dqbench builds once per run)`, pp)
		case cmd && (len(v.Process.Command) == 0 || strings.TrimSpace(v.Process.Command[0]) == ""):
			c.errorf(pp+".command", "%s.command: needs at least the program to run", pp)
		case build && strings.TrimSpace(v.Process.Build) == "":
			c.errorf(pp+".build", "%s.build: needs a Go package, e.g. ./cmd/consumer", pp)
		case build && !localPackage(v.Process.Build):
			c.errorf(pp+".build", "%s.build: %q is not a package directory inside the scenario's folder; write ./DIR (e.g. ./cmd/consumer), without .., flags or an absolute path", pp, v.Process.Build)
		}
		c.inRange(pp+".instances", v.Process.Instances, MaxInstances)
		if c.s.Broker.Kind == catalog.MQTT && v.Process.Instances > 1 {
			c.errorf(pp+".instances", "%s.instances: on MQTT the consumer is one persistent session (client id DQBENCH_GROUP), which one process holds at a time; use instances: 1", pp)
		}
		c.positive(pp+".ready", v.Process.Ready)
		if c.d.Has(pp+".ready") && v.Process.Ready.D() > MaxReady {
			c.errorf(pp+".ready", "%s.ready: must be at most %s, got %s", pp, MaxReady, v.Process.Ready)
		}
		// What exec would refuse when the run starts the process, or
		// read as another variable.
		for j, arg := range v.Process.Command {
			if strings.ContainsRune(arg, 0) {
				ap := fmt.Sprintf("%s.command[%d]", pp, j)
				c.errorf(ap, "%s: %s holds a NUL byte, which no program argument can carry; remove it", ap, echo(arg))
			}
		}
		for k, val := range v.Process.Env {
			kp := pp + ".env." + k
			switch {
			case strings.ContainsRune(k, 0):
				c.errorf(kp, "%s.env: the name %s holds a NUL byte, which no environment variable can carry; remove it", pp, echo(k))
			case strings.ContainsRune(val, 0):
				c.errorf(kp, "%s.env: the value of %s holds a NUL byte, which no environment variable can carry; remove it", pp, echo(k))
			case k == "" || strings.ContainsRune(k, '='):
				c.errorf(kp, "%s.env: %s is not a variable name: it must not be empty or hold =", pp, echo(k))
			case strings.HasPrefix(k, "DQBENCH_"):
				c.errorf(kp, "%s.env: %s is set by dqbench (DQBENCH_ variables are the contract; see examples/consumers/README.md)", pp, k)
			}
		}
		switch {
		case v.Audit == nil:
			c.missing(vp+".audit", "add audit: {query: SELECT message_id, COUNT(*) FROM TABLE GROUP BY message_id}: how dqbench counts the effects in your store")
		case strings.TrimSpace(v.Audit.Query) == "":
			c.errorf(vp+".audit.query", "%s.audit.query: must not be empty", vp)
		}
		if why := catalog.ProcessOn(c.s.Broker.Kind, modeOf(c.s)); !brokerSaid && why != "" {
			brokerSaid = true
			c.errorf(pp, "%s: a process variant cannot run here: %s", pp, why)
		}
	}
	if any {
		c.killPoints()
		return
	}
	for i, f := range c.s.Faults {
		if f.Type == catalog.ConsumerKill {
			c.errorf(fmt.Sprintf("faults[%d].type", i), "faults[%d]: consumer-kill kills consumer processes, and no variant has one; add a variant with process: {build: ./PACKAGE} (or command), or use consumer-crash for the built-in strategies", i)
		}
	}
}

// killPoints checks that each consumer-kill's point is one this broker
// has: delivery, and Kafka's commit or the others' ack.
func (c *checker) killPoints() {
	ack := catalog.AckPoint(c.s.Broker.Kind)
	for i, f := range c.s.Faults {
		p, ok := f.Params.(*catalog.ConsumerKillParams)
		if f.Type != catalog.ConsumerKill || !ok || p.At == "" || p.At == catalog.KillOnDelivery || p.At == ack {
			continue
		}
		c.errorf(fmt.Sprintf("faults[%d].at", i), "faults[%d].at: %s is not a kill point on %s; use delivery or %s (what a %s consumer does when it is done with a message)",
			i, p.At, c.s.Broker.Kind, ack, c.s.Broker.Kind)
	}
}

// modeOf is the broker's mode, defaulted by kind.
func modeOf(s *Scenario) catalog.Mode {
	if s.Broker.Mode != "" {
		return s.Broker.Mode
	}
	return catalog.ModeOf(s.Broker.Kind)
}

// localPackage reports whether build names a Go package directory inside
// the scenario's folder: "." or "./DIR", with no ".." and nothing that go
// build would read as a flag.
func localPackage(build string) bool {
	if build == "." {
		return true
	}
	rest, ok := strings.CutPrefix(build, "./")
	return ok && rest != "" && filepath.IsLocal(rest) && !strings.ContainsAny(build, "\\\x00") && !strings.HasPrefix(rest, "-")
}

// programWarnings says which process variants' programs cannot be found
// from here: on PATH for a bare name, beside the scenario file for a
// path. Not an error: a CI job may build the program after validating.
func programWarnings(s *Scenario, d *strictyaml.Decoder) []string {
	var out []string
	for i, v := range s.Variants {
		if v.Process == nil || len(v.Process.Command) == 0 {
			continue
		}
		prog := v.Process.Command[0]
		var err error
		if strings.ContainsRune(prog, '/') {
			p := prog
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(s.File), p)
			}
			_, err = exec.LookPath(p)
		} else {
			_, err = exec.LookPath(prog)
		}
		if err != nil {
			path := fmt.Sprintf("variants[%d].process.command", i)
			line, col := d.Pos(path)
			out = append(out, fmt.Sprintf("%s:%d:%d: warning: %s: program %q is not found here (%v); validate does not run it, but run will: build or install it first, or use process.build: ./DIR",
				s.File, line, col, path, prog, errors.Unwrap(err)))
		}
	}
	return out
}

// partitionWarnings says which partitions last at least the drain period:
// nothing progresses while the consumer is cut off, so a partition near
// the end of the run can make the drain give up (INVALID). Not an error:
// one early in a long run is harmless.
func partitionWarnings(s *Scenario, d *strictyaml.Decoder) []string {
	var out []string
	drain := orDefault(s.Drain, DefaultDrain).D()
	for i, f := range s.Faults {
		p, ok := f.Params.(*catalog.PartitionParams)
		if f.Type != catalog.Partition || !ok {
			continue
		}
		dur := p.Duration.D()
		if dur <= 0 {
			dur = time.Second
		}
		if dur < drain {
			continue
		}
		path := fmt.Sprintf("faults[%d].duration", i)
		line, col := d.Pos(path)
		if line == 0 {
			path = fmt.Sprintf("faults[%d]", i)
			line, col = d.Pos(path)
		}
		out = append(out, fmt.Sprintf("%s:%d:%d: warning: %s: a partition of %s is not shorter than the drain period (%s): nothing progresses while the consumer is cut off, so the drain may give up and make the run INVALID; set drain above %s",
			s.File, line, col, path, dur, drain, dur))
	}
	return out
}

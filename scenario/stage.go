package scenario

import (
	"fmt"
	"strings"

	"github.com/dqbench/dqbench/catalog"
)

// Defaults of a stage's settings.
const (
	DefaultStageBatch = 10
	MaxStageBatch     = 10_000
)

// StageFor returns variant v's stage settings, the scenario's with v's
// overrides applied and defaults filled in, or nil when v has no stage.
func (s *Scenario) StageFor(v Variant) *Stage {
	if s.Stage == nil && v.Stage == nil {
		return nil
	}
	var st Stage
	if s.Stage != nil {
		st = *s.Stage
	}
	if o := v.Stage; o != nil {
		if o.Transactional != nil {
			st.Transactional = o.Transactional
		}
		setIfNonZero(&st.Batch, o.Batch)
		setIfNonZero(&st.Instances, o.Instances)
	}
	if st.Transactional != nil {
		st.Transactional = new(*st.Transactional) // the caller may not change s through it
	}
	setIfZero(&st.Batch, DefaultStageBatch)
	setIfZero(&st.Instances, DefaultInstances)
	return &st
}

// IsTransactional reports whether the stage writes in transactions.
func (st *Stage) IsTransactional() bool {
	return st != nil && st.Transactional != nil && *st.Transactional
}

// stages checks the stage settings and consumer isolation levels: both are
// Kafka's; and that the stage faults have a variant to act in.
func (c *checker) stages() {
	kafka := c.s.Broker.Kind == catalog.Kafka
	c.stage("stage", c.s.Stage, kafka)
	if c.d.Has("consumer.isolation") && !kafka {
		c.errorf("consumer.isolation", "consumer.isolation: only for broker kind kafka, not %s", c.s.Broker.Kind)
	}
	staged, transactional := false, false
	for i, v := range c.s.Variants {
		vp := fmt.Sprintf("variants[%d]", i)
		c.stage(vp+".stage", v.Stage, kafka)
		if c.d.Has(vp+".consumer.isolation") && !kafka {
			c.errorf(vp+".consumer.isolation", "%s.consumer.isolation: only for broker kind kafka, not %s", vp, c.s.Broker.Kind)
		}
		st := c.s.StageFor(v)
		if st != nil && v.Process != nil {
			path := vp + ".stage"
			if !c.d.Has(path) {
				path = vp + ".process"
			}
			c.errorf(path, "%s: a process variant cannot have a stage (yet): its program reads the producer's topic; remove stage from it, or from the scenario and put it in the variants that use a strategy", path)
			continue
		}
		staged = staged || st != nil
		transactional = transactional || st.IsTransactional()
	}
	for i, f := range c.s.Faults {
		path := fmt.Sprintf("faults[%d].type", i)
		switch {
		case (f.Type == catalog.TransformCrash || f.Type == catalog.Rebalance) && !staged:
			c.errorf(path, "%s: %s needs a stage, and no variant has one, so the fault never fires; add stage: {transactional: true} (or false) to the scenario or a variant", path, f.Type)
		case f.Type == catalog.TransactionAbort && !transactional:
			c.errorf(path, "%s: transaction-abort needs a transactional stage, and no variant has one, so the fault never fires; add stage: {transactional: true} to the scenario or a variant", path)
		}
	}
}

func (c *checker) stage(path string, st *Stage, kafka bool) {
	if st == nil {
		return
	}
	if !kafka {
		c.errorf(path, "%s: a consume-transform-produce stage runs on Kafka only; use broker kind: kafka or remove %s", path, path[strings.LastIndex(path, ".")+1:])
		return
	}
	c.inRange(path+".batch", st.Batch, MaxStageBatch)
	c.inRange(path+".instances", st.Instances, MaxInstances)
}

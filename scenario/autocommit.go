package scenario

import (
	"fmt"

	"github.com/dqbench/dqbench/catalog"
)

// autoCommitKeys are Kafka's consumer keys of commit: auto and the
// processing it commits behind.
var autoCommitKeys = []string{"commit", "auto_commit_interval", "processing", "processing_time"}

// autoCommit checks Kafka's commit, auto_commit_interval, processing and
// processing_time keys: Kafka's only; the interval and processing only
// where commit: auto applies, which dqbench's own consumers take (not a
// process variant, whose program commits as it likes, nor a stage's
// reader) and where consumer ack has no say.
func (c *checker) autoCommit() {
	kafka := c.s.Broker.Kind == catalog.Kafka
	c.autoCommitRanges("consumer", c.s.Consumer, kafka)
	anyAuto := false
	for i, v := range c.s.Variants {
		vp := fmt.Sprintf("variants[%d].consumer", i)
		if v.Consumer != nil {
			c.autoCommitRanges(vp, *v.Consumer, kafka)
		}
		if !kafka {
			continue
		}
		auto := c.s.ConsumerFor(v).AutoCommits()
		anyAuto = anyAuto || auto
		if !auto {
			c.needsAuto(vp)
			continue
		}
		c.autoCommitVariant(i, v)
	}
	if kafka && !anyAuto {
		c.needsAuto("consumer")
	}
}

// autoCommitRanges checks the keys written at path (a consumer mapping):
// Kafka's only, and each value within its bounds.
func (c *checker) autoCommitRanges(path string, cs Consumer, kafka bool) {
	if !kafka {
		for _, k := range autoCommitKeys {
			if p := path + "." + k; c.d.Has(p) {
				c.errorf(p, "%s: only for broker kind kafka, not %s", p, c.s.Broker.Kind)
			}
		}
		return
	}
	if p := path + ".auto_commit_interval"; c.d.Has(p) {
		switch d := cs.AutoCommitInterval; {
		case d < catalog.MinAutoCommitInterval:
			c.errorf(p, "%s: at least %s (the least kgo takes), got %s", p, catalog.MinAutoCommitInterval, d)
		case d > catalog.MaxAutoCommitInterval:
			c.errorf(p, "%s: at most %s (a commit must come within the drain), got %s", p, catalog.MaxAutoCommitInterval, d)
		}
	}
	if p := path + ".processing_time"; c.d.Has(p) {
		if d := cs.ProcessingTime; d <= 0 || d > catalog.MaxProcessingTime {
			c.errorf(p, "%s: from more than 0s to %s, got %s", p, catalog.MaxProcessingTime, d)
		}
	}
}

// needsAuto reports the auto-commit keys written at path (a consumer
// mapping) that no commit: auto applies to.
func (c *checker) needsAuto(path string) {
	for _, k := range []string{"auto_commit_interval", "processing"} {
		if p := path + "." + k; c.d.Has(p) {
			c.errorf(p, "%s: only with commit: auto (the client's auto-commit), and no variant it applies to has it; add commit: auto to the consumer, or remove %s", p, k)
		}
	}
}

// autoCommitVariant checks variant i, which auto-commits.
func (c *checker) autoCommitVariant(i int, v Variant) {
	commit := c.consumerKey(i, "commit")
	if v.Process != nil {
		c.errorf(commit, "%s: auto is for dqbench's own consumer; a process variant's program commits as it does (use its own client's auto-commit); remove commit from variants[%d] or from the scenario's consumer", commit, i)
		return
	}
	if p := c.consumerKey(i, "ack"); p != "" && c.s.ConsumerFor(v).Ack != catalog.AckAfterProcess {
		c.errorf(p, "%s: with commit: auto the client commits by itself (the records of the polls before the latest), whatever ack says; remove ack", p)
	}
	for j, f := range c.s.Faults {
		if f.Type == catalog.AckLost {
			c.errorf(commit, "%s: faults[%d] (ack-lost) drops dqbench's own offset commits, and with commit: auto the client commits by itself, so it would never fire in variant %s; remove commit: auto from it, or the fault", commit, j, echo(v.Name))
		}
	}
	if c.s.StageFor(v) != nil {
		c.errorf(commit, "%s: auto is for a consumer without a stage (the stage commits its input offsets itself); remove the stage or commit: auto from variants[%d]", commit, i)
	}
}

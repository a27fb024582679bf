package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dqbench/dqbench/blackbox"
	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/store"
)

// stopGrace is how long a consumer process has to exit after SIGTERM at the
// end of a run before its process group is killed.
const stopGrace = 2 * time.Second

// runProcess runs a process variant: the consumer is the scenario's
// program, run by package blackbox. dqbench publishes every intent first,
// then starts the instances and watches, through the broker, what each is
// delivered and commits; the drain ends when the group has committed
// everything. The store is audited with the variant's own query.
func (r *variantRun) runProcess(ctx context.Context) (audit *history.Audit, cleanup, err error) {
	prod := r.s.ProducerFor(r.v)
	out, err := store.OpenOutside(ctx, store.Where{Ref: r.s.StoreFor(r.v), Dir: r.storeDir, Name: r.name})
	if err != nil {
		return nil, nil, err
	}
	defer func() { cleanup = errors.Join(cleanup, cleanupOnly(out.Close())) }()
	command, dir, err := r.processCommand(ctx)
	if err != nil {
		return nil, nil, err
	}
	dest, err := r.broker.Open(ctx, brokers.DestinationSpec{
		Name: r.name, Idempotent: *prod.Idempotent, Acks: prod.Acks, Window: prod.Window,
		Prefetch: r.s.ConsumerFor(r.v).Prefetch,
	})
	if err != nil {
		return nil, nil, err
	}
	defer func() { cleanup = errors.Join(cleanup, r.closeDestination(ctx, dest)) }()
	watcher, ok := dest.(brokers.ConsumerWatcher)
	if !ok {
		return nil, nil, fmt.Errorf("this broker cannot watch a consumer process (%s); use broker kind: kafka (embedded), rabbitmq, mqtt or nats", r.broker.Name())
	}
	r.kills = &faults.Kills{}
	if err := r.arm(dest); err != nil {
		return nil, nil, err
	}
	r.flow.init(r.s.Messages)
	sup := r.supervise(command, dir, out, watcher)
	defer func() {
		// Stopped in finish; again here (a no-op then) if anything
		// between panics, so no process outlives the run.
		sctx, cancel := r.shutdown.ctx(ctx)
		defer cancel()
		sup.Stop(sctx, 0)
	}()
	runErr := r.atStartLine(ctx)
	if runErr == nil {
		runErr = r.produce(ctx, dest, prod)
	}
	if runErr == nil {
		runErr = sup.Start()
	}
	audit, err = r.finish(ctx, dest, runErr, ending{
		errs: sup.Errors(),
		stop: func() {
			sctx, cancel := r.shutdown.ctx(ctx)
			sup.Stop(sctx, stopGrace)
			cancel()
		},
		audit: func(ctx context.Context) (history.Audit, error) {
			actx, cancel := r.shutdown.ctx(ctx)
			defer cancel()
			return out.Audit(actx, r.v.Audit.Query)
		},
	})
	return audit, nil, err
}

// supervise makes the supervisor of the variant's consumer processes,
// which the destination shows every connection, fetch and commit of.
func (r *variantRun) supervise(command []string, dir string, out *store.Outside, watcher brokers.ConsumerWatcher) *blackbox.Supervisor {
	p := r.v.Process
	where := watcher.Outside()
	env := []string{
		"DQBENCH_BROKER_KIND=" + string(r.s.Broker.Kind),
		"DQBENCH_BROKERS=" + strings.Join(where.Addresses, ","),
		"DQBENCH_URL=" + where.URL,
		"DQBENCH_TOPIC=" + where.Topic,
		"DQBENCH_GROUP=" + where.Group,
		"DQBENCH_STORE=" + string(out.Kind),
		"DQBENCH_STORE_DSN=" + out.DSN,
		"DQBENCH_STORE_SCHEMA=" + out.Schema,
		"DQBENCH_MESSAGES=" + strconv.Itoa(r.s.Messages),
	}
	env = append(env, where.Env...)
	for k, v := range p.Env {
		env = append(env, k+"="+v)
	}
	sup := blackbox.New(blackbox.Config{
		Command: command, Dir: dir, Env: env, Instances: p.Instances, Ready: p.Ready.D(),
		Brokers: where.Addresses, AckPoint: catalog.AckPoint(r.s.Broker.Kind), Rec: r.rec, Kills: r.kills, Evict: watcher.RemoveMembers,
		Delivered: func(intent int) {
			r.progress.heardFrom(r.start)
			r.flow.reached(intent, doneEffect)
		},
		Committed: func(intent int) {
			r.progress.consumed(r.counts, 1)
			r.progress.heardFrom(r.start)
			r.flow.reached(intent, doneAck)
		},
	})
	watcher.WatchConsumers(sup.Watch())
	return sup
}

// processCommand is the consumer's command line and working directory (the
// scenario file's): process.command as written, or the program that
// process.build makes, built once into the run's temporary directory.
func (r *variantRun) processCommand(ctx context.Context) ([]string, string, error) {
	dir := "."
	if f := r.s.File; f != "" && !strings.HasPrefix(f, "builtin:") {
		dir = filepath.Dir(f)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", err
	}
	p := r.v.Process
	if p.Build == "" {
		return p.Command, dir, nil
	}
	bin := filepath.Join(r.storeDir, r.name+"-consumer")
	if err := os.MkdirAll(r.storeDir, 0o755); err != nil {
		return nil, "", err
	}
	if err := blackbox.Build(ctx, dir, p.Build, bin); err != nil {
		return nil, "", err
	}
	return []string{bin}, dir, nil
}

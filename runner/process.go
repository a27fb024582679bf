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
	p := r.v.Process
	prod := r.s.ProducerFor(r.v)
	out, err := store.OpenOutside(ctx, store.Where{Ref: r.s.StoreFor(r.v), Dir: r.storeDir, Name: r.name})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if cerr := out.Close(); errors.Is(cerr, store.ErrCleanup) {
			cleanup = errors.Join(cleanup, cerr)
		}
	}()
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
	defer func() {
		cctx, cancel := r.shutdownCtx(ctx)
		defer cancel()
		cleanup = errors.Join(cleanup, dest.Close(cctx))
	}()
	watcher, ok := dest.(brokers.ConsumerWatcher)
	if !ok {
		return nil, nil, fmt.Errorf("this broker cannot watch a consumer process (%s); use broker kind: kafka, mode: embedded", r.broker.Name())
	}
	r.kills = &faults.Kills{}
	if err := r.arm(dest); err != nil {
		return nil, nil, err
	}
	r.done = make([]uint8, r.s.Messages+1)

	where := watcher.Outside()
	env := []string{
		"DQBENCH_BROKER_KIND=" + string(r.s.Broker.Kind),
		"DQBENCH_BROKERS=" + strings.Join(where.Addresses, ","),
		"DQBENCH_TOPIC=" + where.Topic,
		"DQBENCH_GROUP=" + where.Group,
		"DQBENCH_STORE=" + string(out.Kind),
		"DQBENCH_STORE_DSN=" + out.DSN,
		"DQBENCH_STORE_SCHEMA=" + out.Schema,
		"DQBENCH_MESSAGES=" + strconv.Itoa(r.s.Messages),
	}
	for k, v := range p.Env {
		env = append(env, k+"="+v)
	}
	sup := blackbox.New(blackbox.Config{
		Command: command, Dir: dir, Env: env, Instances: p.Instances, Ready: p.Ready.D(),
		Brokers: where.Addresses, Rec: r.rec, Kills: r.kills, Evict: watcher.RemoveMembers,
		Delivered: func(intent int) {
			r.progress.heardFrom(r.start)
			r.progressOn(intent, doneEffect)
		},
		Committed: func(intent int) {
			r.progress.Consumed.Add(1)
			r.progress.heardFrom(r.start)
			r.progressOn(intent, doneAck)
		},
	})
	watcher.WatchConsumers(sup.Watch())
	defer func() {
		// Stopped below; again here (a no-op then) if anything between
		// panics, so no process outlives the run.
		sctx, cancel := r.shutdownCtx(ctx)
		defer cancel()
		sup.Stop(sctx, 0)
	}()

	runErr := r.produce(ctx, dest, prod)
	var drained bool
	var backlog int64
	var why string
	if runErr == nil {
		runErr = sup.Start()
	}
	if runErr == nil {
		drained, backlog, why, runErr = r.drain(ctx, dest, sup.Errors())
	}
	sctx, cancel := r.shutdownCtx(ctx)
	sup.Stop(sctx, stopGrace)
	cancel()
	if runErr == nil {
		select {
		case runErr = <-sup.Errors():
		default:
		}
	}
	switch {
	case ctx.Err() != nil:
		why = "the run ended: " + ctx.Err().Error()
	case runErr != nil:
		why = runErr.Error()
	}
	r.rec.Record(history.Event{Type: history.Drain, Drained: drained, Backlog: backlog, Reason: why})
	if runErr != nil && ctx.Err() == nil {
		return nil, nil, runErr
	}

	actx, cancel := r.shutdownCtx(ctx)
	defer cancel()
	a, err := out.Audit(actx, r.v.Audit.Query)
	if err != nil {
		return nil, nil, errors.Join(runErr, err)
	}
	if runErr != nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	return &a, nil, runErr
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

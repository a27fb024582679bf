// Command dqbench injects faults into message delivery and counts, per
// consumer idempotency strategy, the business effects duplicated or lost.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mattn/go-isatty"

	"github.com/dqbench/dqbench/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	finished := make(chan struct{})
	go func() {
		// The first Ctrl-C stops the run, which still cleans up and prints
		// what it recorded; a second one ends the process at once.
		<-ctx.Done()
		select {
		case <-finished: // closed before stop() below: not a signal
			return
		default:
		}
		stop()
		fmt.Fprintln(os.Stderr, "dqbench: stopping: cleaning up and reporting what was recorded (Ctrl-C again to quit at once)")
	}()
	code := cmd.Execute(ctx, os.Args[1:], cmd.Streams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		Terminal: isatty.IsTerminal(os.Stderr.Fd()),
	})
	close(finished)
	stop()
	os.Exit(code)
}

// Command dqbench injects faults into message delivery and counts, per
// consumer idempotency strategy, the business effects duplicated or lost.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mattn/go-isatty"

	"github.com/dqbench/dqbench/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Execute(ctx, os.Args[1:], cmd.Streams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		Terminal: isatty.IsTerminal(os.Stderr.Fd()),
	})
	stop()
	os.Exit(code)
}

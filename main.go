// Command dqbench injects faults into message delivery and counts, per
// consumer idempotency strategy, the business effects duplicated or lost.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"golang.org/x/term"

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
		Terminal:      isatty.IsTerminal(os.Stderr.Fd()),
		PipedProgress: 10 * time.Second,
		Width:         terminalWidth(os.Stdout),
		ErrWidth:      errWidth(),
		NoColor:       os.Getenv("NO_COLOR") != "",
		Undertaker:    cmd.StartUndertaker,
	})
	close(finished)
	stop()
	os.Exit(code)
}

// errWidth is the width stderr's lines are wrapped to: the terminal's, or
// piped, $COLUMNS if set (unset: not wrapped, a problem a line for grep).
func errWidth() int {
	if w := terminalWidth(os.Stderr); w > 0 {
		return w
	}
	if w, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && w >= 20 {
		return w
	}
	return 0
}

// terminalWidth is the width of the terminal f writes to, 0 when f is not
// a terminal.
func terminalWidth(f *os.File) int {
	if !isatty.IsTerminal(f.Fd()) {
		return 0
	}
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil || w <= 0 {
		return 80
	}
	return w
}

package blackbox

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/history"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func supervisor(t *testing.T, command []string, ready time.Duration) (*Supervisor, *history.Recorder, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	rec := history.NewRecorder(time.Now(), &buf)
	return New(Config{
		Command: command, Dir: t.TempDir(), Instances: 2, Ready: ready, Brokers: []string{"127.0.0.1:9"},
		Rec: rec.Variant("v"), Kills: &faults.Kills{},
		Delivered: func(int) {}, Committed: func(int) {},
	}), rec, &buf
}

// An instance that never connects fails the run after its ready period;
// Stop leaves no process and no goroutine behind.
func TestNotReady(t *testing.T) {
	s, _, _ := supervisor(t, []string{"sleep", "30"}, 200*time.Millisecond)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-s.Errors():
	case <-time.After(10 * time.Second):
		t.Fatal("no error after the ready period")
	}
	if !errors.Is(err, ErrConsumer) || !strings.Contains(err.Error(), `(["sleep" "30"], pid`) || !strings.Contains(err.Error(), "did not connect to the broker within its ready period (200ms)") {
		t.Errorf("error = %v", err)
	}
	pids := s.groups
	s.Stop(context.Background(), time.Second)
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d is still there: %v", pid, err)
		}
	}
}

// An instance that exits at once fails the run, naming the command, its
// exit status and its stderr.
func TestExitsAtOnce(t *testing.T) {
	s, _, _ := supervisor(t, []string{"sh", "-c", "echo no broker >&2; exit 7"}, 5*time.Second)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	err := <-s.Errors()
	s.Stop(context.Background(), time.Second)
	for _, want := range []string{`"sh" "-c"`, "exited with status 7", "within its ready period (5s)", "no broker"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// Stop sends SIGTERM first: a consumer that exits on it is recorded as
// stopped (not crashed), with its PID and how it ended.
func TestStopRecordsExit(t *testing.T) {
	s, rec, buf := supervisor(t, []string{"sleep", "30"}, 10*time.Second)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	s.Stop(context.Background(), 5*time.Second)
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	events, err := history.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	var starts, stops int
	for _, e := range events {
		switch e.Type {
		case history.Start:
			starts++
		case history.Stop:
			stops++
			if e.PID == 0 || !strings.Contains(e.Reason, "killed by signal terminated") {
				t.Errorf("stop event %+v", e)
			}
		case history.Crash:
			t.Errorf("a stopped instance is recorded as a crash: %+v", e)
		}
	}
	if starts != 2 || stops != 2 {
		t.Errorf("%d starts, %d stops; want 2 of each", starts, stops)
	}
}

// A program that is not there fails at once, naming it.
func TestNoSuchProgram(t *testing.T) {
	s, _, _ := supervisor(t, []string{"./no-such-consumer"}, time.Second)
	err := s.Start()
	s.Stop(context.Background(), time.Second)
	if !errors.Is(err, ErrConsumer) || !strings.Contains(err.Error(), `start ["./no-such-consumer"]`) {
		t.Errorf("error = %v", err)
	}
}

func TestTail(t *testing.T) {
	tl := newTail(2, 100)
	tl.Write([]byte("a\nb\n"))
	tl.Write([]byte("c\nd"))
	if got := tl.String(); got != "c\nd" {
		t.Errorf("tail = %q, want the last 2 lines", got)
	}
	tl.Write([]byte(strings.Repeat("x", 300)))
	if got := tl.String(); len(got) > 100 {
		t.Errorf("tail keeps %d bytes, want at most 100", len(got))
	}
}

// A consumer's stderr reaches the terminal only in dqbench's messages,
// with what a terminal would act on escaped.
func TestTailSanitizes(t *testing.T) {
	tl := newTail(5, 1000)
	tl.Write([]byte("\x1b[2Jcleared\tok\r\nbad \xff byte \u2028 sep\n"))
	want := `\x1b[2Jcleared` + "\tok" + `\r` + "\n" + `bad \xff byte \u2028 sep`
	if got := tl.String(); got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
}

// Package blackbox runs a consumer program outside dqbench (a process
// variant) as the consumer under test: it starts its instances as child
// processes, each in a process group of its own, tells which connection to
// the broker comes from which instance, records what the broker delivers to
// each and what each commits, kills an instance where a consumer-kill fault
// fires (SIGKILL to its process group) and starts a fresh one in its place.
// It judges nothing: what it saw goes to the history.
package blackbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/internal/ansi"
)

// ErrConsumer marks a consumer process that could not run: it exited or
// did not connect within its ready period. The run cannot be judged (exit
// code 3).
var ErrConsumer = errors.New("consumer process failed")

// Config is one process variant's consumer.
type Config struct {
	// Command is the program and its arguments; Dir its working directory.
	Command []string
	Dir     string
	// Env is added to dqbench's own environment for every instance;
	// DQBENCH_INSTANCE and DQBENCH_GENERATION are added per instance.
	Env []string
	// Instances run at once; Ready is how long a started one may take to
	// connect to the broker.
	Instances int
	Ready     time.Duration
	// Brokers are the broker's host:port, where instances connect.
	Brokers []string
	// AckPoint is the kill point of a commit or ack (catalog.AckPoint):
	// commit on Kafka, ack elsewhere.
	AckPoint catalog.KillPoint

	// Evict takes killed instances' group members out of the consumer
	// group at once (brokers.ConsumerWatcher.RemoveMembers).
	Evict func(ctx context.Context, members []string) error

	Rec   *history.VariantRecorder
	Kills *faults.Kills
	// Delivered and Committed are told of each record delivered to, and
	// committed by, an instance (for the drain's progress).
	Delivered, Committed func(intent int)
}

// Supervisor runs one variant's consumer instances.
type Supervisor struct {
	cfg Config

	mu       sync.Mutex
	gens     int
	live     map[int]*instance    // by generation
	conns    map[string]*instance // remote address of a connection → its instance
	groups   []int                // every process group started
	stopping bool
	// delivered and committed count, per intent, the fetch responses and
	// commits that carried it; withheld counts the fetch responses
	// withheld for it by a kill (so the schedule's attempt at delivery is
	// delivered + withheld + 1).
	delivered, committed, withheld map[int]int

	wg   sync.WaitGroup
	errs chan error
	// spawn runs each process start on one goroutine locked to its thread
	// (spawner): the kernel sends a child its parent-death signal when
	// the thread that forked it ends, so that thread must outlive them.
	spawn     chan func()
	closeOnce sync.Once
}

// instance is one consumer process.
type instance struct {
	slot, gen int
	pid       int
	cmd       *exec.Cmd
	stderr    *tail
	started   time.Time
	done      chan struct{} // closed once the process has been waited for
	ready     chan struct{} // closed at its first connection to the broker
	readyOnce sync.Once
	killedBy  string   // the fault that killed it, under Supervisor.mu
	members   []string // its group member ids, under Supervisor.mu
}

// New makes a supervisor; install its Watch on the destination, then Start.
func New(cfg Config) *Supervisor {
	s := &Supervisor{
		cfg: cfg, live: map[int]*instance{}, conns: map[string]*instance{},
		delivered: map[int]int{}, committed: map[int]int{}, withheld: map[int]int{},
		errs: make(chan error, 1), spawn: make(chan func()),
	}
	go s.spawner()
	return s
}

// spawner starts the processes, from one thread kept for their lifetime
// (see spawn); Stop ends it.
func (s *Supervisor) spawner() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for start := range s.spawn {
		start()
	}
}

// Errors delivers the first failure that ends the run (ErrConsumer).
func (s *Supervisor) Errors() chan error { return s.errs }

// Start starts every instance.
func (s *Supervisor) Start() error {
	if !canAttribute {
		return fmt.Errorf("%w: process variants need Linux for now: dqbench tells which process a broker connection comes from by its socket in /proc", ErrConsumer)
	}
	for slot := 1; slot <= s.cfg.Instances; slot++ {
		if err := s.start(slot); err != nil {
			return err
		}
	}
	return nil
}

// start starts a fresh instance in slot.
func (s *Supervisor) start(slot int) error {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return nil
	}
	s.gens++
	gen := s.gens
	s.mu.Unlock()

	cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
	cmd.Dir = s.cfg.Dir
	cmd.Env = append(os.Environ(), s.cfg.Env...)
	cmd.Env = append(cmd.Env, fmt.Sprintf("DQBENCH_INSTANCE=%d", slot), fmt.Sprintf("DQBENCH_GENERATION=%d", gen))
	cmd.SysProcAttr = sysProcAttr()
	inst := &instance{slot: slot, gen: gen, cmd: cmd, stderr: newTail(20, 4096),
		done: make(chan struct{}), ready: make(chan struct{})}
	cmd.Stdout = io.Discard
	cmd.Stderr = inst.stderr
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil
	}
	started := make(chan error, 1)
	s.spawn <- func() { started <- cmd.Start() }
	if err := <-started; err != nil {
		return fmt.Errorf("%w: start %s: %v", ErrConsumer, quote(s.cfg.Command), err)
	}
	inst.pid, inst.started = cmd.Process.Pid, time.Now()
	s.live[gen] = inst
	s.groups = append(s.groups, inst.pid)
	s.cfg.Rec.Record(history.Event{Type: history.Start, Consumer: gen, PID: inst.pid})
	s.wg.Add(2)
	go s.reap(inst)
	go s.watchReady(inst)
	return nil
}

// reap waits for an instance to end, records how, and starts a fresh one
// unless the run is stopping; an instance that exits on its own before it
// connected ends the run.
func (s *Supervisor) reap(inst *instance) {
	defer s.wg.Done()
	werr := inst.cmd.Wait()
	// Whatever it started in its group goes with it.
	_ = syscall.Kill(-inst.pid, syscall.SIGKILL)
	s.mu.Lock()
	delete(s.live, inst.gen)
	for addr, i := range s.conns {
		if i == inst {
			delete(s.conns, addr)
		}
	}
	stopping, killedBy := s.stopping, inst.killedBy
	s.mu.Unlock()
	close(inst.done)

	status := exitStatus(inst.cmd.ProcessState, werr)
	var reason string
	switch {
	case killedBy != "":
		reason = fmt.Sprintf("killed by %s (SIGKILL)", killedBy)
	case stopping:
		reason = "stopped at the end of the run: " + status
		if ps := inst.cmd.ProcessState; ps != nil && !ps.Success() && status != "killed by signal terminated" {
			reason += inst.stderr.suffix()
		}
	default:
		reason = "exited on its own: " + status + inst.stderr.suffix()
	}
	if stopping && killedBy == "" {
		s.cfg.Rec.Record(history.Event{Type: history.Stop, Consumer: inst.gen, PID: inst.pid, Reason: reason})
		return
	}
	s.cfg.Rec.Record(history.Event{Type: history.Crash, Consumer: inst.gen, PID: inst.pid, Reason: reason})
	if stopping {
		return
	}
	if killedBy == "" {
		select {
		case <-inst.ready:
		default:
			s.fail(fmt.Errorf("%w: instance %d (%s, pid %d) %s %s after it started, within its ready period (%s), before it connected to the broker%s",
				ErrConsumer, inst.slot, quote(s.cfg.Command), inst.pid, status, time.Since(inst.started).Round(time.Millisecond), s.cfg.Ready, inst.stderr.suffix()))
			return
		}
		time.Sleep(50 * time.Millisecond) // a supervisor's restart backoff
	}
	if err := s.start(inst.slot); err != nil {
		s.fail(err)
	}
}

// watchReady fails the run when an instance does not connect to the broker
// within its ready period.
func (s *Supervisor) watchReady(inst *instance) {
	defer s.wg.Done()
	t := time.NewTimer(s.cfg.Ready)
	defer t.Stop()
	select {
	case <-inst.ready:
	case <-inst.done:
	case <-t.C:
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if !stopping {
			s.fail(fmt.Errorf("%w: instance %d (%s, pid %d) did not connect to the broker within its ready period (%s); raise process.ready or check its DQBENCH_BROKERS%s",
				ErrConsumer, inst.slot, quote(s.cfg.Command), inst.pid, s.cfg.Ready, inst.stderr.suffix()))
		}
	}
}

func (s *Supervisor) fail(err error) {
	select {
	case s.errs <- err:
	default:
	}
}

// Watch is what the destination calls for the variant's topic.
func (s *Supervisor) Watch() brokers.ConsumerWatch {
	return brokers.ConsumerWatch{Connected: s.connected, Member: s.member, Fetched: s.fetched, Committing: s.committing}
}

// member notes a group member id an instance uses.
func (s *Supervisor) member(remote net.Addr, id string) {
	inst := s.owner(remote)
	if inst == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !contains(inst.members, id) {
		inst.members = append(inst.members, id)
	}
}

// connected notes which instance, if any, opened a connection.
func (s *Supervisor) connected(remote net.Addr) {
	if inst := s.owner(remote); inst != nil {
		inst.readyOnce.Do(func() { close(inst.ready) })
	}
}

// owner is the live instance the connection from remote belongs to, or nil.
func (s *Supervisor) owner(remote net.Addr) *instance {
	s.mu.Lock()
	inst, ok := s.conns[remote.String()]
	live := make([]*instance, 0, len(s.live))
	for _, i := range s.live {
		live = append(live, i)
	}
	s.mu.Unlock()
	if ok || len(live) == 0 {
		return inst
	}
	client, _ := remote.(*net.TCPAddr)
	if client == nil {
		return nil
	}
	for _, server := range s.brokerAddrs() {
		ino := socketInode(client, server)
		if ino == 0 {
			continue
		}
		for _, i := range live {
			for _, pid := range groupMembers(i.pid) {
				if holdsSocket(pid, ino) {
					s.mu.Lock()
					if s.live[i.gen] == i {
						s.conns[remote.String()] = i
					}
					s.mu.Unlock()
					return i
				}
			}
		}
	}
	return nil
}

// Brokers are the broker's addresses (set by the runner), to find a
// connection's socket by its two ports.
func (s *Supervisor) brokerAddrs() []*net.TCPAddr {
	var out []*net.TCPAddr
	for _, a := range s.cfg.Brokers {
		if t, err := net.ResolveTCPAddr("tcp", a); err == nil {
			out = append(out, t)
		}
	}
	return out
}

// fetched records a fetch response's records as delivered to the instance
// at remote, or kills the instance before the response leaves when a
// consumer-kill fault fires at delivery for one of them.
func (s *Supervisor) fetched(remote net.Addr, ds []brokers.Delivery) error {
	inst := s.owner(remote)
	if inst != nil {
		inst.readyOnce.Do(func() { close(inst.ready) })
	}
	if len(ds) == 0 {
		return nil
	}
	if killed, err := s.killOn(inst, catalog.KillOnDelivery, ds); killed {
		return err
	}
	gen := inst.generation()
	for _, d := range ds {
		s.mu.Lock()
		s.delivered[d.Intent]++
		attempt := s.delivered[d.Intent]
		s.mu.Unlock()
		s.cfg.Rec.Record(history.Event{Type: history.Deliver, Intent: d.Intent, Attempt: attempt, Consumer: gen,
			Position: d.Position, Redelivered: attempt > 1})
		s.cfg.Delivered(d.Intent)
	}
	return nil
}

// killOn kills inst when a consumer-kill fault at p fires for one of ds;
// killed says whether it did.
func (s *Supervisor) killOn(inst *instance, p catalog.KillPoint, ds []brokers.Delivery) (killed bool, err error) {
	if inst == nil || !s.cfg.Kills.Armed(p) {
		return false, nil
	}
	name, hit := s.fires(p, ds)
	if name == "" {
		return false, nil
	}
	return true, s.kill(inst, name, p, hit)
}

// generation is inst's consumer generation, 0 for a connection no
// instance owns.
func (inst *instance) generation() int {
	if inst == nil {
		return 0
	}
	return inst.gen
}

// committing records a commit's (or ack's) records as acked by the
// instance at remote, or withholds the commit and kills the instance when
// a consumer-kill fault fires at commit (ack) for one of them.
func (s *Supervisor) committing(remote net.Addr, ds []brokers.Delivery) error {
	inst := s.owner(remote)
	if len(ds) == 0 {
		return nil
	}
	if killed, err := s.killOn(inst, s.ackPoint(), ds); killed {
		return err
	}
	gen := inst.generation()
	for _, d := range ds {
		s.mu.Lock()
		s.committed[d.Intent]++
		s.mu.Unlock()
		s.cfg.Rec.Record(history.Event{Type: history.Ack, Intent: d.Intent, Consumer: gen, Position: d.Position})
		s.cfg.Committed(d.Intent)
	}
	return nil
}

// ackPoint is the kill point of a commit or ack.
func (s *Supervisor) ackPoint() catalog.KillPoint {
	if s.cfg.AckPoint == "" {
		return catalog.KillOnCommit
	}
	return s.cfg.AckPoint
}

// fires asks the schedule about each record at point p, each on its next
// attempt there. At delivery, only the records it fires for spend that
// attempt: the others in the withheld response never reached the consumer.
// At commit, every record in the withheld commit spends one: each was sent.
func (s *Supervisor) fires(p catalog.KillPoint, ds []brokers.Delivery) (string, []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	attempt := func(intent int) int { return s.delivered[intent] + s.withheld[intent] + 1 }
	if p != catalog.KillOnDelivery {
		attempt = func(intent int) int { return s.committed[intent] + 1 }
	}
	name := ""
	var hit []int
	for _, d := range ds {
		if n := s.cfg.Kills.Fires(p, d.Intent, attempt(d.Intent)); n != "" {
			if name == "" {
				name = n
			}
			hit = append(hit, d.Intent)
		}
	}
	if name == "" {
		return "", nil
	}
	for _, d := range ds {
		switch {
		case p != catalog.KillOnDelivery:
			s.committed[d.Intent]++
		case contains(hit, d.Intent):
			s.withheld[d.Intent]++
		}
	}
	return name, hit
}

// kill records the fault and SIGKILLs inst's process group, and waits until
// it is gone, so that nothing more it does reaches the broker; the reaper
// then starts a fresh instance. The error withholds what the broker was
// about to send or apply.
func (s *Supervisor) kill(inst *instance, fault string, p catalog.KillPoint, intents []int) error {
	s.mu.Lock()
	inst.killedBy = fault
	s.mu.Unlock()
	e := history.Event{Fault: fault, Point: string(p), Intent: intents[0], Consumer: inst.gen, PID: inst.pid}
	if len(intents) > 1 {
		e.Intents = intents
	}
	s.cfg.Kills.Record(e)
	_ = syscall.Kill(-inst.pid, syscall.SIGKILL)
	select {
	case <-inst.done:
	case <-time.After(5 * time.Second):
	}
	s.mu.Lock()
	members := append([]string(nil), inst.members...)
	s.mu.Unlock()
	if len(members) > 0 && s.cfg.Evict != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.cfg.Evict(ctx, members) // at worst, the group waits out the session timeout
		cancel()
	}
	return fmt.Errorf("consumer pid %d killed by %s at %s of intent %d", inst.pid, fault, p, intents[0])
}

// Stop stops every instance: SIGTERM to each process group, SIGKILL to
// what is left after grace or when ctx ends, and waits for them. No
// instance starts after it; calling it again kills what might be left.
func (s *Supervisor) Stop(ctx context.Context, grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	live := make([]*instance, 0, len(s.live))
	for _, i := range s.live {
		live = append(live, i)
	}
	s.mu.Unlock()
	for _, i := range live {
		_ = syscall.Kill(-i.pid, syscall.SIGTERM)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
wait:
	for _, i := range live {
		select {
		case <-i.done:
		case <-t.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	s.mu.Lock()
	groups := append([]int(nil), s.groups...)
	s.mu.Unlock()
	for _, pg := range groups {
		_ = syscall.Kill(-pg, syscall.SIGKILL)
	}
	s.wg.Wait()
	s.closeOnce.Do(func() { close(s.spawn) })
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// exitStatus says how a process ended: "exited with status 1", "killed by
// signal killed".
func exitStatus(st *os.ProcessState, err error) string {
	if st == nil {
		return fmt.Sprintf("ended: %v", err)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exited with status %d", st.ExitCode())
}

func quote(cmd []string) string {
	parts := make([]string, len(cmd))
	for i, c := range cmd {
		parts[i] = fmt.Sprintf("%q", c)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// tail keeps the last lines written to it (a process's stderr).
type tail struct {
	mu       sync.Mutex
	lines    int
	max      int
	buf      []byte
	maxBytes int
}

func newTail(lines, maxBytes int) *tail { return &tail{max: lines, maxBytes: maxBytes} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	for t.count() > t.max || len(t.buf) > t.maxBytes {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 || i+1 >= len(t.buf) {
			t.buf = t.buf[len(t.buf)-min(len(t.buf), t.maxBytes):]
			break
		}
		t.buf = t.buf[i+1:]
	}
	return len(p), nil
}

// count is how many lines buf holds, the last one maybe unfinished.
func (t *tail) count() int {
	n := bytes.Count(t.buf, []byte("\n"))
	if len(t.buf) > 0 && t.buf[len(t.buf)-1] != '\n' {
		n++
	}
	return n
}

// String is the last lines, made safe to print on a terminal: control
// characters other than newline and tab (escape sequences that would move
// the cursor or recolour it) and invalid UTF-8 are shown escaped.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return ansi.Inert(strings.TrimRight(string(t.buf), "\n"))
}

// suffix is "; last lines of its stderr:" and them, or "".
func (t *tail) suffix() string {
	s := t.String()
	if s == "" {
		return "; it wrote nothing to stderr"
	}
	return "; last lines of its stderr:\n  " + strings.ReplaceAll(s, "\n", "\n  ")
}

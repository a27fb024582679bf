// Package story reads a run's history a second time, after it was judged,
// and keeps what the reports show of it: the life of chosen intents (every
// event that names them, and the crashes and restarts of the consumers that
// held them) and a timeline of each variant binned into a fixed number of
// bins. Its memory does not grow with the history: only the chosen intents'
// events, the bins, and a bounded number of fault marks and crash windows
// are kept.
package story

import (
	"cmp"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
)

// Limits of what one collection keeps.
const (
	// MaxStoryEvents bounds the events kept of one intent (a poison
	// message redelivered forever has no end).
	MaxStoryEvents = 200
	// MaxMarks bounds the fault marks and crash windows kept per variant;
	// past it the timeline still counts faults per bin.
	MaxMarks = 5000
)

// Story is the life of one intent in one variant.
type Story struct {
	Variant string
	check.IntentVerdict
	// Events are every event that names the intent, plus the crash and
	// restart of each consumer that held it, in history order.
	Events []history.Event
	// Truncated says events past MaxStoryEvents were left out.
	Truncated bool
}

// Lane is who an event belongs to in a swimlane: "producer", "broker",
// "consumer N" or "store".
func Lane(e history.Event) string {
	switch e.Type {
	case history.Publish, history.PubFailed, history.Written:
		return "producer"
	case history.Confirm, history.DeadLetter, history.Drain:
		return "broker"
	case history.Effect:
		return "store"
	case history.Fault:
		if e.Consumer == 0 && catalog.PatternWith(catalog.ProducerPoint(e.Point)) != "" {
			return "producer" // producer-app-crash: the producer application died
		}
		if e.Consumer == 0 {
			return "broker" // a fault inside the broker (produce-response-lost)
		}
		if len(e.Intents) > 0 {
			return "stage " + strconv.Itoa(e.Consumer) // a fault on a stage's batch
		}
	case history.StageStart, history.StageRead, history.StageWrite, history.StageCommit, history.StageAbort, history.StageCrash:
		return "stage " + strconv.Itoa(e.Consumer) // a consume-transform-produce stage instance
	}
	if e.Consumer > 0 {
		return "consumer " + strconv.Itoa(e.Consumer)
	}
	return "broker"
}

// Timeline is every variant's activity over time, on one axis.
type Timeline struct {
	// End is the offset the last bin ends at; Bin is each bin's width.
	End, Bin time.Duration
	// Variants in the order asked for.
	Variants []*Series
}

// Series is one variant's activity per bin.
type Series struct {
	Variant                             string
	Publishes, Deliveries, Acks, Effect []int // per bin; Effect counts applied effects
	FaultsPerBin                        []int
	// Faults are the fault injections, at most MaxMarks of them.
	Faults []Mark
	// Down are the windows between a consumer's crash and the start of
	// its replacement, at most MaxMarks of them.
	Down []Window
}

// Mark is one fault injection.
type Mark struct {
	T      time.Duration
	Fault  string
	Intent int
}

// Window is a consumer down: from its crash to the next consumer start.
type Window struct {
	From, To time.Duration
	Consumer int
}

// Collection is what one pass kept.
type Collection struct {
	Timeline Timeline
	// Stories in the order asked for.
	Stories []*Story
}

// Want is an intent to tell the story of.
type Want struct {
	Variant string
	check.IntentVerdict
}

// variantState is one variant's bookkeeping during the pass.
type variantState struct {
	series  *Series
	stories map[int]*Story
	down    []time.Duration // crashes not yet followed by a start
	downBy  []int
	// consumer lifecycle: for the stories, each generation's start and crash
	starts, crashes map[int]history.Event
}

// Collect reads events once. variants name the timeline's series; end is
// the latest offset in the history (check.Inspection.End); bins the number
// of timeline bins; want the intents whose stories to keep.
func Collect(events iter.Seq2[history.Event, error], variants []string, end time.Duration, bins int, want []Want) (*Collection, error) {
	bins = max(bins, 1)
	end = max(end, time.Millisecond)
	c := &Collection{Timeline: Timeline{End: end, Bin: max(end/time.Duration(bins), 1)}}
	states := map[string]*variantState{}
	for _, name := range variants {
		s := &Series{
			Variant:   name,
			Publishes: make([]int, bins), Deliveries: make([]int, bins),
			Acks: make([]int, bins), Effect: make([]int, bins), FaultsPerBin: make([]int, bins),
		}
		c.Timeline.Variants = append(c.Timeline.Variants, s)
		states[name] = &variantState{series: s, stories: map[int]*Story{},
			starts: map[int]history.Event{}, crashes: map[int]history.Event{}}
	}
	for _, w := range want {
		st := states[w.Variant]
		if st == nil {
			continue
		}
		s := &Story{Variant: w.Variant, IntentVerdict: w.IntentVerdict}
		st.stories[w.Intent] = s
		c.Stories = append(c.Stories, s)
	}
	bin := func(t time.Duration) int {
		return min(max(int(int64(t)*int64(bins)/int64(end)), 0), bins-1)
	}
	for e, err := range events {
		if err != nil {
			return nil, err
		}
		st := states[e.Variant]
		if st == nil {
			continue
		}
		st.add(e, bin(e.T))
	}
	for _, st := range states {
		st.finish(end)
	}
	return c, nil
}

func (st *variantState) add(e history.Event, b int) {
	s := st.series
	switch e.Type {
	case history.Publish:
		s.Publishes[b]++
	case history.Deliver:
		s.Deliveries[b]++
	case history.Ack:
		s.Acks[b]++
	case history.Effect:
		if e.Applied {
			s.Effect[b]++
		}
	case history.Fault:
		s.FaultsPerBin[b]++
		if len(s.Faults) < MaxMarks {
			s.Faults = append(s.Faults, Mark{T: e.T, Fault: e.Fault, Intent: e.Intent})
		}
	case history.Crash:
		if len(st.down) < MaxMarks {
			st.down = append(st.down, e.T)
			st.downBy = append(st.downBy, e.Consumer)
		}
		if len(st.stories) > 0 {
			st.crashes[e.Consumer] = e
		}
	case history.Start:
		if len(st.down) > 0 {
			if len(s.Down) < MaxMarks {
				s.Down = append(s.Down, Window{From: st.down[0], To: e.T, Consumer: st.downBy[0]})
			}
			st.down, st.downBy = st.down[1:], st.downBy[1:]
		}
		if len(st.stories) > 0 {
			st.starts[e.Consumer] = e
		}
	}
	if len(st.stories) == 0 {
		return
	}
	if s := st.stories[e.Intent]; s != nil && e.Intent != 0 {
		s.keep(e)
	}
	for _, id := range e.Intents {
		if s := st.stories[id]; s != nil && id != e.Intent {
			s.keep(e)
		}
	}
}

func (s *Story) keep(e history.Event) {
	if len(s.Events) >= MaxStoryEvents {
		s.Truncated = true
		return
	}
	s.Events = append(s.Events, e)
}

// finish closes the windows still open at the end and adds to each story
// the crashes and restarts of the consumers that held its intent.
func (st *variantState) finish(end time.Duration) {
	for i, from := range st.down {
		if len(st.series.Down) < MaxMarks {
			st.series.Down = append(st.series.Down, Window{From: from, To: end, Consumer: st.downBy[i]})
		}
	}
	for _, s := range st.stories {
		if len(s.Events) == 0 {
			continue
		}
		// A restart or crash of a consumer that held the intent belongs to
		// its story while the intent was in flight, and so does the crash
		// that a fault on the intent caused.
		first, last := s.Events[0].T, s.Events[len(s.Events)-1].T
		held, faulted := map[int]bool{}, map[int]bool{}
		for _, e := range s.Events {
			if e.Consumer > 0 {
				held[e.Consumer] = true
			}
			if e.Type == history.Fault && e.Consumer > 0 {
				faulted[e.Consumer] = true
			}
		}
		var extra []history.Event
		for c := range held {
			if e, ok := st.starts[c]; ok && e.T > first && e.T < last {
				extra = append(extra, e)
			}
			if e, ok := st.crashes[c]; ok && e.T > first && (e.T < last || faulted[c]) {
				extra = append(extra, e)
			}
		}
		if len(extra) == 0 {
			continue
		}
		s.Events = append(s.Events, extra...)
		slices.SortStableFunc(s.Events, func(a, b history.Event) int { return cmp.Compare(a.T, b.T) })
	}
}

// Anomalous chooses the stories a report tells: the anomalous intents of
// each variant, at most perCause of each cause (the lowest ids), in the
// order of variants and check.Causes.
func Anomalous(in *check.Inspection, variants []string, perCause int) []Want {
	var out []Want
	for _, name := range variants {
		a := in.Anomalies(name, perCause)
		for _, c := range check.Causes {
			for _, v := range a.Sample[c] {
				out = append(out, Want{Variant: name, IntentVerdict: v})
			}
		}
	}
	return out
}

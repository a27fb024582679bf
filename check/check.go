// Package check judges a run: a pure function of the recorded history, the
// final audit of each variant's store and the scenario's expectations.
//
// Everything is counted per intent, never from totals, so a duplicate can
// never hide an equal number of losses. The history is read in one pass
// with a few bytes of state per intent.
package check

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/plan"
)

// The ways a variant's experiment can be invalid (exit code 3); each
// Variant.Invalid line starts with one of these.
var (
	ErrFaultNeverFired  = errors.New("a configured fault never fired")
	ErrInconsistent     = errors.New("the store's balances disagree with its ledger")
	ErrNoAudit          = errors.New("no store audit was recorded for this variant")
	ErrCallsDisagree    = errors.New("the external service's effects disagree with its recorded calls")
	ErrProducerDisagree = errors.New("the producer application's store disagrees with its recorded writes and publishes")
	ErrIncomplete       = errors.New("the drain gave up before the broker had delivered everything")
	ErrDrainClaims      = errors.New("the drain's looping list disagrees with the history")
)

// facts is everything the history and audit say about one intent.
type facts struct {
	pos          uint64        // hash of the first delivered position, 0 if none
	firstDeliver time.Duration // offset of the first delivery
	firstPublish time.Duration // offset of the first publish
	flags        uint32
	applied      int32  // ledger rows, from the audit
	pubSeq       uint32 // the first publish's place in the variant's history, 0 if none
	deliveries   uint16 // saturating
	ackAttempt   uint16 // the attempt (delivery count) of its last ack, saturating
}

const (
	published uint32 = 1 << iota
	confirmed
	flagged        // a delivery was flagged as redelivered
	skipped        // the strategy skipped a delivery as a duplicate
	deadLettered   // sent to a dead-letter queue
	copies         // delivered from more than one position: stored twice
	rejected       // the strategy refused a delivery (out of order, illegal transition)
	skippedFirst   // skipped on its first delivery: the id was marked by another intent
	abortedSeen    // delivered from a stage's output record whose transaction aborted
	abortedWritten // a stage wrote it in a batch whose transaction aborted
	sameCopy       // a delivery came again from the first position (the broker redelivered the copy it stored)
	held           // a fault event says the broker had it (received while the subscriber was offline)
	nacked         // the broker refused a publish of it (a nack, a reject, an error saying it did not take it)
	acked          // the consumer acked a delivery of it
	afterAck       // delivered again after the consumer had acked it
	faultNamed     // a fault outside the consumer loop named it (an ack-lost: the ack was lost on purpose)
	cutFirst       // a consumer fault cut its first delivery's processing at a crash point (fail-once retried in process: a skip on that same delivery found its own marker)
	written        // a write event: the producer application committed its business row (producer.pattern dual-write or outbox)
	stored         // the producer application's store holds its business row (the producer audit; a saved run from before it: its write event)
	outboxRow      // the producer application's store holds its outbox row
	sentMark       // the outbox relay marked its outbox row sent
	relayedAgain   // the outbox relay died after publishing it and before marking it sent: the restarted relay published it again
	effected       // an effect event says the strategy applied it
	outOfOrder     // its first effect came after the effect of an intent of its account published later
	retainedAgain  // delivered from the broker's retained messages to a subscription the consumer made (MQTT RETAIN)
	dlxPending     // the consumer rejected it to the dead-letter exchange, and no delivery or dead-letter event of it came since
	looping        // handed back to the broker unsettled (tally.handedBack), and not acked, dead-lettered or rejected to the dead-letter exchange since
	lastQoS0       // its last delivery arrived at QoS 0: the broker keeps nothing of it to give out again
	droppedUnread  // a consumer instance died with it received by its client and never handed out, the broker having forgotten it (a crash event's Intents: RabbitMQ autoAck)
	lateRetried    // published again although no fault was aimed at its publish, or after the broker had confirmed an earlier send: the producer gave up a send the schedule did not touch (a confirm slower than producer.confirm_timeout)
	inFlight       // in a consumer's hands (delivered, not yet processed, its instance alive), or written and not yet published, when the run was interrupted
)

func (f *facts) has(flag uint32) bool { return f.flags&flag != 0 }

// ackedAgain: the broker delivered the intent again after the consumer
// had acked it, and no fault was aimed at its ack (an ack-lost fault loses
// the ack on purpose: that is the fault's redelivery; a consumer fault on
// an earlier delivery of it, such as a crash before processing, is not).
// The broker had not applied the ack when the consumer went away.
func (f *facts) ackedAgain() bool { return f.has(afterAck) && !f.has(faultNamed) }

// missing: the application handed the intent to the producer, its effect
// never applied, and nobody said so: neither the broker (a refusal the
// producer heard: refused) nor the consumer (rejected). Whether it counts
// as lost also depends on the drain (tally.lossCause).
//
// A rejected intent whose dead-lettering was never seen to arrive (no
// delivery or dead-letter event after the consumer's reject) is missing
// all the same: the consumer said so to the broker, which kept it nowhere.
func (f *facts) missing() bool {
	return (f.has(published) || f.has(stored)) && f.applied == 0 && (!f.has(rejected) || f.has(dlxPending)) && !f.brokerRefused()
}

// reachedBroker: the broker is known to have had the intent: it confirmed
// or delivered it, or a fault event says it held it.
func (f *facts) reachedBroker() bool {
	return f.has(confirmed) || f.has(held) || f.deliveries > 0
}

// brokerRefused: the broker refused a publish of the intent, it never had
// it as far as anyone saw, and its effect never applied. The producer was
// told: counted as refused, not lost.
func (f *facts) brokerRefused() bool {
	return f.has(published) && f.has(nacked) && !f.reachedBroker() && f.applied == 0
}

// refused: the consumer rejected the intent and its effect never applied
// (and the broker kept it: not a dead-letter it dropped).
func (f *facts) refused() bool {
	return f.has(published) && f.has(rejected) && f.applied == 0 && !f.has(dlxPending)
}

// lossCause says why intent f was lost, and whether it counts as lost: an
// intent that may still be on the broker when the drain gave up (never
// delivered, or still looping: handed back and not settled since) is not
// a loss the run observed.
func (t *tally) lossCause(f *facts) (Cause, bool) {
	if !f.missing() {
		return "", false
	}
	c := f.lossCause()
	if (c == LostUndelivered || c == LostUnconfirmed || c == LostDLXDropped || f.has(looping)) && !t.drained() {
		return c, false
	}
	if t.interrupted && t.heldAtInterrupt(f, c) {
		return c, false
	}
	return c, true
}

// handedBack notes that a delivery of intent f (its attempt) went back to
// the broker unsettled: its processing failed (an effect refused, then
// requeued or rejected, as on_failure says), or a consumer fault hit it
// (a crash, a failure, a cut connection) before its ack, and the broker
// gives it out again. The intent loops from then on until an ack, a
// dead-letter or a reject settles it. A delivery acked before the fault
// (ack before processing) or one at QoS 0 went back to nothing: the
// broker had forgotten it already.
func (f *facts) handedBack(attempt int) {
	if f.has(lastQoS0) || f.has(acked) && int(f.ackAttempt) == min(attempt, 1<<16-1) {
		return
	}
	f.flags |= looping
}

// heldAtInterrupt: in a run interrupted before its end, intent f (missing,
// cause c) was not lost but still on its way: in flight at the interrupt
// (a consumer had it in hand, or the producer application had written it
// and not yet published it), or delivered, never processed and never
// acked, so that the broker still had it for a redelivery the run did not
// wait for.
func (t *tally) heldAtInterrupt(f *facts, c Cause) bool {
	return f.has(inFlight) || c == LostUnprocessed && !f.has(acked)
}

// tally is one variant's state while the history is read.
type tally struct {
	broker  catalog.BrokerKind // the run's broker, for the notes' words
	dense   []facts            // intents 1..len-1
	sparse  map[int]*facts     // intents outside the dense range
	lookups int                // calls of get, which bound the dense range
	noAudit bool               // the variant has no store audit: its delivered intents' effects are unknown
	faults  int
	fired   map[string]int
	armed   []string
	crashes int
	// leases counts the instances that stalled past their lease
	// (consumer-zombie) and were replaced while still holding deliveries.
	leases int
	// droppedAtCrash: messages the crashed instances had been sent and
	// died with, the broker having forgotten them (crash events' Intents).
	droppedAtCrash int
	// ackUnconfirmed: acks the broker did not confirm in time (a double
	// ack), each sent again by the consumer.
	ackUnconfirmed int
	killed         []int // processes a fault killed (process variants)
	drain          *history.Event
	qos            map[string]int // deliveries per QoS level (MQTT)
	recLost        map[int]bool   // intents whose subscriber PUBREC a fault lost (MQTT QoS 2)
	limits         string         // the broker's limits, when it drops messages past them
	stage          *stageTally    // nil until a stage instance starts
	// faultReasons says what some injections did (the moves of a
	// leader-move, the node a leader-failover stopped), for the notes;
	// unnamed counts the rest.
	faultReasons []string
	unnamed      int
	// lostBy counts the lost intents by cause, once counts has run.
	lostBy map[Cause]int
	// seq numbers the variant's events, for the order of publishes and
	// effects; newest maps an account to the latest publish (pubSeq) of
	// its intents whose effect has applied.
	seq    uint32
	newest map[int]uint32
	// orderSubject: the variant is about order (it expects something of
	// out_of_order, or refuses updates out of order: version-cas), so
	// the notes explain out_of_order at length; else one short line.
	orderSubject bool
	// redelivery and republish are the largest times between an intent's
	// first and last delivery, and first and last publish.
	redelivery, republish gapTally
	// claims says how the drain's looping list disagrees with what the
	// history shows at the drain's end, "" when it agrees.
	claims string
	// inHand maps each intent a consumer instance holds (delivered, its
	// processing not ended by an effect event, its instance not crashed)
	// to the instance; interrupted says an interrupted event came, when
	// inHand's intents were marked inFlight.
	inHand      map[int]int
	interrupted bool
}

// interrupt notes that the run was interrupted here: what a consumer held
// and what the producer application had written and not yet published
// are in flight, never lost.
func (t *tally) interrupt() {
	if t.interrupted {
		return
	}
	t.interrupted = true
	for id := range t.inHand {
		t.get(id).flags |= inFlight
	}
	t.each(func(_ int, f *facts) {
		if f.has(written) && !f.has(published) && !f.has(faultNamed) {
			f.flags |= inFlight
		}
	})
}

// hold notes that consumer instance gen holds intent id; gen 0 lets it go.
func (t *tally) hold(id, gen int) {
	if gen == 0 {
		delete(t.inHand, id)
		return
	}
	if t.inHand == nil {
		t.inHand = map[int]int{}
	}
	t.inHand[id] = gen
}

// crashed lets go of what consumer instance gen held (its intents go back
// to the broker, or are lost if it had acked them).
func (t *tally) crashed(gen int) {
	for id, g := range t.inHand {
		if g == gen || gen == 0 {
			delete(t.inHand, id)
		}
	}
}

// gapTally is the largest gap seen so far and the intent it was seen on.
type gapTally struct {
	d      time.Duration
	intent int
}

// see notes a gap of intent's.
func (g *gapTally) see(d time.Duration, intent int) {
	if d > g.d || g.intent == 0 {
		g.d, g.intent = d, intent
	}
}

// denseLimit bounds the slice of per-intent facts; intent ids past it (a
// foreign consumer's garbage) go to a map.
const denseLimit = 1 << 25

// denseReach is how far past the intents looked up so far (4 per look-up)
// the dense slice grows for an intent id: a run's ids are about as many as
// its events, while a saved run from someone else may name intent 10
// million in its one event, which goes to the map instead. Memory follows
// the history's size, not what it claims.
const denseReach = 1024

func (t *tally) get(id int) *facts {
	t.lookups++
	if id > 0 && id < len(t.dense) {
		return &t.dense[id]
	}
	if id > 0 && id < denseLimit && id <= 4*t.lookups+denseReach {
		n := max(2*len(t.dense), id+1, 1024)
		n = min(n, denseLimit, 8*t.lookups+2*denseReach)
		n = max(n, id+1)
		old := len(t.dense)
		t.dense = append(t.dense, make([]facts, n-old)...)
		for sid, f := range t.sparse { // ids the slice now covers
			if sid >= old && sid < n {
				t.dense[sid] = *f
				delete(t.sparse, sid)
			}
		}
		return &t.dense[id]
	}
	if t.sparse == nil {
		t.sparse = map[int]*facts{}
	}
	f := t.sparse[id]
	if f == nil {
		f = &facts{}
		t.sparse[id] = f
	}
	return f
}

// each visits every intent that the history or audit mentions.
func (t *tally) each(fn func(id int, f *facts)) {
	for id := 1; id < len(t.dense); id++ {
		if f := &t.dense[id]; *f != (facts{}) {
			fn(id, f)
		}
	}
	for id, f := range t.sparse {
		fn(id, f)
	}
}

var posSeed = maphash.MakeSeed()

// add notes what event e says of its intent and of the variant: one case
// per event type, each a named step below.
func (t *tally) add(e *history.Event) {
	if t.seq < ^uint32(0) {
		t.seq++
	}
	switch e.Type {
	case history.Publish:
		t.onPublish(e)
	case history.Written:
		t.get(e.Intent).flags |= written
	case history.Confirm:
		t.get(e.Intent).flags |= confirmed
	case history.PubFailed:
		if e.Refused {
			t.get(e.Intent).flags |= nacked
		}
	case history.Reject:
		t.onReject(e)
	case history.Deliver:
		t.onDeliver(e)
	case history.Effect:
		t.onEffect(e)
	case history.Ack:
		t.onAck(e)
	case history.DeadLetter:
		f := t.get(e.Intent)
		f.flags |= deadLettered
		f.flags &^= dlxPending | looping
	case history.Armed:
		t.armed = append(t.armed, e.Fault)
	case history.Fault:
		t.onFault(e)
	case history.Crash:
		t.onCrash(e)
	case history.AckUnconfirmed:
		t.ackUnconfirmed++
	case history.Drain:
		d := *e
		t.drain = &d
		t.claims = t.checkClaims(e.Intents)
	case history.Limits:
		t.limits = e.Reason
	case history.Interrupted:
		if !t.drained() { // after a complete drain the run had ended
			t.interrupt()
		}
	case history.StageStart, history.StageWrite, history.StageAbort, history.StageCrash:
		t.addStage(e)
	}
	if t.stage != nil && e.Type == history.Deliver && e.Position != "" {
		t.stage.delivered = append(t.stage.delivered, delivered{intent: e.Intent, pos: e.Position})
	}
}

// onPublish notes a publish: the intent's first one has its place in the
// variant's order; a later one measures the republish gap.
func (t *tally) onPublish(e *history.Event) {
	f := t.get(e.Intent)
	if e.Attempt > 1 && (f.has(confirmed) || !f.has(faultNamed)) && !f.has(written) {
		f.flags |= lateRetried
	}
	f.flags |= published
	if f.pubSeq == 0 {
		f.pubSeq, f.firstPublish = t.seq, e.T
	} else {
		t.republish.see(e.T-f.firstPublish, e.Intent)
	}
}

// onReject notes that the consumer handed a delivery to the dead-letter
// exchange: pending until a delivery or a dead-letter event shows it
// arrived somewhere.
func (t *tally) onReject(e *history.Event) {
	f := t.get(e.Intent)
	f.flags |= dlxPending
	f.flags &^= looping
	t.hold(e.Intent, 0)
}

// onDeliver notes a delivery: the redelivery gap, the consumer that holds
// it now, whether it came after an ack, at QoS 0, flagged, and from which
// stored copy.
func (t *tally) onDeliver(e *history.Event) {
	f := t.get(e.Intent)
	f.flags &^= dlxPending
	if f.deliveries == 0 {
		f.firstDeliver = e.T
	} else {
		t.redelivery.see(e.T-f.firstDeliver, e.Intent)
	}
	if f.deliveries < ^uint16(0) {
		f.deliveries++
	}
	t.hold(e.Intent, max(e.Consumer, 1))
	if f.has(acked) {
		f.flags |= afterAck
	}
	if e.QoS == "0" {
		f.flags |= lastQoS0
	} else {
		f.flags &^= lastQoS0
	}
	if e.Redelivered {
		f.flags |= flagged
	}
	f.deliveredFrom(e)
	if e.QoS != "" {
		if t.qos == nil {
			t.qos = map[string]int{}
		}
		t.qos[e.QoS]++
	}
}

// deliveredFrom notes which stored copy a delivery came from: the first
// position, the same one again, or another (the broker stored it twice).
// A retained message sent again is none of these.
func (f *facts) deliveredFrom(e *history.Event) {
	if e.Retained {
		// The retained message sent again, not a copy stored twice:
		// its position is the new subscription's.
		f.flags |= retainedAgain
		return
	}
	if e.Position == "" {
		return
	}
	h := maphash.String(posSeed, e.Position) | 1
	switch {
	case f.pos == 0:
		f.pos = h
	case f.pos != h:
		f.flags |= copies
	default:
		f.flags |= sameCopy
	}
}

// onEffect notes what the strategy did with a delivery: applied it,
// refused it (handed back), or skipped it as a duplicate.
func (t *tally) onEffect(e *history.Event) {
	t.hold(e.Intent, 0)
	switch {
	case e.Applied:
		t.effected(e.Intent, t.get(e.Intent))
	case e.Rejected:
		f := t.get(e.Intent)
		f.flags |= rejected
		f.handedBack(e.Attempt)
	case !e.Applied:
		f := t.get(e.Intent)
		f.flags |= skipped
		if e.Attempt == 1 {
			f.flags |= skippedFirst
		}
	}
}

// onAck notes an ack: the intent is settled, at this attempt.
func (t *tally) onAck(e *history.Event) {
	f := t.get(e.Intent)
	f.flags |= acked
	f.flags &^= looping
	f.ackAttempt = uint16(min(e.Attempt, 1<<16-1))
}

// onFault notes an injection: what it did to the intent it names, the
// intents a broker held, the process it killed.
func (t *tally) onFault(e *history.Event) {
	t.faults++
	if t.fired == nil {
		t.fired = map[string]int{}
	}
	t.fired[e.Fault]++
	t.addFaultReason(e)
	if e.Intent != 0 {
		t.faultOnIntent(e)
	}
	if e.Packet == string(catalog.PUBREC) && e.Leg == string(catalog.SubscriberLeg) && e.Intent > 0 {
		if t.recLost == nil {
			t.recLost = map[int]bool{}
		}
		t.recLost[e.Intent] = true
	}
	if e.Held {
		for _, in := range e.Intents {
			t.get(in).flags |= held
		}
	}
	if e.PID != 0 {
		t.killed = append(t.killed, e.PID)
	}
}

// faultOnIntent notes what a fault that names an intent did to it.
func (t *tally) faultOnIntent(e *history.Event) {
	if e.Point == string(catalog.AfterPublishBeforeMark) {
		t.get(e.Intent).flags |= relayedAgain
	}
	// A consumer fault (one that names its instance) acts on the
	// delivery in hand, before that delivery's ack: it explains that
	// delivery's redelivery, never one after an ack of a later
	// delivery. Only the others (ack-lost) lose an ack.
	if e.Consumer == 0 {
		t.get(e.Intent).flags |= faultNamed
	}
	if e.Consumer > 0 && e.Attempt == 1 && e.Point != "" {
		t.get(e.Intent).flags |= cutFirst
	}
	if e.Consumer > 0 {
		t.get(e.Intent).handedBack(e.Attempt)
	}
}

// onCrash notes that a consumer instance ended: it lets go of what it
// held; a lost lease is counted apart from a crash.
func (t *tally) onCrash(e *history.Event) {
	t.crashed(e.Consumer)
	for _, id := range e.Intents {
		t.get(id).flags |= droppedUnread
	}
	t.droppedAtCrash += len(e.Intents)
	if e.LeaseLost {
		t.leases++
	} else {
		t.crashes++
	}
}

// checkClaims compares the looping list of a drain that ends now
// (claimed) with the intents the history shows looping: each one it lists
// must be, and when it lists any (it ended on them: what is left loops
// forever, or starves the rest), it must list every one. It says how they
// disagree, or "" when they agree.
func (t *tally) checkClaims(claimed []int) string {
	listed := make(map[int]bool, len(claimed))
	settled := map[string][]int{} // listed, not looping: by what the history shows instead
	for _, id := range claimed {
		listed[id] = true
		f := t.get(id)
		if f.has(looping) {
			continue
		}
		why := "never handed back"
		switch {
		case f.has(acked):
			why = "acked"
		case f.has(deadLettered):
			why = "dead-lettered"
		case f.has(dlxPending):
			why = "rejected to the dead-letter exchange"
		case f.deliveries == 0:
			why = "never delivered"
		}
		settled[why] = append(settled[why], id)
	}
	var out []string
	if len(settled) > 0 {
		var parts []string
		n := 0
		for _, why := range []string{"acked", "dead-lettered", "rejected to the dead-letter exchange", "never delivered", "never handed back"} {
			if ids := settled[why]; len(ids) > 0 {
				slices.Sort(ids)
				parts = append(parts, why+": "+intentList(ids))
				n += len(ids)
			}
		}
		out = append(out, fmt.Sprintf("it lists %d intents as still looping that the history shows not looping at its end (%s)", n, strings.Join(parts, "; ")))
	}
	if len(claimed) > 0 {
		var unlisted []int
		t.each(func(id int, f *facts) {
			if f.has(looping) && !listed[id] {
				unlisted = append(unlisted, id)
			}
		})
		if len(unlisted) > 0 {
			slices.Sort(unlisted)
			out = append(out, fmt.Sprintf("it leaves out %d intents the history shows handed back and not settled since (%s)", len(unlisted), intentList(unlisted)))
		}
	}
	return strings.Join(out, ", and ")
}

// intentList names the lowest intents of ids (sorted), and how many more.
func intentList(ids []int) string {
	const named = 10
	var b strings.Builder
	for i, id := range ids[:min(len(ids), named)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", id)
	}
	if len(ids) > named {
		fmt.Fprintf(&b, " and %d more", len(ids)-named)
	}
	return b.String()
}

// effected notes an applied effect of intent f. Its first one is out of
// order when an intent of the same account published after it has had
// its effect applied already; a second one (a duplicate) is not judged.
func (t *tally) effected(id int, f *facts) {
	if f.has(effected) {
		return
	}
	f.flags |= effected
	if f.pubSeq == 0 {
		return // never published: unexpected, with no place in the order
	}
	if t.newest == nil {
		t.newest = map[int]uint32{}
	}
	a := history.Account(id)
	if t.newest[a] > f.pubSeq {
		f.flags |= outOfOrder
	}
	t.newest[a] = max(t.newest[a], f.pubSeq)
}

// Tally counts one variant's events (all for that variant) against its
// store audit. It also returns explanations of where duplicates and losses
// came from, for people reading the report.
func Tally(events iter.Seq2[history.Event, error], audit history.Audit) (Counts, []string, error) {
	var t tally
	for e, err := range events {
		if err != nil {
			return Counts{}, nil, err
		}
		t.add(&e)
	}
	c, notes := t.counts(audit)
	return c, notes, nil
}

// counts counts the variant once its history is read, against its store
// audit: one pass over the intents (sumIntent), then the notes that
// explain the counts, in a fixed order.
func (t *tally) counts(audit history.Audit) (Counts, []string) {
	for id, n := range audit.Applied {
		t.get(id).applied = int32(min(n, 1<<30))
	}
	t.producerRows(audit.Producer)
	t.stage.mark(t)
	var c Counts
	c.FaultsInjected = t.faults
	s := intentSums{lost: map[Cause]int{}, waiting: map[Cause]int{}}
	t.each(func(id int, f *facts) { t.sumIntent(&c, &s, id, f) })
	t.lostBy = s.lost
	if t.starved() {
		c.Starved = s.waiting[LostUndelivered] + s.waiting[LostUnconfirmed]
	}

	notes := t.faultNotes()
	notes = append(notes, t.copyNotes(s)...)
	notes = append(notes, t.consumerNotes(c, s)...)
	notes = append(notes, t.lossNotes(s.lost)...)
	notes = append(notes, t.unfinishedNotes(c, s)...)
	if len(audit.BalanceMismatch) > 0 {
		notes = append(notes, fmt.Sprintf("%d accounts' balances disagree with their ledger rows", len(audit.BalanceMismatch)))
	}
	if (t.drained() || t.starved()) && len(t.drain.Intents) > 0 && t.claims == "" {
		// (A list the history disagrees with is for the variant's
		// invalid line to say, not a note.)
		notes = append(notes, fmt.Sprintf("%d poison messages were still looping when the drain ended (each failed delivery requeued, no delivery limit): %d failed deliveries in all are counted in faults", len(t.drain.Intents), t.faults))
	}
	return c, notes
}

// intentSums is what the pass over the intents finds besides the counts:
// how many intents each note is about.
type intentSums struct {
	logCopies, ackedAgain, recDups, relayed, retained, interrupted, unaudited int
	lateRetried                                                               int

	lost         map[Cause]int // counted as lost, by cause
	waiting      map[Cause]int // never delivered when the drain gave up: not counted
	stillLooping []int         // delivered, handed back and never settled when the drain gave up: not counted
}

// sumIntent adds intent id (its facts f) to the counts c and the sums s.
func (t *tally) sumIntent(c *Counts, s *intentSums, id int, f *facts) {
	addIntent(c, f)
	if f.has(published) && f.has(copies) && !f.has(relayedAgain) {
		s.logCopies++
	}
	if f.has(lateRetried) && f.has(copies) {
		s.lateRetried++
	}
	if f.has(relayedAgain) && f.applied > 1 {
		s.relayed++
	}
	if f.has(afterAck) && t.verdict(id, f).Cause == DupAckedAgain {
		s.ackedAgain++
	}
	if f.has(retainedAgain) && t.verdict(id, f).Cause == DupRetained {
		s.retained++
	}
	if t.recLost[id] && f.applied > 1 && !f.has(copies) && (f.has(sameCopy) || f.has(flagged)) {
		s.recDups++
	}
	if cause, ok := t.lossCause(f); ok && t.noAudit && f.deliveries > 0 {
		s.unaudited++ // delivered: whether it was applied is the store's to say
	} else if ok {
		s.lost[cause]++
		c.Lost++
	} else if f.missing() && t.interrupted && t.heldAtInterrupt(f, cause) {
		s.interrupted++
	} else if f.missing() && f.has(looping) {
		s.stillLooping = append(s.stillLooping, id)
	} else if f.missing() {
		s.waiting[cause]++
	}
}

// copyNotes say where the copies came from: intents unaudited, stored or
// written twice, retained messages sent again, QoS 2 resends, relays that
// published again, and the stage's own.
func (t *tally) copyNotes(s intentSums) []string {
	var notes []string
	if s.unaudited > 0 {
		notes = append(notes, fmt.Sprintf("%d delivered intents are counted neither applied nor lost: no store audit was recorded, and only the store can say whether their effects were applied", s.unaudited))
	}
	if s.logCopies > 0 && t.stage != nil {
		notes = append(notes, fmt.Sprintf("%d intents were written to the stage's output more than once and read more than once (a stage crash or a rebalance between its write and its offset commit, or an aborted transaction read with read_uncommitted)", s.logCopies))
	} else if s.logCopies > 0 {
		if t.onlyQoS2() {
			// Not the broker's mechanism (a QoS 1 resend): the client's.
			notes = append(notes, fmt.Sprintf("%d intents were %s", s.logCopies, DupQoS2Resent.Doc(t.broker)))
		} else {
			b, _ := catalog.LookupBroker(t.broker)
			notes = append(notes, fmt.Sprintf("%d intents were stored more than once by the broker (%s)", s.logCopies, cmp.Or(b.StoredTwice, storedTwice)))
		}
	}
	if s.lateRetried > 0 {
		notes = append(notes, fmt.Sprintf("%d of them were sent again although no fault was aimed at their publish (or the broker's confirm of the earlier send came, too late): the producer gave up a send the fault schedule did not touch, its confirm slower than producer.confirm_timeout (a slow confirm is a lost one to the producer: on a loaded machine, copies beyond the faults)", s.lateRetried))
	}
	if s.retained > 0 {
		notes = append(notes, fmt.Sprintf("%d intents were %s (%s)", s.retained, DupRetained.Doc(t.broker), DupRetained))
	}
	if s.recDups > 0 && t.onlyQoS2() {
		notes = append(notes, fmt.Sprintf("%d intents were %s", s.recDups, DupQoS2Redeliver.Doc(t.broker)))
	}
	if s.relayed > 0 {
		notes = append(notes, fmt.Sprintf("%d intents were %s", s.relayed, DupRelayed.Doc(t.broker)))
	}
	return append(notes, t.stage.notes()...)
}

// consumerNotes say what the consumers went through (crashes, lost
// leases, unconfirmed acks) and what they did: duplicates, out of order,
// refused; and the intents the broker refused.
func (t *tally) consumerNotes(c Counts, s intentSums) []string {
	var notes []string
	if t.crashes > 0 && t.droppedAtCrash > 0 {
		notes = append(notes, fmt.Sprintf("%d consumer crashes, each followed by a replacement; the broker had forgotten what it sent them (acked as sent: autoAck), so %d messages they had been sent and not yet handed out died with them and came to nobody again", t.crashes, t.droppedAtCrash))
	} else if t.crashes > 0 {
		notes = append(notes, fmt.Sprintf("%d consumer crashes, each followed by a replacement; the broker redelivers whatever a crashed consumer had not acked", t.crashes))
	}
	if t.leases > 0 {
		notes = append(notes, fmt.Sprintf("%d consumer instances stalled past their lease (a session timeout, a max.poll.interval, a consumer_timeout) and were replaced while still holding a delivery: the broker gave it to another instance, and the stalled one finished it without being able to ack", t.leases))
	}
	if t.ackUnconfirmed > 0 {
		notes = append(notes, fmt.Sprintf("%d acks were not confirmed by the broker in time (a double ack: the consumer waits for the broker's answer); the consumer knew, and acked again", t.ackUnconfirmed))
	}
	if c.Duplicates > 0 {
		notes = append(notes, fmt.Sprintf("%d intents had their effect applied more than once: the strategy did not recognise the redelivery", c.Duplicates))
	}
	if s.ackedAgain > 0 {
		notes = append(notes, fmt.Sprintf("%d of them were delivered again after the consumer had acked them (%s): %s", s.ackedAgain, DupAckedAgain, DupAckedAgain.Doc(t.broker)))
	}
	if c.OutOfOrder > 0 && !t.orderSubject {
		// One short line: in a scenario not about order, a paragraph of
		// hundreds of intents drowned its lesson (#42 item 6).
		notes = append(notes, fmt.Sprintf("%d intents applied out of publication order (out_of_order); this variant expects nothing of order", c.OutOfOrder))
	} else if c.OutOfOrder > 0 {
		notes = append(notes, fmt.Sprintf("%d intents had their effect applied after the effect of a later-published intent of the same account: the consumers applied the account's updates out of publication order (partitions read in parallel, a redelivery after the next update); a strategy that needs their order must refuse them (version-cas) or the producer must keep one account's updates on one partition", c.OutOfOrder))
	}
	if c.Rejected > 0 {
		notes = append(notes, fmt.Sprintf("%d intents were refused by the consumer and never applied (an out-of-order version, an illegal state transition, a poison message that fails every time): refused and reported, not silently lost", c.Rejected))
	}
	if c.Refused > 0 {
		notes = append(notes, fmt.Sprintf("%d intents were refused by the broker (a nack, or an error saying it did not take them) and never applied: the producer was told, so they are counted as refused, not lost", c.Refused))
	}
	return notes
}

// lossNotes say, per cause, how many intents were lost where and why.
func (t *tally) lossNotes(lost map[Cause]int) []string {
	var notes []string
	for _, cause := range lossCauses {
		n := lost[cause]
		if n == 0 {
			continue
		}
		note := fmt.Sprintf("%d intents lost %s (%s): %s", n, cause.Where(), cause, cause.Doc(t.broker))
		if cause == LostUndelivered && t.limits != "" {
			note += fmt.Sprintf("; the broker dropped them, silently, past its limits or in a restart of what it does not persist (%s)", t.limits)
		}
		notes = append(notes, note)
	}
	return notes
}

// unfinishedNotes say what was still on its way when the run ended and
// is not counted as lost: in flight at an interrupt, starved, never
// delivered, still looping.
func (t *tally) unfinishedNotes(c Counts, s intentSums) []string {
	var notes []string
	ended := "when the drain gave up"
	switch {
	case t.interrupted:
		ended = "when the run was interrupted"
	case t.drain == nil:
		ended = "when the run ended, before its drain"
	}
	if s.interrupted > 0 {
		notes = append(notes, fmt.Sprintf("%d intents were still on their way when the run was interrupted (in a consumer's hands, delivered and never acked, or written and not yet published): not counted as lost", s.interrupted))
	}
	if c.Starved > 0 {
		notes = append(notes, fmt.Sprintf("%d intents were starved: never delivered while %d poison messages looped ahead of them (each delivery fails and is requeued at the head of the queue, with no delivery limit, so the consumers' prefetch holds only them); still on the broker, not lost. Set a delivery limit, reject permanent failures, or raise the prefetch",
			c.Starved, len(t.drain.Intents)))
	}
	waiting := s.waiting
	if t.starved() {
		waiting = nil
	}
	if n := waiting[LostUndelivered]; n > 0 {
		notes = append(notes, fmt.Sprintf("%d acknowledged intents were still undelivered %s: not counted as lost", n, ended))
	}
	if n := waiting[LostUnconfirmed]; n > 0 {
		notes = append(notes, fmt.Sprintf("%d unconfirmed intents had not been delivered %s: not counted as lost", n, ended))
	}
	if len(s.stillLooping) > 0 {
		slices.Sort(s.stillLooping)
		notes = append(notes, fmt.Sprintf("%d intents were still looping on the broker %s (intents %s): each delivery went back unsettled (its processing failed, or its consumer crashed before the ack) and the broker gives it out again; not counted as lost, nor applied",
			len(s.stillLooping), ended, intentList(s.stillLooping)))
	}
	return notes
}

// drained reports whether the drain ended with nothing left on the broker.
func (t *tally) drained() bool { return t.drain != nil && t.drain.Drained }

// starved reports whether the drain ended with messages waiting behind
// looping poison messages: a finding, not an incomplete drain.
func (t *tally) starved() bool { return t.drain != nil && !t.drain.Drained && t.drain.Starved }

// Gap is the largest time between an intent's first and last delivery
// (or publish) in a variant: what a dedup window must outlast for what
// comes again to find the id remembered.
type Gap struct {
	D time.Duration `json:"ns"`
	// Intent is the intent it was measured on (0: no intent was
	// delivered, or published, twice).
	Intent int `json:"intent,omitempty"`
	// Window is the dedup window it is compared with.
	Window *Window `json:"window,omitempty"`
}

// Text says the redelivery gap for people, against the strategy's window
// when there is one: "max redelivery gap 48.2ms (intent 833, ...), longer
// than ttl 1ms: ...".
func (g Gap) Text() string {
	return g.text("redelivery", "delivered", "delivery",
		"a redelivery can come after the marker of its first delivery is gone, and apply again",
		"every redelivery came while the marker of its first delivery was there")
}

// RepublishText says the republish gap for people, against the broker's
// dedup window of publishes when there is one.
func (g Gap) RepublishText() string {
	return g.text("republish", "published", "publish",
		"a retry can come after the broker has forgotten the message id, and be stored again",
		"the broker still knew the message id of every retry, and dropped it")
}

func (g Gap) text(gap, twice, one, longer, within string) string {
	var out string
	if g.Intent == 0 {
		out = fmt.Sprintf("no intent was %s twice", twice)
	} else {
		out = fmt.Sprintf("max %s gap %s (intent %d, between its first and last %s)", gap, roundGap(g.D), g.Intent, one)
	}
	switch {
	case g.Window == nil:
	case g.Intent == 0:
		out += fmt.Sprintf(" (%s %s)", g.Window.Key, short(g.Window.D))
	case g.Outlasted():
		out += fmt.Sprintf(", longer than %s %s: %s", g.Window.Key, short(g.Window.D), longer)
	default:
		out += fmt.Sprintf(", within %s %s: %s", g.Window.Key, short(g.Window.D), within)
	}
	return out
}

// short writes a setting's duration as a scenario would: 1m, 1h.
func short(d time.Duration) string {
	s := d.String()
	s, _ = strings.CutSuffix(s, "m0s")
	if s != d.String() {
		s += "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// roundGap keeps a gap readable: microseconds below a second, else
// milliseconds.
func roundGap(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// Outlasted says whether the gap is longer than the window: something
// came again after its id was forgotten.
func (g Gap) Outlasted() bool { return g.Window != nil && g.D > g.Window.D }

// ExpectationResult is one checked expectation.
type ExpectationResult struct {
	Check  string `json:"check"` // e.g. "duplicates > 0"
	Passed bool   `json:"passed"`
	// Skipped: not judged, the run was interrupted before its end (its
	// counts are what was recorded until then); Passed is false.
	Skipped bool `json:"skipped,omitempty"`
	Actual  int  `json:"actual"`
}

// Verdict is the expectation's word in a report: PASS, FAIL, or SKIP for
// one not judged.
func (e ExpectationResult) Verdict() string {
	switch {
	case e.Skipped:
		return ExpectSkipped
	case e.Passed:
		return VerdictPass
	}
	return VerdictFail
}

// ExpectSkipped is the word for an expectation not judged: the run was
// interrupted before its end.
const ExpectSkipped = "SKIP"

// Variant is the judgement of one variant.
type Variant struct {
	Name     string `json:"name"`
	Strategy string `json:"strategy"`
	Passed   bool   `json:"passed"`
	Counts
	Expectations []ExpectationResult `json:"expectations"`
	// DeliveredQoS counts deliveries per QoS level they arrived with
	// (MQTT: the minimum of the publish and the subscription QoS).
	DeliveredQoS map[string]int `json:"delivered_qos,omitempty"`
	// LostByCause counts the lost intents by cause (a Cause: unconfirmed,
	// undelivered, unprocessed, ...); they add up to lost.
	LostByCause map[string]int `json:"lost_by_cause"`
	// MaxRedeliveryGap is the largest time between an intent's first and
	// last delivery, with the dedup window it is compared with. Timing:
	// it differs from run to run.
	MaxRedeliveryGap Gap `json:"max_redelivery_gap"`
	// MaxRepublishGap is the largest time between an intent's first and
	// last publish, with the broker's dedup window of publishes; nil when
	// no intent was published twice and the broker drops no republish.
	MaxRepublishGap *Gap `json:"max_republish_gap,omitempty"`
	// Varies lists the counts the scenario says may differ between runs
	// with the same seed, and why.
	Varies []Varies `json:"varies,omitempty"`
	// Legs says on which leg each duplicate and loss arose (MQTT).
	Legs *Legs `json:"legs,omitempty"`
	// Notes explain where duplicates and losses came from.
	Notes []string `json:"notes,omitempty"`
	// KilledPIDs lists the consumer processes a fault killed (process
	// variants), in the order they were killed.
	KilledPIDs []int `json:"killed_pids,omitempty"`
	// Invalid lists why this variant's experiment does not count (a fault
	// that never fired, an inconsistent store, an incomplete drain); an
	// invalid variant fails the run with exit code 3.
	Invalid []string `json:"invalid,omitempty"`
}

// Run is the judgement of one scenario run.
type Run struct {
	Meta
	Passed   bool      `json:"passed"`
	Variants []Variant `json:"variants"`
}

// Valid reports whether the run completed and every variant's experiment
// counts.
func (r Run) Valid() bool {
	if r.Incomplete != "" || r.Error != "" {
		return false
	}
	for _, v := range r.Variants {
		if len(v.Invalid) > 0 {
			return false
		}
	}
	return true
}

// The verdicts of a run: the word its exit code agrees with, worst first.
// VerdictInvalid is also what a report says when the scenario or the flags
// were invalid and nothing ran (exit code 2).
const (
	VerdictError      = "ERROR"      // the run could not start: exit code 3
	VerdictIncomplete = "INCOMPLETE" // the run was cut short: exit code 3
	VerdictInvalid    = "INVALID"    // an experiment that does not count: exit code 3
	VerdictFail       = "FAIL"       // an expectation did not hold: exit code 1
	VerdictPass       = "PASS"       // every expectation held: exit code 0
)

// Verdicts are the verdicts, worst first.
var Verdicts = []string{VerdictError, VerdictIncomplete, VerdictInvalid, VerdictFail, VerdictPass}

// Verdict is the run's verdict: ERROR for a run that could not start,
// INCOMPLETE for one cut short, INVALID for an experiment that does not
// count, else FAIL or PASS by the expectations.
func (r Run) Verdict() string {
	switch {
	case r.Error != "":
		return VerdictError
	case r.Incomplete != "":
		return VerdictIncomplete
	case !r.Valid():
		return VerdictInvalid
	case !r.Passed:
		return VerdictFail
	}
	return VerdictPass
}

// Worst is the worst verdict of runs (PASS for none).
func Worst(runs []Run) string {
	worst := len(Verdicts) - 1
	for _, r := range runs {
		worst = min(worst, slices.Index(Verdicts, r.Verdict()))
	}
	return Verdicts[worst]
}

// Judge counts every variant of plan from the history and the audits and
// checks the expectations. It reads nothing else.
func Judge(plan Plan, meta Meta, events iter.Seq2[history.Event, error], audits map[string]history.Audit) (Run, error) {
	run, _, err := judge(plan, meta, events, audits)
	return run, err
}

// judge is Judge, also returning each variant's tally (with the audit
// applied) for Inspect.
func judge(plan Plan, meta Meta, events iter.Seq2[history.Event, error], audits map[string]history.Audit) (Run, map[string]*tally, error) {
	tallies := make(map[string]*tally, len(plan.Variants))
	if meta.Error != "" {
		return Run{Meta: meta}, tallies, nil // nothing ran: nothing to count
	}
	for _, v := range plan.Variants {
		tallies[v.Name] = &tally{broker: plan.Broker}
	}
	for e, err := range events {
		if err != nil {
			return Run{}, nil, err
		}
		if t := tallies[e.Variant]; t != nil {
			t.add(&e)
		}
	}
	run := Run{Meta: meta, Passed: meta.Incomplete == ""}
	for _, v := range plan.Variants {
		t := tallies[v.Name]
		audit, haveAudit := audits[v.Name]
		t.noAudit = !haveAudit
		t.orderSubject = aboutOrder(v)
		counts, notes := t.counts(audit)
		res := Variant{Name: v.Name, Strategy: v.Strategy, Passed: true, Counts: counts, Notes: notes, KilledPIDs: t.killed,
			DeliveredQoS: t.deliveredQoS(), Legs: t.legs(), LostByCause: t.lostByCause(), Varies: v.Varies,
			MaxRedeliveryGap: Gap{D: t.redelivery.d, Intent: t.redelivery.intent, Window: v.Window}}
		if t.republish.intent != 0 || v.PublishWindow != nil {
			res.MaxRepublishGap = &Gap{D: t.republish.d, Intent: t.republish.intent, Window: v.PublishWindow}
		}
		res.Invalid = t.invalid(haveAudit, audit)
		for _, exp := range v.Expect {
			got, _ := counts.Get(exp.Count)
			// An interrupted run did not end: its counts are not judged
			// as if it had.
			ok := exp.Holds(got) && !t.interrupted
			res.Expectations = append(res.Expectations, ExpectationResult{
				Check: exp.Count + " " + exp.Text, Passed: ok, Skipped: t.interrupted, Actual: got,
			})
			res.Passed = res.Passed && ok
		}
		if len(res.Invalid) > 0 {
			res.Passed = false
		}
		run.Passed = run.Passed && res.Passed
		run.Variants = append(run.Variants, res)
	}
	return run, tallies, nil
}

// aboutOrder says whether order is v's subject: an expectation on
// out_of_order, or a strategy that refuses updates out of order. A
// varies: on it is not: it says the count moves, not that it teaches.
func aboutOrder(v plan.Variant) bool {
	if v.Strategy == string(catalog.VersionCAS) {
		return true
	}
	for _, e := range v.Expect {
		if e.Count == "out_of_order" {
			return true
		}
	}
	return false
}

// invalid lists why a variant's experiment does not count.
func (t *tally) invalid(haveAudit bool, audit history.Audit) []string {
	var out []string
	if !haveAudit {
		out = append(out, ErrNoAudit.Error())
	}
	if len(audit.BalanceMismatch) > 0 {
		out = append(out, fmt.Sprintf("%v: accounts %v", ErrInconsistent, audit.BalanceMismatch))
	}
	out = append(out, t.producerDisagrees(audit.Producer)...)
	if audit.Calls != nil {
		if recount := history.CallEffects(audit.Calls); !maps.Equal(recount, audit.Applied) {
			out = append(out, fmt.Sprintf("%v: recounted from their keys, the %d calls took effect %d times, the service says %d", ErrCallsDisagree, len(audit.Calls), sum(recount), sum(audit.Applied)))
		}
	}
	for _, name := range t.armed {
		if t.fired[name] == 0 && !t.interrupted { // the run may have been stopped before its turn
			out = append(out, fmt.Sprintf("%v: %s (raise messages or lower every/probability)", ErrFaultNeverFired, name))
		}
	}
	if t.claims != "" {
		out = append(out, fmt.Sprintf("%v: %s; the drain's end (drained or starved, with what it took for poison messages looping for good) rests on that list, so its counts are not final", ErrDrainClaims, t.claims))
	}
	if t.drain != nil && !t.drain.Drained && !t.starved() && !t.interrupted {
		why := t.drain.Reason
		if why == "" {
			why = "no progress"
		}
		out = append(out, fmt.Sprintf("%v (%s; %d messages still on the broker): its counts are not final", ErrIncomplete, why, t.drain.Backlog))
	}
	return out
}

func sum(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// lostByCause is t.lostBy keyed by name, never nil.
func (t *tally) lostByCause() map[string]int {
	out := make(map[string]int, len(t.lostBy))
	for c, n := range t.lostBy {
		out[string(c)] = n
	}
	return out
}

// VariesGroup is the counts of a variant that may differ between runs
// with one seed for the same reason: "lost (122 here), effects (178 here)".
type VariesGroup struct {
	Counts string
	Why    string
}

// VariesGroups groups v's varying counts by reason, in count order.
func (v Variant) VariesGroups() []VariesGroup {
	var out []VariesGroup
	at := map[string]int{}
	for _, vr := range v.Varies {
		n, _ := v.Counts.Get(vr.Count)
		c := fmt.Sprintf("%s (%d here)", vr.Count, n)
		if i, ok := at[vr.Why]; ok {
			out[i].Counts += ", " + c
			continue
		}
		at[vr.Why] = len(out)
		out = append(out, VariesGroup{Counts: c, Why: vr.Why})
	}
	return out
}

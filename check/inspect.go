package check

import (
	"cmp"
	"iter"
	"slices"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

// Verdict is what became of one intent's effect.
type Verdict string

// The verdicts of an intent.
const (
	OK        Verdict = "ok"        // applied once, or never had by the broker
	Duplicate Verdict = "duplicate" // applied more than once
	Lost      Verdict = "lost"      // handed to the producer, not refused, the effect never applied
)

// Cause says why an intent duplicated or was lost: the per-intent side of
// a variant's notes.
type Cause string

// The causes of duplicates and losses.
const (
	DupStoredTwice   Cause = "stored-twice"        // the broker held two copies (a producer's retry it did not drop)
	DupQoS2Resent    Cause = "qos2-resent"         // QoS 2: the publishing client re-sent a PUBLISH the broker had taken (MQTT-4.3.3-1)
	DupQoS2Redeliver Cause = "qos2-redelivered"    // QoS 2: the subscribing client delivered a re-sent PUBLISH again before PUBREL (MQTT-4.3.3-2)
	DupRedelivered   Cause = "redelivered"         // redelivered, and the strategy applied it again
	DupAckedAgain    Cause = "acked-redelivered"   // redelivered after the consumer had acked it (the broker had not applied the ack), and applied again
	DupStageRewrite  Cause = "stage-rewrite"       // a stage wrote it to its output twice (a crash or rebalance before its offset commit)
	DupAbortedRead   Cause = "aborted-read"        // read from an aborted transaction's record (read_uncommitted) and from the committed one
	LostSkipped      Cause = "skipped"             // skipped as already processed, effect never applied
	LostIDShared     Cause = "id-shared"           // skipped at its first delivery: another intent marked the same id
	LostUnprocessed  Cause = "unprocessed"         // delivered (or sent to the consumer and never handed out), never processed, never redelivered
	LostDeadLettered Cause = "dead-lettered"       // dead-lettered without the effect
	LostDLXDropped   Cause = "dead-letter-dropped" // rejected to the dead-letter exchange and never seen again: its target queue was missing or full
	LostUndelivered  Cause = "undelivered"         // confirmed, never delivered
	LostUnconfirmed  Cause = "unconfirmed"         // never confirmed, never delivered: not known to have reached the broker
	LostUnpublished  Cause = "unpublished"         // the producer application wrote its business row and never published the intent
	DupRelayed       Cause = "relayed-again"       // the outbox relay published it twice: it died after the publish, before marking the row sent
	DupRetained      Cause = "retained-again"      // MQTT: sent again from the broker's retained messages when the consumer subscribed again
)

// lossCauses lists the causes of losses, by where: before the broker (or
// unseen in it: nobody confirmed it), in the broker, in the consumer.
var lossCauses = []Cause{LostUnpublished, LostUnconfirmed, LostUndelivered, LostDLXDropped, LostDeadLettered, LostUnprocessed, LostSkipped, LostIDShared}

// Where says where an intent lost by this cause was lost: "in the
// broker", "in the consumer", or for one nobody confirmed "before the
// broker or unseen in it" (a QoS 0 publish may die in the client's buffer
// or be dropped by a broker with no subscriber online: the history cannot
// tell which); empty for a duplicate's cause.
func (c Cause) Where() string {
	switch c {
	case LostUnpublished:
		return "in the producer"
	case LostUnconfirmed:
		return "before the broker or unseen in it"
	case LostUndelivered, LostDeadLettered, LostDLXDropped:
		return "in the broker"
	case LostUnprocessed, LostSkipped, LostIDShared:
		return "in the consumer"
	}
	return ""
}

// Doc explains the cause in a sentence, in the words of the broker kind
// the run was on where the mechanism is the broker's own (how a publish
// is stored twice, how an acked message comes again).
func (c Cause) Doc(on catalog.BrokerKind) string {
	b, _ := catalog.LookupBroker(on)
	switch c {
	case DupQoS2Resent:
		return "stored twice although published and delivered at QoS 2: the publishing client sent the PUBLISH again after the broker had taken it (MQTT-4.3.3-1 forbids resending once PUBREC arrived): a client library's violation, on the publisher leg"
	case DupQoS2Redeliver:
		return "applied twice after the subscriber's PUBREC was lost at QoS 2: the client had taken the PUBLISH and sent PUBREC, then handed the broker's re-sent PUBLISH to the application again before PUBREL (MQTT-4.3.3-2 forbids it): a client library's violation, on the subscriber leg"
	case DupStoredTwice:
		return "the broker stored the intent twice (" + cmp.Or(b.StoredTwice, storedTwice) + ") and both copies were applied"
	case DupStageRewrite:
		return "the consume-transform-produce stage wrote the intent to its output twice (it crashed, or lost the partition in a rebalance, between its write and its offset commit) and both copies were applied"
	case DupAbortedRead:
		return "the consumer read the intent from a record of an aborted transaction (isolation read_uncommitted) and again from the committed one, and both were applied"
	case DupRedelivered:
		return "redelivered after the effect had applied, and the strategy did not recognise the redelivery"
	case DupAckedAgain:
		return "acked, but " + cmp.Or(b.AckedAgain, ackedAgain) + "; the broker delivered the message again and the strategy applied it again"
	case LostSkipped:
		return "skipped as already processed, but the effect never applied: the dedup marker was committed without the effect"
	case LostIDShared:
		return "skipped on its first delivery as already processed: another intent had marked the same message id (ids that collide, such as a content hash of equal content)"
	case LostUnprocessed:
		return "delivered but never processed and not redelivered: acked before processing (with autoAck, by the broker as it sent it: what it had sent the consumer and the consumer had not yet handed out counts too), then the consumer died"
	case LostDeadLettered:
		return "sent to the dead-letter queue without its effect applying"
	case LostDLXDropped:
		return "the consumer rejected it to the queue's dead-letter exchange (a permanent failure to the dead-letter queue, or a retry to the wait queue) and it never arrived anywhere: the target queue was missing (dead_letter_queue: false) or full (dead_letter_max_length with overflow reject-publish), and the broker dropped it. Dead-lettering is confirmed to nobody: the consumer's reject succeeded, the producer's confirm came long before (only a quorum queue with dead-letter-strategy at-least-once and overflow reject-publish keeps a message until its target confirms it)"
	case LostUndelivered:
		return "the broker had it (it confirmed it, or held it for an offline subscriber) but never delivered it: dropped past its limits, in a failover or in a restart of what it does not persist"
	case DupRetained:
		return "delivered again from the broker's retained messages when the consumer subscribed again (an MQTT broker sends a topic's retained message to every new subscription, flagged RETAIN), and the strategy applied it again"
	case DupRelayed:
		return "published twice by the outbox relay (it died after the broker confirmed the outbox row's publish and before it marked the row sent; the restarted relay found the row unsent) and both copies were applied: the consumer's inbox (dedup on the business id) is what absorbs a relay's duplicate"
	case LostUnpublished:
		return "the producer application committed its business row and died before it published (a dual write: no transaction spans the row and the publish), and nothing made it publish again: the row exists, the message was never sent"
	case LostUnconfirmed:
		return "handed to the producer, never confirmed and never delivered: not known to have reached the broker (at-most-once publishing such as MQTT QoS 0 or Kafka acks=0 loses what the client had buffered or in flight when it died or was cut off, or the broker dropped it unseen; or a publish whose outcome was unknown and was not retried), and nobody was told"
	}
	return string(c)
}

// What a stored-twice and an acked-redelivered intent's Doc say when the
// broker kind is not known.
const (
	storedTwice = "a producer's retry or resend of a publish the broker already had"
	ackedAgain  = "the broker had not applied the ack when the consumer went away"
)

// Why is Doc, said of one intent: for a loss, where it was lost first
// ("lost in the consumer: ...").
func (c Cause) Why(on catalog.BrokerKind) string {
	if w := c.Where(); w != "" {
		return "lost " + w + ": " + c.Doc(on)
	}
	return c.Doc(on)
}

// lossCause says why a lost intent was lost.
func (f *facts) lossCause() Cause {
	switch {
	case !f.has(published):
		return LostUnpublished
	case f.has(dlxPending):
		return LostDLXDropped
	case f.has(deadLettered):
		return LostDeadLettered
	case f.deliveries == 0 && f.has(droppedUnread):
		// The broker sent it and forgot it (autoAck); the client died
		// holding it: lost in the consumer, not the broker.
		return LostUnprocessed
	case f.deliveries == 0 && !f.reachedBroker():
		return LostUnconfirmed
	case f.deliveries == 0:
		return LostUndelivered
	case f.has(skippedFirst) && !f.has(cutFirst):
		return LostIDShared
	case f.has(skipped):
		return LostSkipped
	}
	return LostUnprocessed
}

// IntentVerdict is the judgement of one intent in one variant.
type IntentVerdict struct {
	Intent  int
	Verdict Verdict
	Cause   Cause // empty for OK
	Applied int   // effects applied, from the audit
}

// Inspection is a judged run that can also say which intents duplicated or
// were lost, and why. It keeps a few bytes per intent, as Judge does while
// it reads.
type Inspection struct {
	Run
	// End is the offset of the latest event in the history.
	End time.Duration
	// Broker is the run's broker kind, whose words Cause.Doc and Why use.
	Broker  catalog.BrokerKind
	tallies map[string]*tally
}

// Inspect judges the run as Judge does, in the same single pass, and keeps
// the per-intent facts for Intent and Anomalies.
func Inspect(plan Plan, meta Meta, events iter.Seq2[history.Event, error], audits map[string]history.Audit) (*Inspection, error) {
	var end time.Duration
	observed := func(yield func(history.Event, error) bool) {
		for e, err := range events {
			end = max(end, e.T)
			if !yield(e, err) {
				return
			}
		}
	}
	run, tallies, err := judge(plan, meta, observed, audits)
	if err != nil {
		return nil, err
	}
	return &Inspection{Run: run, End: end, Broker: plan.Broker, tallies: tallies}, nil
}

// Intent judges one intent of variant: the verdict the counts gave it.
func (in *Inspection) Intent(variant string, id int) IntentVerdict {
	t := in.tallies[variant]
	if t == nil {
		return IntentVerdict{Intent: id, Verdict: OK}
	}
	return t.verdict(id, t.get(id))
}

func (t *tally) verdict(id int, f *facts) IntentVerdict {
	v := IntentVerdict{Intent: id, Verdict: OK, Applied: int(f.applied)}
	switch {
	case f.has(published) && f.applied > 1:
		v.Verdict, v.Cause = Duplicate, DupRedelivered
		switch {
		case f.has(relayedAgain):
			v.Cause = DupRelayed
		case f.has(abortedSeen):
			v.Cause = DupAbortedRead
		case f.has(copies) && t.stage != nil:
			v.Cause = DupStageRewrite
		case f.has(copies) && t.onlyQoS2():
			v.Cause = DupQoS2Resent
		case f.has(copies):
			v.Cause = DupStoredTwice
		case t.recLost[id] && t.onlyQoS2() && (f.has(sameCopy) || f.has(flagged)):
			v.Cause = DupQoS2Redeliver
		case f.has(retainedAgain):
			v.Cause = DupRetained
		case f.ackedAgain():
			v.Cause = DupAckedAgain
		}
	default:
		// Not counted when it may still be on the broker: the drain gave up.
		if cause, ok := t.lossCause(f); ok {
			v.Verdict, v.Cause = Lost, cause
		}
	}
	return v
}

// Anomalies are the duplicated and lost intents of one variant.
type Anomalies struct {
	Variant string
	// ByCause counts every anomalous intent by cause.
	ByCause map[Cause]int
	// Sample holds, for each cause, its lowest intent ids, at most limit
	// of them: a deterministic sample.
	Sample map[Cause][]IntentVerdict
}

// Total is the number of anomalous intents.
func (a Anomalies) Total() int {
	n := 0
	for _, c := range a.ByCause {
		n += c
	}
	return n
}

// Anomalies lists the duplicated and lost intents of variant, keeping at
// most limit intents of each cause (the lowest ids). The counts in ByCause
// add up to the variant's duplicates plus lost.
func (in *Inspection) Anomalies(variant string, limit int) Anomalies {
	a := Anomalies{Variant: variant, ByCause: map[Cause]int{}, Sample: map[Cause][]IntentVerdict{}}
	t := in.tallies[variant]
	if t == nil {
		return a
	}
	var sparse []IntentVerdict
	t.each(func(id int, f *facts) {
		v := t.verdict(id, f)
		if v.Verdict == OK {
			return
		}
		if id > 0 && id < len(t.dense) {
			a.add(v, limit)
		} else {
			sparse = append(sparse, v) // map order: sorted below
		}
	})
	sortVerdicts(sparse)
	for _, v := range sparse {
		a.add(v, limit)
	}
	return a
}

func (a *Anomalies) add(v IntentVerdict, limit int) {
	a.ByCause[v.Cause]++
	if len(a.Sample[v.Cause]) < limit {
		a.Sample[v.Cause] = append(a.Sample[v.Cause], v)
	}
}

func sortVerdicts(vs []IntentVerdict) {
	slices.SortFunc(vs, func(a, b IntentVerdict) int { return cmp.Compare(a.Intent, b.Intent) })
}

// Causes lists every cause in the order reports show them: duplicates,
// then losses.
var Causes = []Cause{DupRedelivered, DupAckedAgain, DupStoredTwice, DupQoS2Resent, DupQoS2Redeliver, LostSkipped, LostIDShared, LostUnprocessed, LostDeadLettered, LostDLXDropped, LostUndelivered, LostUnconfirmed, DupStageRewrite, DupAbortedRead, DupRelayed, LostUnpublished, DupRetained}

// onlyQoS2 reports whether every delivery of the variant arrived at QoS 2.
func (t *tally) onlyQoS2() bool { return len(t.qos) == 1 && t.qos["2"] > 0 }

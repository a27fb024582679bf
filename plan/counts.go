package plan

// Counts are the per-variant numbers dqbench reports. All but Effects and
// FaultsInjected count intents. Every count is a row of Table, which the
// report, the JSON output, expectations and the schema read; how each is
// counted is the checker's (check/counts.go).
type Counts struct {
	Attempted      int `json:"attempted"`
	Acknowledged   int `json:"acknowledged"`
	Indeterminate  int `json:"indeterminate"`
	Delivered      int `json:"delivered"`
	Redelivered    int `json:"redelivered"`
	Effects        int `json:"effects"`
	Duplicates     int `json:"duplicates"`
	Lost           int `json:"lost"`
	Refused        int `json:"refused"`
	Rejected       int `json:"rejected"`
	OutOfOrder     int `json:"out_of_order"`
	Unexpected     int `json:"unexpected"`
	DeadLettered   int `json:"dead_lettered"`
	Starved        int `json:"starved"`
	FaultsInjected int `json:"faults_injected"`
	AbortedSeen    int `json:"aborted_seen"`
	AbortedWritten int `json:"aborted_written"`
}

// Count is one row of the count table.
type Count struct {
	// Name is the key in JSON output and in a variant's expect.
	Name string
	// Column is the report's column header.
	Column string
	// Doc says what is counted, for the schema and the docs.
	Doc string
	// field is where the count lives in Counts.
	field func(*Counts) *int
}

// Table is every count, in report order.
var Table = []Count{
	{
		Name: "attempted", Column: "attempted",
		Doc:   "Intents the producer tried to publish.",
		field: func(c *Counts) *int { return &c.Attempted },
	},
	{
		Name: "acknowledged", Column: "acked",
		Doc:   "Intents the broker confirmed.",
		field: func(c *Counts) *int { return &c.Acknowledged },
	},
	{
		Name: "indeterminate", Column: "indeterminate",
		Doc:   "Intents attempted but never confirmed: the outcome is unknown (timed out, connection closed, fire and forget).",
		field: func(c *Counts) *int { return &c.Indeterminate },
	},
	{
		Name: "delivered", Column: "delivered",
		Doc:   "Intents delivered to a consumer at least once.",
		field: func(c *Counts) *int { return &c.Delivered },
	},
	{
		Name: "redelivered", Column: "redelivered",
		Doc:   "Intents delivered more than once (a redelivery, or a second copy stored by the broker).",
		field: func(c *Counts) *int { return &c.Redelivered },
	},
	{
		Name: "effects", Column: "effects",
		Doc:   "Business effects applied, in total (ledger rows), for every intent.",
		field: func(c *Counts) *int { return &c.Effects },
	},
	{
		Name: "duplicates", Column: "duplicates",
		Doc:   "Intents whose effect applied more than once.",
		field: func(c *Counts) *int { return &c.Duplicates },
	},
	{
		Name: "lost", Column: "lost",
		Doc: "Intents handed to the producer, not refused by the broker, whose effect never applied after a complete drain: " +
			"at-most-once publishing (QoS 0, acks=0) that lost them before the broker confirmed anything counts too, " +
			"and so does an intent whose business row the producer application wrote and never published (producer.pattern dual-write), " +
			"and one the consumer rejected to the dead-letter exchange that never arrived anywhere (a missing or full dead-letter or wait queue: dead-lettering is confirmed to nobody). " +
			"Each has a cause saying where it was lost (lost_by_cause): before the broker, in the broker, in the consumer.",
		field: func(c *Counts) *int { return &c.Lost },
	},
	{
		Name: "refused", Column: "refused",
		Doc:   "Intents the broker definitely refused (a nack, or an error saying it did not take them) and that never applied: the producer was told, so not counted as lost.",
		field: func(c *Counts) *int { return &c.Refused },
	},
	{
		Name: "rejected", Column: "rejected",
		Doc:   "Intents the consumer refused as a permanent error (an out-of-order version, an illegal state transition, a poison message) whose effect never applied: reported, so not counted as lost; unless the broker then dropped the message it dead-lettered (a missing or full dead-letter queue): that counts as lost (dead-letter-dropped).",
		field: func(c *Counts) *int { return &c.Rejected },
	},
	{
		Name: "out_of_order", Column: "out of order",
		Doc: "Intents whose effect first applied after the effect of a later-published intent of the same account (the key whose updates must keep their order): " +
			"the consumers applied that account's updates in another order than the producer published them (partitions read in parallel, a redelivery after the next update). " +
			"From the order of the publish and effect events in the history; an intent never applied does not count, nor does a second application (a duplicate).",
		field: func(c *Counts) *int { return &c.OutOfOrder },
	},
	{
		Name: "unexpected", Column: "unexpected",
		Doc:   "Intents with effects that were never published.",
		field: func(c *Counts) *int { return &c.Unexpected },
	},
	{
		Name: "dead_lettered", Column: "dead-lettered",
		Doc:   "Intents sent to a dead-letter queue at least once.",
		field: func(c *Counts) *int { return &c.DeadLettered },
	},
	{
		Name: "starved", Column: "starved",
		Doc: "Intents never delivered because poison messages looped ahead of them (each delivery fails and is requeued, no delivery limit, the consumers' prefetch full of them) until the drain ended: " +
			"still on the broker, so not lost, and the run still counts.",
		field: func(c *Counts) *int { return &c.Starved },
	},
	{
		Name: "faults_injected", Column: "faults",
		Doc:   "Fault injections, in total (what one injection is depends on the fault; see docs/scenario.md).",
		field: func(c *Counts) *int { return &c.FaultsInjected },
	},
	{
		Name: "aborted_seen", Column: "aborted seen",
		Doc:   "Intents a consumer received from a record of an aborted transaction (a consume-transform-produce stage's output read with isolation read_uncommitted).",
		field: func(c *Counts) *int { return &c.AbortedSeen },
	},
	{
		Name: "aborted_written", Column: "aborted written",
		Doc:   "Intents a consume-transform-produce stage wrote to its output in a transaction that aborted: records a read_committed consumer never sees, a read_uncommitted one does (aborted_seen).",
		field: func(c *Counts) *int { return &c.AbortedWritten },
	},
}

// CountNames lists the count names in report order.
func CountNames() []string {
	out := make([]string, len(Table))
	for i, c := range Table {
		out[i] = c.Name
	}
	return out
}

// LookupCount returns the count named name.
func LookupCount(name string) (Count, bool) {
	for _, c := range Table {
		if c.Name == name {
			return c, true
		}
	}
	return Count{}, false
}

// Get returns the count named as in JSON (and in scenario expectations).
func (c Counts) Get(name string) (int, bool) {
	row, ok := LookupCount(name)
	if !ok {
		return 0, false
	}
	return *row.field(&c), true
}

// Value returns this row's count in c.
func (row Count) Value(c Counts) int { return *row.field(&c) }

// Add adds n to this row's count in c.
func (row Count) Add(c *Counts, n int) { *row.field(c) += n }

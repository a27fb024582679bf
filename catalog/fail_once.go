package catalog

// FailOnce is the fault of a transient failure: processing the chosen
// intents fails the first few times, then succeeds; what the consumer
// does with a failed delivery is its on_failure.
const FailOnce FaultType = "fail-once"

// FailOnceParams are fail-once's own parameters.
type FailOnceParams struct {
	At    CrashPoint `yaml:"at" json:"at" jsonschema:"required,description=Where processing fails: before-process (nothing written yet: a transient error)\\, a strategy's own point such as between-dedup-and-effect (its first write done)\\, or after-effect-before-ack (the effect written\\, a later step fails: a partial effect)."`
	Times int        `yaml:"times" json:"times,omitempty" jsonschema:"minimum=1,maximum=100,description=How many times processing of a chosen intent fails before it succeeds (default 1)."`
}

// Point is where the fault acts (PointParams).
func (p *FailOnceParams) Point() CrashPoint { return p.At }

// Defaults fills in what the scenario leaves out.
func (p *FailOnceParams) Defaults() {
	if p.Times == 0 {
		p.Times = 1
	}
}

// failOnce describes fail-once for catalog.Faults.
var failOnce = Fault{
	Type:      FailOnce,
	Doc:       "processing the chosen intent fails at a crash point the first times deliveries of it get there, then succeeds (a transient error: a timeout of a downstream call, a deadlock retried). What was written before the failure stays written. The consumer does with the failed delivery what its on_failure says: requeue hands it back and the broker delivers it again, reject hands it back for good (the broker dead-letters it), retry-queue rejects it to a wait queue that sends it back after retry_delay (RabbitMQ), retry-in-process runs the processing again at once without the broker. A failure after the effect (after-effect-before-ack) or after a strategy's first write (between-dedup-and-effect) repeats what was written unless the strategy recognises it",
	Injection: "one failed processing",
	NewParams: func() any { return new(FailOnceParams) },
	Available: func(Where) string { return "" },
}

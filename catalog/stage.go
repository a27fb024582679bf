package catalog

// Isolation is which records a Kafka consumer reads of a topic that
// transactions write to.
type Isolation string

// Kafka isolation levels.
const (
	// ReadUncommitted: every record, also those of open and aborted
	// transactions (Kafka's default).
	ReadUncommitted Isolation = "read_uncommitted"
	// ReadCommitted: only records of committed transactions, up to the
	// last stable offset.
	ReadCommitted Isolation = "read_committed"
)

// Isolations lists the isolation levels.
var Isolations = []Isolation{ReadUncommitted, ReadCommitted}

// Allowed lists the valid values, for strict decoding and the schema.
func (Isolation) Allowed() []string { return Strings(Isolations) }

// StageCrash is where transform-crash kills a stage instance: after its
// batch is written to the output topic (flushed), before the input offsets
// are committed (before the transaction commits, with transactions).
const StageCrash CrashPoint = "before-commit"

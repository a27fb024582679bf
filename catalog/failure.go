package catalog

// FailureMode is what a consumer does with a delivery whose processing
// failed (a poison message).
type FailureMode string

// The failure modes.
const (
	// FailRequeue hands the delivery back to be delivered again (AMQP
	// basic.nack with requeue): right for a transient failure; a message
	// that fails every time loops unless the queue has a delivery limit.
	FailRequeue FailureMode = "requeue"
	// FailReject refuses it for good (basic.reject without requeue): the
	// broker dead-letters it at once.
	FailReject FailureMode = "reject"
)

// FailureModes lists the failure modes.
var FailureModes = []FailureMode{FailRequeue, FailReject}

// Allowed lists the valid values, for strict decoding and the schema.
func (FailureMode) Allowed() []string { return Strings(FailureModes) }

package history

// Audit is the final state of one variant's business store: how many times
// each intent's effect applied, and whether the balances agree with the
// ledger. With the history it is the checker's only input.
type Audit struct {
	// Applied maps intent to the number of its effects the final state
	// shows: ledger rows (increment, create), entries rows (append), 1 for
	// a row that holds its value, exists or is gone (set, upsert, delete:
	// applying twice leaves what applying once does), calls the external
	// service took effect on (call, call-with-key; see Calls).
	Applied map[int]int `json:"applied"`
	// BalanceMismatch lists accounts whose balance is not the sum of their
	// ledger rows; empty when the store is consistent.
	BalanceMismatch []int `json:"balance_mismatch,omitempty"`
	// Calls is every call the external service received, in the order it
	// received them (call and call-with-key effects only).
	Calls []Call `json:"calls,omitempty"`
	// Producer is the final state of the producer application's own store
	// (producer.pattern dual-write or outbox); nil without one.
	Producer *ProducerAudit `json:"producer,omitempty"`
}

// ProducerAudit is the final state of the producer application's store,
// per intent: which business rows it holds, and, with the outbox, which
// outbox rows and which of them the relay marked sent. Each list is in
// ascending intent order.
type ProducerAudit struct {
	// Rows are the intents whose business row (orders) is committed.
	Rows []int `json:"rows"`
	// Outbox are the intents with an outbox row (pattern outbox).
	Outbox []int `json:"outbox,omitempty"`
	// Sent are the outbox rows the relay marked sent.
	Sent []int `json:"sent,omitempty"`
}

// Call is one call the external service received.
type Call struct {
	Intent int `json:"intent"`
	// Key is the call's Idempotency-Key header; "" without one.
	Key string `json:"key,omitempty"`
	// Replayed: the key was seen before, so the service answered with the
	// first call's response and took no effect.
	Replayed bool `json:"replayed,omitempty"`
}

// CallEffects recounts, from the calls alone, the effects the service
// took per intent: a call without a key takes effect, a call with a key
// only when it is the first with that key. A service that honours its
// keys marks exactly the others Replayed.
func CallEffects(calls []Call) map[int]int {
	out := map[int]int{}
	seen := map[string]bool{}
	for _, c := range calls {
		if c.Key != "" {
			if seen[c.Key] {
				continue
			}
			seen[c.Key] = true
		}
		out[c.Intent]++
	}
	return out
}

// Accounts is how many accounts the business effects spread over.
const Accounts = 16

// Account is the account intent's effect updates: intents take turns over
// the accounts. The producer writes it into each message, and the checker
// orders effects per account by the same rule (out_of_order), so it is a
// fact of every history without a field in every event.
func Account(intent int) int { return intent % Accounts }

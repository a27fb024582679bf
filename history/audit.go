package history

// Audit is the final state of one variant's business store: how many times
// each intent's effect applied, and whether the balances agree with the
// ledger. With the history it is the checker's only input.
type Audit struct {
	// Applied maps intent to the number of ledger rows it has.
	Applied map[int]int `json:"applied"`
	// BalanceMismatch lists accounts whose balance is not the sum of their
	// ledger rows; empty when the store is consistent.
	BalanceMismatch []int `json:"balance_mismatch,omitempty"`
}

// Accounts is how many accounts the business effects spread over.
const Accounts = 16

// Account is the account intent's effect updates: intents take turns over
// the accounts. The producer writes it into each message, and the checker
// orders effects per account by the same rule (out_of_order), so it is a
// fact of every history without a field in every event.
func Account(intent int) int { return intent % Accounts }

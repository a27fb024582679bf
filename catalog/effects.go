package catalog

// EffectKind is the shape of the business effect a consumer applies: what
// it writes, so what applying it twice leaves behind.
type EffectKind string

// The effect kinds.
const (
	// Increment adds the amount to an account balance: no row of its own.
	Increment EffectKind = "increment"
	// Create inserts an order row keyed by the business id (unique-key).
	Create EffectKind = "create"
	// Set writes an absolute value into the intent's own existing row.
	Set EffectKind = "set"
	// Upsert inserts the intent's row, or overwrites it with the same value.
	Upsert EffectKind = "upsert"
	// Delete deletes the intent's own existing row.
	Delete EffectKind = "delete"
	// Append inserts a row per application, with no key (a plain INSERT).
	Append EffectKind = "append"
	// Call calls an external HTTP service that has an effect per call.
	Call EffectKind = "call"
	// CallWithKey calls it with an Idempotency-Key header (the message
	// id), which the service honours.
	CallWithKey EffectKind = "call-with-key"
)

// Effect describes one effect kind.
type Effect struct {
	Kind EffectKind
	// Doc is what the effect does (Markdown), for docs/scenario.md.
	Doc string
	// Counted is what the audit counts as the intent's effects (Markdown).
	Counted string
	// Idempotent: applying the effect twice leaves what applying it once
	// does, so a redelivery cannot duplicate it whatever the strategy.
	Idempotent bool
	// Only names the one strategy the kind works with; "" for all.
	Only StrategyName
}

// Effects lists the effect kinds, in the order docs list them. Each is
// implemented in store/ (store.Where.Effect).
var Effects = []Effect{
	{
		Kind:    Increment,
		Doc:     "`UPDATE accounts SET balance = balance + amount` and a ledger row (`intent, account, amount`)",
		Counted: "its ledger rows (and every balance is checked against its ledger)",
	},
	{
		Kind:    Create,
		Doc:     "`unique-key` only: `INSERT INTO orders (id, ...) ... ON CONFLICT DO NOTHING` with the business id as the key, then as `increment`",
		Counted: "its ledger rows",
		Only:    UniqueKey,
	},
	{
		Kind:       Set,
		Doc:        "`UPDATE records SET value = amount WHERE id = intent`: every intent has a row of its own, created with value 0 before the run",
		Counted:    "1 if its row holds a value (amounts are 1 to 100)",
		Idempotent: true,
	},
	{
		Kind:       Upsert,
		Doc:        "`INSERT INTO records (id, value) VALUES (intent, amount) ON CONFLICT (id) DO UPDATE SET value = excluded.value`",
		Counted:    "1 if its row exists",
		Idempotent: true,
	},
	{
		Kind:       Delete,
		Doc:        "`DELETE FROM records WHERE id = intent`: every intent's row exists before the run",
		Counted:    "1 if its row is gone",
		Idempotent: true,
	},
	{
		Kind:    Append,
		Doc:     "`INSERT INTO entries (intent, account, amount)`: a plain insert, no key (a ledger, an event log, an email sent)",
		Counted: "its `entries` rows",
	},
	{
		Kind:    Call,
		Doc:     "`POST /payments` to an HTTP service dqbench starts for the variant on 127.0.0.1 (a port the system picks), which takes effect (a payment) on every call",
		Counted: "the calls the service took effect on",
	},
	{
		Kind:       CallWithKey,
		Doc:        "the same call with an `Idempotency-Key` header, the message id (see [Message ids](#message-ids)): the service takes effect on the first call with a key; a later call with it gets the first call's response (the same payment number) and takes no effect",
		Counted:    "the calls the service took effect on",
		Idempotent: true,
	},
}

// LookupEffect returns the effect kind k.
func LookupEffect(k EffectKind) (Effect, bool) {
	for _, e := range Effects {
		if e.Kind == k {
			return e, true
		}
	}
	return Effect{}, false
}

// Allowed lists the valid values, for strict decoding and the schema.
func (EffectKind) Allowed() []string {
	out := make([]string, len(Effects))
	for i, e := range Effects {
		out[i] = string(e.Kind)
	}
	return out
}

// DefaultEffect is the effect a variant with strategy s gets when it names
// none: create for unique-key (its key needs a row of its own), increment
// for the others.
func DefaultEffect(s StrategyName) EffectKind {
	if s == UniqueKey {
		return Create
	}
	return Increment
}

// IsCall reports whether the effect calls the external HTTP service.
func (k EffectKind) IsCall() bool { return k == Call || k == CallWithKey }

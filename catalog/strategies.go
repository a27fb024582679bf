package catalog

// StrategyName names a consumer idempotency strategy.
type StrategyName string

// The strategies' names.
const (
	NoStrategy      StrategyName = "none"
	DedupTable      StrategyName = "dedup-table"
	DedupTableSplit StrategyName = "dedup-table-split"
	UniqueKey       StrategyName = "unique-key"
	StateMachine    StrategyName = "state-machine"
	VersionCAS      StrategyName = "version-cas"
	// ConditionalUpdate withdraws while the balance covers the amount.
	ConditionalUpdate StrategyName = "conditional-update"
	// ValueCAS compares the value itself, not a version: ABA.
	ValueCAS     StrategyName = "value-cas"
	CheckThenAct StrategyName = "check-then-act"
	RedisSetNX   StrategyName = "redis-setnx"
)

// Strategy describes one consumer idempotency strategy.
type Strategy struct {
	Name StrategyName
	// Doc is one line for docs, the schema and --help.
	Doc string
	// CrashPoints are the strategy's own crash points, besides the loop's.
	CrashPoints []CrashPoint
	// NewParams returns a pointer to a zero value of the strategy's own
	// settings (variant keys besides name, strategy, ...), or nil when it
	// takes none. A settings type may have a Defaults() method.
	NewParams func() any
	// NeedsRedis: the strategy keeps its markers in Redis.
	NeedsRedis bool
}

// ConditionalParams are conditional-update's own settings.
type ConditionalParams struct {
	Balance int `yaml:"balance" json:"balance,omitempty" jsonschema:"minimum=1,maximum=1000000000,description=Opening balance of each of the 16 accounts' wallets (default 1000000: enough for every withdrawal of the run\\, and for its redeliveries)."`
}

// Defaults fills in what the scenario leaves out.
func (p *ConditionalParams) Defaults() {
	if p.Balance == 0 {
		p.Balance = 1_000_000
	}
}

// DedupTableParams are dedup-table's own settings.
type DedupTableParams struct {
	Retention Duration `yaml:"retention" json:"retention,omitempty" jsonschema:"description=Delete dedup rows older than this before each insert (default: keep them forever); a redelivery arriving later is applied again."`
}

// DedupWindow is a strategy's settings that forget a message id after a
// while: the report compares the window with the variant's longest
// redelivery gap.
type DedupWindow interface {
	// DedupWindow returns the setting's key and its duration, 0 when the
	// ids are kept for good.
	DedupWindow() (key string, d Duration)
}

// PublishDedupWindow is a broker kind's settings whose broker drops a
// publish carrying a message id it has seen within a window (NATS
// JetStream's duplicate_window): the report compares the window with the
// variant's longest gap between an intent's first and last publish.
type PublishDedupWindow interface {
	// PublishDedupWindow returns the setting's key and its duration, 0
	// when the broker drops no republish.
	PublishDedupWindow() (key string, d Duration)
}

// DedupWindow is the retention: rows older than it are deleted.
func (p *DedupTableParams) DedupWindow() (string, Duration) { return "retention", p.Retention }

// DedupWindow is the Redis marker's TTL.
func (p *RedisSetNXParams) DedupWindow() (string, Duration) { return "ttl", p.TTL }

// RedisSetNXParams are redis-setnx's own settings.
type RedisSetNXParams struct {
	TTL Duration `yaml:"ttl" json:"ttl,omitempty" jsonschema:"description=Expiry of each Redis marker (SET key NX PX ttl; default 1m); a redelivery after it expires is applied again."`
}

// Defaults fills in what the scenario leaves out.
func (p *RedisSetNXParams) Defaults() {
	if p.TTL == 0 {
		p.TTL = Duration(60e9)
	}
}

// The strategies, in the order docs list them. Each has an implementation
// in strategy/ under the same name.
var Strategies = []Strategy{
	{
		Name: NoStrategy,
		Doc:  "apply the effect on every delivery (no idempotency)",
	},
	{
		Name:      DedupTable,
		Doc:       "dedup row and business update in one transaction; a conflict means already done",
		NewParams: func() any { return new(DedupTableParams) },
	},
	{
		Name:        DedupTableSplit,
		Doc:         "dedup row committed in its own transaction before the business update (fake idempotency)",
		CrashPoints: []CrashPoint{BetweenDedupAndEffect},
	},
	{
		Name: UniqueKey,
		Doc:  "the business row's primary key is the business id; a conflict means already done (only a create-type effect has such a row)",
	},
	{
		Name: StateMachine,
		Doc:  "UPDATE orders SET status = 'PAID' WHERE id = ? AND status = 'PENDING'; 0 rows: already paid, or an illegal transition (rejected)",
	},
	{
		Name: VersionCAS,
		Doc:  "UPDATE ... SET version = version + 1 WHERE id = ? AND version = ? with the expected version from the message; an earlier version is already done, a later one is rejected (out of order)",
	},
	{
		Name: ValueCAS,
		Doc:  "UPDATE wallets SET balance = ? WHERE account = ? AND balance = ? with the balance before the update, from the message, in place of a version: the balance goes back and forth (A, B, A), so a stale redelivery finds the value it expects (ABA) and applies again",
	},
	{
		Name:      ConditionalUpdate,
		Doc:       "UPDATE wallets SET balance = balance - amount WHERE account = ? AND balance >= amount: a business precondition, not an idempotency guard; 0 rows: insufficient funds, rejected",
		NewParams: func() any { return new(ConditionalParams) },
	},
	{
		Name:        CheckThenAct,
		Doc:         "SELECT \"processed?\", then apply and mark in another transaction, with no lock and no constraint: two instances handling one intent at once both apply it",
		CrashPoints: []CrashPoint{BetweenCheckAndAct},
	},
	{
		Name:        RedisSetNX,
		Doc:         "SET key NX PX ttl in Redis before processing, not atomic with the business write: a crash between loses the effect, an expired key lets a redelivery apply it again",
		CrashPoints: []CrashPoint{BetweenSetnxAndEffect},
		NewParams:   func() any { return new(RedisSetNXParams) },
		NeedsRedis:  true,
	},
}

// LookupStrategy returns the strategy named name.
func LookupStrategy(name StrategyName) (Strategy, bool) {
	for _, s := range Strategies {
		if s.Name == name {
			return s, true
		}
	}
	return Strategy{}, false
}

// StrategyNames lists the strategy names.
func StrategyNames() []string {
	out := make([]string, len(Strategies))
	for i, s := range Strategies {
		out[i] = string(s.Name)
	}
	return out
}

// HasPoint reports whether a consumer using s has crash point p.
func (s Strategy) HasPoint(p CrashPoint) bool {
	for _, lp := range LoopPoints {
		if lp == p {
			return true
		}
	}
	for _, sp := range s.CrashPoints {
		if sp == p {
			return true
		}
	}
	return false
}

// IDSource is where the message id a strategy deduplicates on comes from.
type IDSource string

// The message-id sources.
const (
	// BusinessID is the intent's business id: the same on every send.
	BusinessID IDSource = "business"
	// PerSendUUID is a new id on every publish attempt: an application
	// resend escapes deduplication.
	PerSendUUID IDSource = "per-send-uuid"
	// ContentHash is a hash of the business content (account, amount):
	// two distinct intents with equal content get one id.
	ContentHash IDSource = "content-hash"
	// DeliveryTag is the broker's own tag of the delivery, what a
	// consumer reaches for first: RabbitMQ's delivery tag (numbered per
	// channel, from 1 again on a new one), MQTT's packet identifier (reused
	// once acked), NATS's consumer sequence (new on every delivery, a
	// redelivery included).
	DeliveryTag IDSource = "delivery-tag"
	// Offset is where the broker stores the message: Kafka's
	// partition@offset, NATS's stream sequence. The same for every
	// delivery of one stored copy, a new one for a copy stored again.
	Offset IDSource = "offset"
)

// IDSources lists the message-id sources.
var IDSources = []IDSource{BusinessID, PerSendUUID, ContentHash, DeliveryTag, Offset}

// FromDelivery reports whether the id comes from the delivery (the broker's
// tag or position) rather than from what the producer wrote.
func (s IDSource) FromDelivery() bool { return s == DeliveryTag || s == Offset }

// Kinds lists the broker kinds that give the id source; nil for all.
func (s IDSource) Kinds() []BrokerKind {
	switch s {
	case DeliveryTag:
		return []BrokerKind{RabbitMQ, MQTT, NATS}
	case Offset:
		return []BrokerKind{Kafka, NATS}
	}
	return nil
}

// Allowed lists the valid values, for strict decoding and the schema.
func (IDSource) Allowed() []string { return Strings(IDSources) }

package catalog

import "time"

// KafkaSettings are the settings of kind kafka: the broker keys written
// beside kind (Partitions, Brokers, TransactionVersion), and the Kafka-only producer and
// consumer keys of one variant (ForVariant).
type KafkaSettings struct {
	Partitions int `yaml:"partitions" json:"partitions,omitempty" jsonschema:"minimum=1,maximum=1000,description=Partitions of each variant's topic (default 1)."`
	Brokers    int `yaml:"brokers" json:"brokers,omitempty" jsonschema:"minimum=1,maximum=9,description=Brokers of the embedded cluster (kfake; default 1; leader-move needs at least 2) or nodes of the managed one (a real Apache Kafka in KRaft mode: 1 (default) or 3\\, every topic replicated to all of them\\, min.insync.replicas 2 of 3). Not with mode: external."`
	// ReplicaLag makes the managed cluster's followers fetch at most this
	// often.
	ReplicaLag Duration `yaml:"replica_lag" json:"replica_lag,omitempty" jsonschema:"description=How long the managed cluster's followers may wait before they fetch what their leader appended (replica.fetch.wait.max.ms\\, with replica.fetch.min.bytes 1 MiB so that they do wait): a follower that lags as a busy or distant one does. acks: leader (acks=1) loses what the leader had acknowledged and its followers had not fetched when it dies; acks: all waits for them\\, so each of its publishes takes up to this long. Default: Kafka's (a follower fetches as soon as there is something). mode: managed only\\, at most 5s."`
	// TransactionVersion is the managed cluster's transaction.version
	// feature.
	TransactionVersion int `yaml:"transaction_version" json:"transaction_version,omitempty" jsonschema:"enum=1,enum=2,description=The managed Kafka's transaction.version feature\\, set when its storage is formatted: 2 (Kafka 4.x's default: KIP-890 part 2\\, the producer epoch bumped at every transaction's end) or 1 (the protocol before it). mode: managed only."`
	// The variant's producer client and consumer isolation (empty in the
	// broker's settings).
	KafkaProducer `yaml:"-" json:"-"`
	KafkaConsumer `yaml:"-" json:"-"`
	// TLS and a SASL login on an external cluster (tls:, auth:).
	Security `yaml:",inline"`
}

// Defaults fills in what the scenario leaves out.
func (s *KafkaSettings) Defaults() {
	if s.Partitions == 0 {
		s.Partitions = 1
	}
}

// KafkaOverrides are the Kafka settings one variant may change (kafka: in
// a variant), so one run can compare one partition with several.
type KafkaOverrides struct {
	Partitions int `yaml:"partitions" json:"partitions,omitempty" jsonschema:"minimum=1,maximum=1000,description=Partitions of this variant's topic (overrides the broker's partitions)."`
}

// ForVariant returns a copy of s with the variant's kafka overrides and its
// Kafka producer and consumer keys.
func (s KafkaSettings) ForVariant(v VariantKeys) any {
	if o := v.Overrides.Kafka; o != nil {
		setIfNonZero(&s.Partitions, o.Partitions)
	}
	s.KafkaProducer = v.Producer.KafkaProducer
	s.KafkaConsumer = v.Consumer.KafkaConsumer
	return &s
}

// KafkaProducer are the producer keys only kind kafka takes.
type KafkaProducer struct {
	Client Client `yaml:"client" json:"client,omitempty" jsonschema:"description=Kafka client library of the producer: franz-go (default) or kafka-go (segmentio/kafka-go: no idempotent producer and no transactions\\, so it needs idempotent: false)."`
	// TransactionalID makes the producer transactional: each batch of
	// publishes is one transaction, and a restarted producer client
	// (producer-crash) comes back with the same id.
	TransactionalID string `yaml:"transactional_id" json:"transactional_id,omitempty" jsonschema:"description=Kafka transactional producer: each batch of publishes is committed in one transaction under this transactional id (dqbench adds the variant's topic\\, so variants do not fence each other); a restarted producer client reuses it\\, fencing the old one. Needs idempotent: true and client: franz-go; pair it with consumer isolation: read_committed."`
}

// With returns p overridden by what o sets (a variant's producer).
func (p KafkaProducer) With(o KafkaProducer) KafkaProducer {
	setIfNonZero(&p.Client, o.Client)
	setIfNonZero(&p.TransactionalID, o.TransactionalID)
	return p
}

// KafkaConsumer are the consumer keys only kind kafka takes.
type KafkaConsumer struct {
	Isolation Isolation `yaml:"isolation" json:"isolation,omitempty" jsonschema:"description=Which records a Kafka consumer reads: read_uncommitted (Kafka's default: also records of aborted transactions) or read_committed (only committed ones); kafka only."`
	// Commit, AutoCommitInterval and Processing: who commits the
	// consumer's offsets, and whether it processes a poll's records
	// before it polls again.
	Commit             Commit     `yaml:"commit" json:"commit,omitempty" jsonschema:"description=Who commits a Kafka consumer's offsets: manual (default: dqbench commits each record as consumer ack says) or auto (the client's auto-commit\\, kgo's default: every auto_commit_interval it commits the offsets of the records returned by the polls before the latest one\\, whatever the application did with them; consumer ack is then not used); kafka only."`
	AutoCommitInterval Duration   `yaml:"auto_commit_interval" json:"auto_commit_interval,omitempty" jsonschema:"description=With commit: auto\\, how often the client commits (kgo's AutoCommitInterval; default 5s\\, Kafka's auto.commit.interval.ms); from 100ms (kgo's least) to 1m."`
	Processing         Processing `yaml:"processing" json:"processing,omitempty" jsonschema:"description=With commit: auto\\, how the application processes what it polls: sync (default: every record of a poll before it polls again\\, so auto-commit commits only processed records) or async (a poller hands each poll to a worker goroutine through a queue and polls again at once: auto-commit commits records the worker has not processed yet\\, and a crash loses them)."`
	ProcessingTime     Duration   `yaml:"processing_time" json:"processing_time,omitempty" jsonschema:"description=How long the consumer application works on each record before its strategy applies the effect (a sleep; default 0): a worker slower than the poller\\, the reason an application hands its polls to a worker; at most 1s."`
}

// MaxProcessingTime bounds processing_time.
const MaxProcessingTime = Duration(time.Second)

// With returns c overridden by what o sets (a variant's consumer).
func (c KafkaConsumer) With(o KafkaConsumer) KafkaConsumer {
	setIfNonZero(&c.ProcessingTime, o.ProcessingTime)
	setIfNonZero(&c.Isolation, o.Isolation)
	setIfNonZero(&c.Commit, o.Commit)
	setIfNonZero(&c.AutoCommitInterval, o.AutoCommitInterval)
	setIfNonZero(&c.Processing, o.Processing)
	return c
}

// AutoCommits reports whether the client commits by itself (commit: auto).
func (c KafkaConsumer) AutoCommits() bool { return c.Commit == CommitAuto }

// Commit is who commits a Kafka consumer's offsets.
type Commit string

// Kafka commit modes.
const (
	// CommitManual: dqbench commits each record, before or after
	// processing it (consumer ack).
	CommitManual Commit = "manual"
	// CommitAuto: the client's auto-commit (kgo's default): on an
	// interval, the offsets of the records returned by the polls before
	// the latest one; nothing on a crash.
	CommitAuto Commit = "auto"
)

// Commits lists the commit modes.
var Commits = []Commit{CommitManual, CommitAuto}

// Allowed lists the valid values, for strict decoding and the schema.
func (Commit) Allowed() []string { return Strings(Commits) }

// DefaultAutoCommitInterval is kgo's (and Kafka's
// auto.commit.interval.ms).
const DefaultAutoCommitInterval = Duration(5 * time.Second)

// MinAutoCommitInterval is the least auto_commit_interval kgo takes.
const MinAutoCommitInterval = Duration(100 * time.Millisecond)

// MaxAutoCommitInterval bounds auto_commit_interval: a commit must come
// within a run's drain.
const MaxAutoCommitInterval = Duration(time.Minute)

// Processing is how a consumer application processes what it polls.
type Processing string

// Processing modes.
const (
	// ProcessSync: every record of a poll, then the next poll.
	ProcessSync Processing = "sync"
	// ProcessAsync: a poller queues each poll's records for a worker
	// goroutine and polls again at once.
	ProcessAsync Processing = "async"
)

// Processings lists the processing modes.
var Processings = []Processing{ProcessSync, ProcessAsync}

// Allowed lists the valid values, for strict decoding and the schema.
func (Processing) Allowed() []string { return Strings(Processings) }

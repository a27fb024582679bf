package catalog

// BrokerKind names a kind of broker.
type BrokerKind string

// The broker kinds.
const Kafka BrokerKind = "kafka"

// Broker describes one broker kind.
type Broker struct {
	Kind BrokerKind
	Doc  string
	// Modes are the modes this build supports for the kind.
	Modes []Mode
	// ExampleAddress is shown in messages about addresses.
	ExampleAddress string
	// NewSettings returns a pointer to a zero value of the kind's own
	// settings (the broker keys besides kind, mode and addresses). A
	// settings type may have a Defaults() method, called after decoding.
	NewSettings func() any
}

// KafkaSettings are the broker settings of kind kafka.
type KafkaSettings struct {
	Partitions int `yaml:"partitions" json:"partitions,omitempty" jsonschema:"minimum=1,maximum=1000,description=Partitions of each variant's topic (default 1)."`
}

// Defaults fills in what the scenario leaves out.
func (s *KafkaSettings) Defaults() {
	if s.Partitions == 0 {
		s.Partitions = 1
	}
}

// Brokers lists every broker kind. Each has an adapter in brokers/, wired
// in brokers/all.
var Brokers = []Broker{
	{
		Kind:           Kafka,
		Doc:            "Kafka: franz-go's kfake in-process (embedded) or a real cluster (external), with the kgo client",
		Modes:          []Mode{Embedded, External},
		ExampleAddress: "127.0.0.1:9092",
		NewSettings:    func() any { return new(KafkaSettings) },
	},
}

// LookupBroker returns the broker kind k.
func LookupBroker(k BrokerKind) (Broker, bool) {
	for _, b := range Brokers {
		if b.Kind == k {
			return b, true
		}
	}
	return Broker{}, false
}

// Allowed lists the valid values, for strict decoding and the schema.
func (BrokerKind) Allowed() []string {
	out := make([]string, len(Brokers))
	for i, b := range Brokers {
		out[i] = string(b.Kind)
	}
	return out
}

package catalog

// Client is the Kafka client library a variant's producer publishes with.
type Client string

// Kafka producer client libraries.
const (
	// FranzGo is github.com/twmb/franz-go's kgo: idempotent producer,
	// transactions.
	FranzGo Client = "franz-go"
	// KafkaGo is github.com/segmentio/kafka-go's Writer: no idempotent
	// producer and no transactions (it always sends producer id -1), so a
	// retry after a lost response stores the record again.
	KafkaGo Client = "kafka-go"
)

// Clients lists the Kafka producer clients.
var Clients = []Client{FranzGo, KafkaGo}

// Allowed lists the valid values, for strict decoding and the schema.
func (Client) Allowed() []string { return Strings(Clients) }

// KafkaGoLacks says why kafka-go cannot carry idempotence or transactions.
const KafkaGoLacks = "kafka-go has no idempotent producer and no transactions (its writer always sends producer id -1)"

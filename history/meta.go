package history

import "time"

// Meta is what a run records about itself besides the history: the
// runner writes it (meta.json in a saved run) and the checker reads it.
type Meta struct {
	Scenario string        `json:"scenario"`
	Seed     int64         `json:"seed"`
	Messages int           `json:"messages"`
	Broker   string        `json:"broker"`
	Duration time.Duration `json:"duration_ns"`
	// Incomplete says why the run ended early (deadline, interrupted, a
	// store that died), when it did; its counts are then what was
	// recorded until then.
	Incomplete string `json:"incomplete,omitempty"`
	// Error says why the run could not start at all (a broker or store
	// that cannot be reached, a consumer that exits while starting): there
	// are no counts, and the run is judged as an error.
	Error string `json:"error,omitempty"`
	// Provenance says what produced the run.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// Provenance says what produced a run: dqbench's build, the broker and
// the libraries the run used, so a saved run or a CI report says what it
// measured.
type Provenance struct {
	DQBench string `json:"dqbench"` // module version and VCS revision
	Go      string `json:"go"`
	// Broker is the broker's kind, mode and address, and its own version
	// where it tells (RabbitMQ's server properties, mosquitto -h).
	Broker string `json:"broker"`
	// Clients are the client libraries and embedded brokers this run
	// used, each "module version".
	Clients []string `json:"clients,omitempty"`
	// Stores are the stores the variants used, each with its driver.
	Stores []string `json:"stores,omitempty"`
}

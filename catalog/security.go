package catalog

import (
	"slices"
)

// TLS is how dqbench's clients speak TLS to an external broker: the CA
// that signed the server's certificate and, when the server asks for one,
// the client's certificate and key. Each is a PEM file; a relative path is
// from the working directory.
type TLS struct {
	CA         string `yaml:"ca" json:"ca,omitempty" jsonschema:"description=PEM file of the CA certificate(s) the server's certificate must chain to (default: the system's roots)."`
	Cert       string `yaml:"cert" json:"cert,omitempty" jsonschema:"description=PEM file of the client certificate\\, for a server that asks for one (with key)."`
	Key        string `yaml:"key" json:"key,omitempty" jsonschema:"description=PEM file of the client certificate's private key (with cert)."`
	ServerName string `yaml:"server_name" json:"server_name,omitempty" jsonschema:"description=The name the server's certificate must carry (default: the host of the address)."`
}

// Auth is who dqbench's clients log in as on an external broker. No
// secret is written here: a password or a token comes from a file or an
// environment variable named here, read when the run connects, and never
// appears in any output.
type Auth struct {
	User         string `yaml:"user" json:"user,omitempty" jsonschema:"description=The user name to log in as (with password_file or password_env)."`
	PasswordFile string `yaml:"password_file" json:"password_file,omitempty" jsonschema:"description=File holding the user's password (its first line)."`
	PasswordEnv  string `yaml:"password_env" json:"password_env,omitempty" jsonschema:"description=Environment variable holding the user's password."`
	TokenFile    string `yaml:"token_file" json:"token_file,omitempty" jsonschema:"description=File holding an authentication token (its first line; nats only)."`
	TokenEnv     string `yaml:"token_env" json:"token_env,omitempty" jsonschema:"description=Environment variable holding an authentication token (nats only)."`
	NKeySeedFile string `yaml:"nkey_seed_file" json:"nkey_seed_file,omitempty" jsonschema:"description=File holding an nkey user's seed (SU...; nats only)."`
	CredsFile    string `yaml:"creds_file" json:"creds_file,omitempty" jsonschema:"description=A .creds file: a user JWT and its nkey seed (nats only)."`
	// Mechanism is the SASL mechanism of a Kafka login.
	Mechanism SASLMechanism `yaml:"mechanism" json:"mechanism,omitempty" jsonschema:"description=The SASL mechanism of the login (kafka only): SCRAM-SHA-256 (default)\\, SCRAM-SHA-512 or PLAIN."`
}

// SASLMechanism is a Kafka SASL mechanism dqbench's clients log in with
// (franz-go's sasl packages).
type SASLMechanism string

// The SASL mechanisms.
const (
	ScramSHA256 SASLMechanism = "SCRAM-SHA-256"
	ScramSHA512 SASLMechanism = "SCRAM-SHA-512"
	SASLPlain   SASLMechanism = "PLAIN"
)

// Allowed lists the valid values, for strict decoding and the schema.
func (SASLMechanism) Allowed() []string {
	return Strings([]SASLMechanism{ScramSHA256, ScramSHA512, SASLPlain})
}

// Security is the TLS and login settings of a broker kind whose clients
// can use them, written beside kind in the broker mapping (a kind's
// settings embed it inline). They apply to mode external only: the
// brokers dqbench starts itself speak plain TCP and take no login.
type Security struct {
	TLS  *TLS  `yaml:"tls" json:"tls,omitempty" jsonschema:"description=TLS to an external broker: ca\\, cert and key (PEM files)\\, server_name. Mode external only; see docs/scenario.md\\, TLS and authentication."`
	Auth *Auth `yaml:"auth" json:"auth,omitempty" jsonschema:"description=Login on an external broker: user with password_file or password_env; nats also token_file\\, token_env\\, nkey_seed_file\\, creds_file; kafka also mechanism (SASL). Secrets come from files or environment variables only. Mode external only."`
}

// Secured is a kind's settings type that embeds Security.
type Secured interface {
	Secure() *Security
}

// Secure returns s (Secured).
func (s *Security) Secure() *Security { return s }

// UsesTLS says whether the settings s (a kind's, or nil) or one of the
// broker's addresses ask for TLS.
func UsesTLS(settings any, addresses []string) bool {
	if sec, ok := settings.(Secured); ok && sec.Secure().TLS != nil {
		return true
	}
	for _, a := range addresses {
		if u, err := ParseURL(a); err == nil && slices.Contains(tlsSchemes, u.Scheme) {
			return true
		}
	}
	return false
}

// tlsSchemes are the URL schemes that mean TLS.
var tlsSchemes = []string{"tls", "amqps", "ssl", "mqtts", "rediss"}

// AuthKeys are the keys of auth, in order.
func AuthKeys() []string {
	return []string{"user", "password_file", "password_env", "token_file", "token_env", "nkey_seed_file", "creds_file", "mechanism"}
}

// PasswordKeys are the auth keys every kind with a login takes.
var PasswordKeys = []string{"user", "password_file", "password_env"}

// KafkaRelayFaults act, on a real Kafka, in dqbench's relays in front of
// the cluster, whose Kafka protocol filter rewrites the brokers'
// addresses in its answers: a cluster with TLS or a SASL login is reached
// without them, so these cannot act there.
var KafkaRelayFaults = []FaultType{ProduceResponseLost, ProducerCrash, AckLost, ConnectionReset, Partition, Latency}

// The environment variables a secret comes from where the scenario names
// no source: the password of a user with no password_file or
// password_env, the token of a broker with no other login
// (scenario.Scenario.UseSecretEnv).
const (
	PasswordEnv = "DQBENCH_PASSWORD"
	TokenEnv    = "DQBENCH_TOKEN"
)

package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dqbench/dqbench/catalog"
)

// problem is one thing wrong in a scenario, at the key path names.
type problem struct{ path, msg string }

// security checks the broker's tls and auth (catalog.Security) against
// its kind and mode, and the faults and process variants that read the
// broker's protocol against TLS.
func (c *checker) security() {
	for _, p := range securityProblems(c.s, c.d.Has) {
		c.errorf(p.path, "%s", p.msg)
	}
}

// securityProblems lists what is wrong with s's tls and auth; has says
// whether the scenario wrote a key (a scenario changed from outside says
// yes for each key set).
func securityProblems(s *Scenario, has func(string) bool) []problem {
	sec, ok := s.Broker.Settings.(catalog.Secured)
	if !ok {
		return nil
	}
	var out []problem
	add := func(path, format string, args ...any) {
		out = append(out, problem{path, path + ": " + fmt.Sprintf(format, args...)})
	}
	kind, _ := catalog.LookupBroker(s.Broker.Kind)
	mode := modeOf(s)
	st := sec.Secure()
	if mode != catalog.External {
		for _, key := range []string{"tls", "auth"} {
			if has("broker." + key) {
				add("broker."+key, "only with mode: external; the %s broker dqbench runs itself (mode: %s) speaks plain TCP and takes no login: remove %s, or add mode: external and the addresses of your broker", s.Broker.Kind, mode, key)
			}
		}
	}
	if t := st.TLS; t != nil && (t.Cert == "") != (t.Key == "") {
		path, missing := "broker.tls.cert", "key"
		if t.Cert == "" {
			path, missing = "broker.tls.key", "cert"
		}
		add(path, "a client certificate needs both cert and key (PEM files); add %s", missing)
	}
	if scheme, ok := tlsScheme[s.Broker.Kind]; ok && st.TLS != nil && mode == catalog.External {
		for i, a := range s.Broker.Addresses {
			if u, err := catalog.ParseURL(a); err == nil && !catalog.UsesTLS(nil, []string{a}) {
				add("broker.tls", "TLS to %s is an address with %s, and broker.addresses[%d] is %s:// (plain); write %s", s.Broker.Kind, scheme, i, u.Scheme, scheme)
				break
			}
		}
		if len(s.Broker.Addresses) == 0 {
			add("broker.tls", "TLS to %s is an address with %s, and the default address is plain; add addresses with %s", s.Broker.Kind, scheme, scheme)
		}
	}
	for i, v := range s.Variants {
		for _, key := range []string{"tls", "auth"} {
			if path := fmt.Sprintf("variants[%d].mqtt.%s", i, key); v.MQTT != nil && has(path) {
				add(path, "TLS and the login are the broker's, for every variant; write %s in broker", key)
			}
		}
	}
	if a := st.Auth; a != nil {
		out = append(out, authProblems(kind, a, has)...)
	}
	if catalog.UsesTLS(s.Broker.Settings, s.Broker.Addresses) {
		out = append(out, protocolFaultsOverTLS(s)...)
	}
	if s.Broker.Kind == catalog.Kafka && (st.TLS != nil || st.Auth != nil) {
		out = append(out, kafkaSecured(s)...)
	}
	return out
}

// kafkaSecured: dqbench reaches a Kafka with TLS or a SASL login straight,
// without its relays, and with franz-go only.
func kafkaSecured(s *Scenario) []problem {
	var out []problem
	for i, f := range s.Faults {
		overTLS := catalog.UsesTLS(s.Broker.Settings, nil) && catalog.InProcessOnly(f.Type, f.Params) // said already
		if slices.Contains(catalog.KafkaRelayFaults, f.Type) && !overTLS {
			path := fmt.Sprintf("faults[%d].type", i)
			out = append(out, problem{path, fmt.Sprintf("%s: %s cannot act on a Kafka reached with TLS or a SASL login: on a real Kafka it acts in dqbench's relays, whose Kafka protocol filter rewrites the brokers' addresses in the cluster's answers, and dqbench reaches a secured cluster without them; run it against a plain listener, or remove it", path, f.Type)})
		}
	}
	for i, v := range s.Variants {
		if s.ProducerFor(v).Client == catalog.KafkaGo {
			path := fmt.Sprintf("variants[%d]", i)
			out = append(out, problem{path, fmt.Sprintf("%s: client kafka-go has no TLS or SASL in dqbench yet; use client: franz-go (the default)", path)})
		}
	}
	return out
}

// tlsScheme names, per kind whose TLS an address's scheme asks for, that
// scheme (nats takes tls: alone as well).
var tlsScheme = map[catalog.BrokerKind]string{
	catalog.RabbitMQ: "amqps://",
	catalog.MQTT:     "ssl:// (or mqtts://)",
}

// authProblems checks auth's keys against what kind's clients can use:
// each key the kind takes, one secret source per secret, one way to log in.
func authProblems(kind catalog.Broker, a *catalog.Auth, has func(string) bool) []problem {
	var out []problem
	add := func(path, format string, args ...any) {
		out = append(out, problem{path, path + ": " + fmt.Sprintf(format, args...)})
	}
	unsupported := false
	for _, key := range catalog.AuthKeys() {
		if has("broker.auth."+key) && !slices.Contains(kind.AuthKeys, key) {
			add("broker.auth."+key, "%s's clients cannot log in with %s; it takes %s", kind.Kind, key, strings.Join(kind.AuthKeys, ", "))
			unsupported = true
		}
	}
	if a.PasswordFile != "" && a.PasswordEnv != "" {
		add("broker.auth.password_env", "give the password one way: password_file or password_env, not both")
	}
	if a.TokenFile != "" && a.TokenEnv != "" {
		add("broker.auth.token_env", "give the token one way: token_file or token_env, not both")
	}
	if a.Mechanism != "" && a.User == "" {
		add("broker.auth.mechanism", "a SASL mechanism logs a user in; add user")
	}
	if a.User == "" && (a.PasswordFile != "" || a.PasswordEnv != "") {
		path := "broker.auth.password_file"
		if a.PasswordFile == "" {
			path = "broker.auth.password_env"
		}
		add(path, "a password needs the user it belongs to; add user")
	}
	var ways []string
	for _, w := range []struct {
		key string
		set bool
	}{
		{"user", a.User != ""},
		{"token", a.TokenFile != "" || a.TokenEnv != ""},
		{"nkey_seed_file", a.NKeySeedFile != ""},
		{"creds_file", a.CredsFile != ""},
	} {
		if w.set {
			ways = append(ways, w.key)
		}
	}
	if len(ways) > 1 && !unsupported {
		add("broker.auth", "log in one way, not %s: a user and password, a token, an nkey seed or a .creds file", strings.Join(ways, " and "))
	}
	return out
}

// protocolFaultsOverTLS: a fault that reads the broker's protocol in
// dqbench's in-process proxy, and a process variant (whose deliveries
// and acks dqbench reads on the wire), cannot see into a TLS connection.
func protocolFaultsOverTLS(s *Scenario) []problem {
	var out []problem
	const why = "dqbench's in-process proxy reads the broker's protocol to inject it, and the connection to this broker is TLS (broker.tls or a TLS address), whose frames it cannot read"
	// Byte-level faults (partition, latency, connection-reset on the
	// consumer's connection, kill) pass bytes as they are: they act over
	// TLS unchanged.
	for i, f := range s.Faults {
		if catalog.InProcessOnly(f.Type, f.Params) {
			path := fmt.Sprintf("faults[%d].type", i)
			out = append(out, problem{path, fmt.Sprintf("%s: %s cannot act over TLS: %s; run it against a plain listener, or remove it", path, f.Type, why)})
		}
	}
	for i, v := range s.Variants {
		if v.Process != nil {
			path := fmt.Sprintf("variants[%d].process", i)
			out = append(out, problem{path, fmt.Sprintf("%s: a process variant cannot run over TLS: %s; run it against a plain listener", path, why)})
		}
	}
	return out
}

// UseSecurity sets the broker's tls and auth keys that t and a set (the
// DQBENCH_TLS_* and DQBENCH_* login variables), each replacing the
// scenario's, and checks the result as validation would.
func (s *Scenario) UseSecurity(t catalog.TLS, a catalog.Auth) error {
	if t == (catalog.TLS{}) && a == (catalog.Auth{}) {
		return nil
	}
	sec, ok := s.Broker.Settings.(catalog.Secured)
	if !ok {
		return fmt.Errorf("broker kind %s takes no TLS or login settings in this build", s.Broker.Kind)
	}
	st := sec.Secure()
	set := map[string]bool{}
	if t != (catalog.TLS{}) {
		merged := catalog.TLS{}
		if st.TLS != nil {
			merged = *st.TLS
		}
		setIfNonZero(&merged.CA, t.CA)
		setIfNonZero(&merged.Cert, t.Cert)
		setIfNonZero(&merged.Key, t.Key)
		setIfNonZero(&merged.ServerName, t.ServerName)
		st.TLS = &merged
		set["broker.tls"] = true
	}
	if a != (catalog.Auth{}) {
		merged := catalog.Auth{}
		if st.Auth != nil {
			merged = *st.Auth
		}
		if a.Mechanism != "" {
			merged.Mechanism = a.Mechanism
		}
		for _, f := range []struct{ dst, src *string }{
			{&merged.User, &a.User}, {&merged.PasswordFile, &a.PasswordFile}, {&merged.PasswordEnv, &a.PasswordEnv},
			{&merged.TokenFile, &a.TokenFile}, {&merged.TokenEnv, &a.TokenEnv},
			{&merged.NKeySeedFile, &a.NKeySeedFile}, {&merged.CredsFile, &a.CredsFile},
		} {
			setIfNonZero(f.dst, *f.src)
		}
		// A secret's file given outside wins over the scenario's variable,
		// and the reverse.
		if a.PasswordFile != "" && a.PasswordEnv == "" {
			merged.PasswordEnv = ""
		}
		if a.PasswordEnv != "" && a.PasswordFile == "" {
			merged.PasswordFile = ""
		}
		if a.TokenFile != "" && a.TokenEnv == "" {
			merged.TokenEnv = ""
		}
		if a.TokenEnv != "" && a.TokenFile == "" {
			merged.TokenFile = ""
		}
		st.Auth = &merged
		set["broker.auth"] = true
	}
	has := func(path string) bool {
		if strings.HasPrefix(path, "broker.auth.") && st.Auth != nil {
			v := fieldValue(st.Auth, strings.TrimPrefix(path, "broker.auth."))
			return v != "" && v != catalog.SASLMechanism("")
		}
		return set[path]
	}
	var msgs []string
	for _, p := range securityProblems(s, has) {
		msgs = append(msgs, p.msg)
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// UseSecretEnv names the variables password and token ("" for none:
// catalog.PasswordEnv and catalog.TokenEnv when they are set) as where
// the broker's secrets come from where the scenario leaves a gap: the
// password of a user with no password_file or password_env, the token of
// a broker with no login at all. A kind without tls and auth, or a
// broker dqbench runs itself, is left alone.
func (s *Scenario) UseSecretEnv(password, token string) {
	sec, ok := s.Broker.Settings.(catalog.Secured)
	if !ok || modeOf(s) != catalog.External {
		return
	}
	st := sec.Secure()
	a := st.Auth
	switch {
	case password != "" && a != nil && a.User != "" && a.PasswordFile == "" && a.PasswordEnv == "":
		merged := *a
		merged.PasswordEnv = password
		st.Auth = &merged
	case token != "" && (a == nil || *a == catalog.Auth{}):
		kind, _ := catalog.LookupBroker(s.Broker.Kind)
		if slices.Contains(kind.AuthKeys, "token_env") {
			st.Auth = &catalog.Auth{TokenEnv: token}
		}
	}
}

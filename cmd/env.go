package cmd

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/dqbench/dqbench/catalog"
)

// connectionEnv are the environment variables that stand in for run's
// connection flags when the flag is not given: a flag given wins.
var connectionEnv = []struct{ flag, env string }{
	{"broker-mode", "DQBENCH_BROKER_MODE"},
	{"addresses", "DQBENCH_ADDRESSES"},
	{"store", "DQBENCH_STORE"},
	{"redis", "DQBENCH_REDIS"},
	{"toxiproxy", "DQBENCH_TOXIPROXY"},
}

// envFor is the environment variable of a connection flag, or "".
func envFor(flag string) string {
	for _, c := range connectionEnv {
		if c.flag == flag {
			return c.env
		}
	}
	return ""
}

// envHelp is the paragraph of run --help that lists connectionEnv.
func envHelp() string {
	var b strings.Builder
	b.WriteString("Environment (a flag given wins over its variable; an empty one is unset):\n")
	for _, c := range connectionEnv {
		fmt.Fprintf(&b, "  %-18s --%s\n", c.env, c.flag)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// lookupEnv is the environment the command reads: s.LookupEnv, else the
// process's.
func (s Streams) lookupEnv(name string) (string, bool) {
	if s.LookupEnv != nil {
		return s.LookupEnv(name)
	}
	return os.LookupEnv(name)
}

// applyEnv sets each connection flag not given on the command line from
// its environment variable, and returns the flags so set, each with the
// variable it came from (for messages).
func applyEnv(f *pflag.FlagSet, lookup func(string) (string, bool)) (map[string]string, error) {
	from := map[string]string{}
	for _, c := range connectionEnv {
		if f.Changed(c.flag) {
			continue
		}
		v, ok := lookup(c.env)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		if err := f.Set(c.flag, v); err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", c.env, err))
		}
		from[c.flag] = c.env
	}
	return from, nil
}

// securityEnv are the environment variables that set the broker's tls
// and auth keys (catalog.Security) of every scenario run, each replacing
// the scenario's key. A secret itself is never a value here: the variables
// catalog.PasswordEnv and catalog.TokenEnv hold one, and the scenario gets
// only their names (Scenario.UseSecretEnv).
var securityEnv = []struct {
	env, key string
	set      func(*catalog.TLS, *catalog.Auth, string)
}{
	{"DQBENCH_TLS_CA", "tls.ca", func(t *catalog.TLS, _ *catalog.Auth, v string) { t.CA = v }},
	{"DQBENCH_TLS_CERT", "tls.cert", func(t *catalog.TLS, _ *catalog.Auth, v string) { t.Cert = v }},
	{"DQBENCH_TLS_KEY", "tls.key", func(t *catalog.TLS, _ *catalog.Auth, v string) { t.Key = v }},
	{"DQBENCH_TLS_SERVER_NAME", "tls.server_name", func(t *catalog.TLS, _ *catalog.Auth, v string) { t.ServerName = v }},
	{"DQBENCH_USER", "auth.user", func(_ *catalog.TLS, a *catalog.Auth, v string) { a.User = v }},
	{"DQBENCH_PASSWORD_FILE", "auth.password_file", func(_ *catalog.TLS, a *catalog.Auth, v string) { a.PasswordFile = v }},
	{"DQBENCH_TOKEN_FILE", "auth.token_file", func(_ *catalog.TLS, a *catalog.Auth, v string) { a.TokenFile = v }},
	{"DQBENCH_NKEY_SEED_FILE", "auth.nkey_seed_file", func(_ *catalog.TLS, a *catalog.Auth, v string) { a.NKeySeedFile = v }},
	{"DQBENCH_CREDS_FILE", "auth.creds_file", func(_ *catalog.TLS, a *catalog.Auth, v string) { a.CredsFile = v }},
	{"DQBENCH_SASL_MECHANISM", "auth.mechanism", func(_ *catalog.TLS, a *catalog.Auth, v string) { a.Mechanism = catalog.SASLMechanism(v) }},
}

// security is what the securityEnv variables set, and the variables that
// did (for messages).
type security struct {
	tls  catalog.TLS
	auth catalog.Auth
	from []string
	// password and token are catalog.PasswordEnv and catalog.TokenEnv
	// when set.
	password, token string
}

// readSecurityEnv reads securityEnv (an empty variable is unset).
func readSecurityEnv(lookup func(string) (string, bool)) (security, error) {
	var s security
	for _, e := range securityEnv {
		v, ok := lookup(e.env)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		e.set(&s.tls, &s.auth, v)
		s.from = append(s.from, e.env)
	}
	if m := s.auth.Mechanism; m != "" && !slices.Contains(m.Allowed(), string(m)) {
		return s, withCode(ExitUsage, fmt.Errorf("DQBENCH_SASL_MECHANISM %s: not a SASL mechanism (allowed: %s)", m, strings.Join(m.Allowed(), ", ")))
	}
	for _, e := range []struct {
		env string
		to  *string
	}{{catalog.PasswordEnv, &s.password}, {catalog.TokenEnv, &s.token}} {
		if v, ok := lookup(e.env); ok && v != "" {
			*e.to = e.env
		}
	}
	return s, nil
}

// securityHelp is the paragraph of run --help that lists securityEnv.
func securityHelp() string {
	var b strings.Builder
	b.WriteString("TLS and login of an external broker (each replaces the scenario's broker key; see docs/scenario.md):\n")
	for _, e := range securityEnv {
		fmt.Fprintf(&b, "  %-24s %s\n", e.env, e.key)
	}
	fmt.Fprintf(&b, "  %-24s the password, for a user with no password_file or password_env\n", catalog.PasswordEnv)
	fmt.Fprintf(&b, "  %-24s the token (nats), for a broker with no other login\n", catalog.TokenEnv)
	return strings.TrimSuffix(b.String(), "\n")
}

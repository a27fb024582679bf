package nats

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// secureOptions are the nats.go options for the broker's tls and auth
// (an external server's): TLS with the CA and client certificate, and
// one login: a user and password, a token, an nkey seed or a .creds file.
// Secrets are read here, from their files or variables.
func secureOptions(sec catalog.Security) ([]nats.Option, error) {
	var opts []nats.Option
	if sec.TLS != nil {
		// No server name unless one is given: nats.go then checks the
		// certificate against the host of the URL it dials.
		cfg, err := brokers.TLSConfig(sec.TLS, "")
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(cfg))
	}
	a := sec.Auth
	if a == nil {
		return opts, nil
	}
	switch {
	case a.User != "":
		pw, err := brokers.Password(a)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserInfo(a.User, pw))
	case a.TokenFile != "" || a.TokenEnv != "":
		token, err := brokers.Secret("token", a.TokenFile, a.TokenEnv)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Token(token))
	case a.NKeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(a.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("%w: auth.nkey_seed_file %s: %v", brokers.ErrSecurity, a.NKeySeedFile, unwrapPath(err))
		}
		opts = append(opts, opt)
	case a.CredsFile != "":
		if _, err := os.Stat(a.CredsFile); err != nil {
			return nil, fmt.Errorf("%w: auth.creds_file %s: %v", brokers.ErrSecurity, a.CredsFile, unwrapPath(err))
		}
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	}
	return opts, nil
}

// unwrapPath is err without the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

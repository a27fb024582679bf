package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/tlsprobe"
)

// secured says whether the settings ask for TLS or a SASL login.
func secured(s *catalog.KafkaSettings) bool { return s.TLS != nil || s.Auth != nil }

// secureOpts are the franz-go options of the broker's tls and auth:
// TLS with the CA and the client certificate (kgo checks each broker's
// certificate against the host it dials), and a SASL login, SCRAM
// (SHA-256 by default, or SHA-512) or PLAIN, with franz-go's sasl
// packages.
func secureOpts(sec catalog.Security) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if sec.TLS != nil {
		cfg, err := brokers.TLSConfig(sec.TLS, "")
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if a := sec.Auth; a != nil && a.User != "" {
		pw, err := brokers.Password(a)
		if err != nil {
			return nil, err
		}
		var m sasl.Mechanism
		switch a.Mechanism {
		case catalog.SASLPlain:
			m = plain.Auth{User: a.User, Pass: pw}.AsMechanism()
		case catalog.ScramSHA512:
			m = scram.Auth{User: a.User, Pass: pw}.AsSha512Mechanism()
		default:
			m = scram.Auth{User: a.User, Pass: pw}.AsSha256Mechanism()
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// connectSecured connects to a real Kafka with TLS or a SASL login,
// straight: dqbench's relays read and rewrite the cluster's answers,
// which they cannot over TLS, so every client dials the brokers the
// cluster advertises (validation refuses the faults that act in the
// relays).
func connectSecured(ctx context.Context, addrs []string, settings *catalog.KafkaSettings) (*Kafka, error) {
	opts, err := secureOpts(settings.Security)
	if err != nil {
		return nil, err
	}
	k, err := connectTo(ctx, addrs, addrs, opts...)
	if err != nil {
		return nil, securedFailure(ctx, addrs, settings, err)
	}
	k.upstream, k.sec = addrs, opts
	return k, nil
}

// errTLS marks a Kafka whose TLS did not match dqbench's, errRefusedLogin
// one that refused the SASL login.
var (
	errTLS          = errors.New("TLS failed")
	errRefusedLogin = errors.New("refused")
)

// securedFailure says why a secured connect failed, naming the setting
// to fix: a refused login, a certificate not trusted, TLS on one side
// only; else err as it is.
func securedFailure(ctx context.Context, addrs []string, s *catalog.KafkaSettings, err error) error {
	where := strings.Join(addrs, ",")
	var ke *kerr.Error
	errors.As(err, &ke)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Errorf("%w: Kafka at %s %w the SASL login (%v): a wrong user or password, or a mechanism the user has no credentials for; fix broker auth", brokers.ErrUnreachable, where, errRefusedLogin, ke)
	case errors.Is(err, kerr.UnsupportedSaslMechanism), errors.Is(err, kerr.IllegalSaslState):
		return fmt.Errorf("%w: Kafka at %s: %w: the listener does not take this SASL login (%v): give the port of a SASL listener, or the mechanism it enables in auth.mechanism", brokers.ErrUnreachable, where, errRefusedLogin, ke)
	}
	if why := brokers.TLSFailure(err); why != "" && s.TLS != nil {
		return fmt.Errorf("%w: Kafka at %s: %w: %s", brokers.ErrUnreachable, where, errTLS, why)
	}
	var eof *kgo.ErrFirstReadEOF
	if errors.As(err, &eof) && s.TLS != nil && !tlsprobe.SpeaksTLS(ctx, addrs[0]) {
		return fmt.Errorf("%w: Kafka at %s: %w: the server did not answer the TLS handshake with TLS (is the port a plain listener? leave out broker tls, or give the port of its SSL or SASL_SSL listener)", brokers.ErrUnreachable, where, errTLS)
	}
	if s.TLS == nil && len(addrs) > 0 && tlsprobe.SpeaksTLS(ctx, addrs[0]) {
		return fmt.Errorf("%w: Kafka at %s: %w: the port speaks TLS only, and dqbench connected without; add broker tls (with the CA in tls.ca)", brokers.ErrUnreachable, where, errTLS)
	}
	return err
}

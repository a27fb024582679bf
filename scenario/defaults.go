package scenario

import (
	"github.com/dqbench/dqbench/internal/strictyaml"

	"fmt"
	"time"

	"github.com/dqbench/dqbench/catalog"
)

// Defaults for settings a scenario leaves out. A broker kind's and a fault
// type's own parameters default themselves (a Defaults method in catalog).
const (
	DefaultSeed       = 1
	DefaultMessages   = 1000
	DefaultDeadline   = Duration(2 * time.Minute)
	DefaultDrain      = Duration(10 * time.Second)
	DefaultWindow     = 256
	DefaultInstances  = 1
	DefaultPrefetch   = 100
	DefaultMaxAttempt = 1
	// DefaultConfirmLostTimeout is producer.confirm_timeout when a
	// confirm-lost fault is configured and the scenario sets none: the
	// confirms it withholds never come, and an application that waited
	// for them would wait until the deadline. Long enough that a confirm
	// that does come is never given up on.
	DefaultConfirmLostTimeout = Duration(5 * time.Second)
)

// Upper bounds of the numeric settings: past them a run would exhaust memory
// or time, or overflow a broker's own types. The JSON schema's maximum= tags
// in types.go say the same (TestSchemaBounds keeps them in step).
const (
	MaxMessages  = 10_000_000
	MaxWindow    = 100_000
	MaxRate      = 1_000_000
	MaxInstances = 64
	MaxPrefetch  = 100_000
	// MaxDeliveryLimit bounds consumer.delivery_limit.
	MaxDeliveryLimit = 1000
	// MaxMaxLength bounds producer.max_length.
	MaxMaxLength  = 10_000_000
	MaxEvery      = MaxMessages
	MaxMaxAttempt = 1_000
	MaxDeadline   = Duration(24 * time.Hour)
	MaxRetries    = 100
)

// CheckMessages checks a number of messages given outside a scenario file
// (the --messages flag) against the same bounds as messages: in a file.
func CheckMessages(n int) error {
	return checkRange(n, 1, MaxMessages)
}

// checkRange says what is wrong with n unless lo <= n <= hi.
func checkRange(n, lo, hi int) error {
	if n < lo || n > hi {
		return fmt.Errorf("must be from %s to %s, got %s", strictyaml.Thousands(lo), strictyaml.Thousands(hi), strictyaml.Thousands(n))
	}
	return nil
}

// applyDefaults fills in every setting s leaves out. A variant's overrides
// stay as written: ProducerFor and ConsumerFor merge them.
func applyDefaults(s *Scenario) {
	setIfZero(&s.Messages, DefaultMessages)
	setIfZero(&s.Deadline, DefaultDeadline)
	setIfZero(&s.Drain, DefaultDrain)
	setIfZero(&s.Broker.Mode, catalog.ModeOf(s.Broker.Kind))
	if kind, ok := catalog.LookupBroker(s.Broker.Kind); ok && s.Broker.Mode == catalog.External && len(s.Broker.Addresses) == 0 && kind.DefaultAddress != "" {
		s.Broker.Addresses = []string{kind.DefaultAddress}
	}
	if s.Broker.Settings == nil {
		s.Broker.Settings, _ = s.Broker.NewParams()
	}
	if d, ok := s.Broker.Settings.(defaulter); ok {
		d.Defaults()
	}
	setIfZero(&s.Producer.Acks, catalog.AcksAll)
	if s.Producer.Idempotent == nil {
		s.Producer.Idempotent = new(true)
	}
	setIfZero(&s.Producer.Window, DefaultWindow)
	setIfZero(&s.Producer.Pattern, catalog.Direct)
	setIfZero(&s.Consumer.Instances, DefaultInstances)
	setIfZero(&s.Consumer.Ack, catalog.AckAfterProcess)
	setIfZero(&s.Consumer.Prefetch, DefaultPrefetch)
	setIfZero(&s.Store, catalog.DefaultStore)
	setIfZero(&s.Redis, catalog.DefaultRedis)
	for i := range s.Variants {
		v := &s.Variants[i]
		if v.Process == nil { // a process's message ids are the record keys
			setIfZero(&v.ID, catalog.BusinessID)
			setIfZero(&v.Effect, catalog.DefaultEffect(v.Strategy))
		}
		if p := v.Process; p != nil {
			setIfZero(&p.Instances, DefaultInstances)
			setIfZero(&p.Ready, catalog.Duration(DefaultReady))
		}
		if v.Params == nil {
			v.Params, _ = v.NewParams()
		}
		if d, ok := v.Params.(defaulter); ok {
			d.Defaults()
		}
	}
	for i := range s.Faults {
		f := &s.Faults[i]
		setIfZero(&f.MaxAttempt, DefaultMaxAttempt)
		if f.Params == nil {
			f.Params, _ = f.NewParams()
		}
		if d, ok := f.Params.(defaulter); ok {
			d.Defaults()
		}
		setIfZero(&f.Name, catalog.DefaultFaultName(f.Type, f.Params))
		if f.Type == catalog.ConfirmLost {
			setIfZero(&s.Producer.ConfirmTimeout, DefaultConfirmLostTimeout)
		}
	}
}

func setIfZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// IsIdempotent reports whether the producer is idempotent (the default).
func (p Producer) IsIdempotent() bool {
	return p.Idempotent == nil || *p.Idempotent
}

// RetryCount is how many times the application publishes an intent again
// (producer.retries, default 0).
func (p Producer) RetryCount() int {
	if p.Retries == nil {
		return 0
	}
	return *p.Retries
}

// ProducerFor returns the scenario's producer settings with v's overrides
// applied.
func (s *Scenario) ProducerFor(v Variant) Producer {
	p := s.Producer
	if p.Idempotent != nil {
		p.Idempotent = new(*p.Idempotent) // the caller may not change s through it
	}
	if o := v.Producer; o != nil {
		if o.Idempotent != nil {
			p.Idempotent = new(*o.Idempotent)
		}
		setIfNonZero(&p.Acks, o.Acks)
		setIfNonZero(&p.Window, o.Window)
		setIfNonZero(&p.Rate, o.Rate)
		setIfNonZero(&p.MaxLag, o.MaxLag)
		setIfNonZero(&p.Pattern, o.Pattern)
		if o.Retries != nil {
			p.Retries = new(*o.Retries)
		}
		setIfNonZero(&p.ConfirmTimeout, o.ConfirmTimeout)
		if o.Backoff != nil {
			p.Backoff = o.Backoff
		}
		p.ProducerKeys = p.ProducerKeys.With(o.ProducerKeys)
	}
	return p
}

// ConsumerFor returns the scenario's consumer settings with v's overrides
// applied.
func (s *Scenario) ConsumerFor(v Variant) Consumer {
	c := s.Consumer
	if o := v.Consumer; o != nil {
		setIfNonZero(&c.Instances, o.Instances)
		setIfNonZero(&c.Ack, o.Ack)
		setIfNonZero(&c.Prefetch, o.Prefetch)
		c.ConsumerKeys = c.ConsumerKeys.With(o.ConsumerKeys)
	}
	return c
}

// BrokerSettingsFor returns the broker kind's settings for variant v (a
// copy where the kind's settings differ per variant: catalog.VariantSettings):
// the scenario's, with the variant's kind-only producer and consumer keys
// and its override mapping (mqtt, rabbitmq, nats) applied.
func (s *Scenario) BrokerSettingsFor(v Variant) any {
	vs, ok := s.Broker.Settings.(catalog.VariantSettings)
	if !ok {
		return s.Broker.Settings
	}
	return vs.ForVariant(catalog.VariantKeys{
		Producer:  s.ProducerFor(v).ProducerKeys,
		Consumer:  s.ConsumerFor(v).ConsumerKeys,
		Overrides: v.BrokerOverrides,
	})
}

// StoreFor returns the store variant v runs on: its own, else the
// scenario's.
func (s *Scenario) StoreFor(v Variant) string {
	if v.Store != "" {
		return v.Store
	}
	return s.Store
}

// SetStore makes every variant run on ref (the --store flag).
func (s *Scenario) SetStore(ref string) {
	s.Store = ref
	for i := range s.Variants {
		s.Variants[i].Store = ""
	}
}

func setIfNonZero[T comparable](p *T, v T) {
	var zero T
	if v != zero {
		*p = v
	}
}

// UseMessages sets the number of messages to n (the --messages flag) and,
// when n is more than the scenario's own, scales its deadline by as much
// (at most MaxDeadline): a deadline written for 300 messages would cut a
// run of 200,000 short. It returns the deadline it set, zero when it kept
// it. A --timeout given as well is applied after it, and wins.
func (s *Scenario) UseMessages(n int) Duration {
	old := s.Messages
	s.Messages = n
	if old <= 0 || n <= old {
		return 0
	}
	scaled := float64(s.Deadline) * float64(n) / float64(old)
	if scaled > float64(MaxDeadline) {
		scaled = float64(MaxDeadline)
	}
	s.Deadline = Duration(time.Duration(scaled).Round(time.Second))
	return s.Deadline
}

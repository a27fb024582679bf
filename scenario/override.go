package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/strictyaml"
)

// UseExternalBroker points s at a running broker of its kind at addrs (the
// run's --addresses), as if the scenario said mode: external with those
// addresses. It refuses what that scenario would not validate: a kind with
// no external mode, an address the kind does not take, a fault that cannot
// act on an external broker. Messages mask passwords.
func (s *Scenario) UseExternalBroker(addrs []string) error {
	kind, ok := catalog.LookupBroker(s.Broker.Kind)
	if !ok {
		return fmt.Errorf("broker kind %q is not supported by this build", s.Broker.Kind)
	}
	if !slices.Contains(kind.Modes, catalog.External) {
		return fmt.Errorf("broker kind %s has no external mode in this build", s.Broker.Kind)
	}
	if len(addrs) == 0 {
		return errors.New("give at least one address")
	}
	var problems []string
	for _, a := range addrs {
		if kind.ValidAddress == nil {
			continue
		}
		if err := kind.ValidAddress(a); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", catalog.MaskURL(a), err))
		}
	}
	for _, f := range s.Faults {
		k, ok := catalog.LookupFault(f.Type)
		if !ok || k.Available == nil {
			continue
		}
		if why := k.Available(catalog.Where{Broker: s.Broker.Kind, Mode: catalog.External, Acks: catalog.AcksAll}); why != "" {
			problems = append(problems, fmt.Sprintf("fault %s cannot act on an external broker: %s", f.Name, why))
		}
	}
	for _, v := range s.Variants {
		if why := catalog.ProcessOn(s.Broker.Kind, catalog.External); v.Process != nil && why != "" {
			problems = append(problems, fmt.Sprintf("variant %s runs a consumer process, which cannot run on an external broker here: %s", v.Name, why))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	s.Broker.Mode = catalog.External
	s.Broker.Addresses = slices.Clone(addrs)
	return nil
}

// UseMode runs s on a broker of its kind in mode (the run's
// --broker-mode): embedded or managed, whatever the scenario says (a
// Kafka lesson on a real Apache Kafka: --broker-mode managed). External
// takes --addresses (UseExternalBroker), or the kind's default address.
// It refuses what that scenario would not validate: a mode the kind does
// not have, a fault or a consumer process that cannot act in it, and
// keys of another mode (addresses).
func (s *Scenario) UseMode(mode catalog.Mode) error {
	kind, ok := catalog.LookupBroker(s.Broker.Kind)
	if !ok {
		return fmt.Errorf("broker kind %q is not supported by this build", s.Broker.Kind)
	}
	if !slices.Contains(kind.Modes, mode) {
		return fmt.Errorf("broker kind %s has no mode %q in this build (allowed: %s)", s.Broker.Kind, mode, strings.Join(catalog.Strings(kind.Modes), ", "))
	}
	if mode == catalog.External {
		if kind.DefaultAddress == "" {
			return fmt.Errorf("mode external needs the broker's addresses: give --addresses (e.g. %s) instead", kind.ExampleAddress)
		}
		return s.UseExternalBroker([]string{kind.DefaultAddress})
	}
	var problems []string
	if ks, ok := s.Broker.Settings.(*catalog.KafkaSettings); ok && mode == catalog.Managed && ks.Brokers > 1 && ks.Brokers != 3 {
		problems = append(problems, fmt.Sprintf("brokers: %d: a managed Kafka cluster has 1 or 3 nodes", ks.Brokers))
	}
	if ns, ok := s.Broker.Settings.(*catalog.NATSSettings); ok {
		if why := ns.ReplicasFit(mode); why != "" {
			problems = append(problems, "replicas: "+why)
		}
	}
	for _, f := range s.Faults {
		k, ok := catalog.LookupFault(f.Type)
		if !ok || k.Available == nil {
			continue
		}
		where := catalog.Where{Broker: s.Broker.Kind, Mode: mode, Settings: s.Broker.Settings}
		for _, v := range s.Variants {
			if where.Acks = s.ProducerFor(v).Acks; where.Acks == "" {
				where.Acks = catalog.AcksAll
			}
			if why := k.Available(where); why != "" {
				problems = append(problems, fmt.Sprintf("fault %s cannot act with mode: %s: %s", f.Name, mode, why))
				break
			}
		}
	}
	for _, v := range s.Variants {
		if why := catalog.ProcessOn(s.Broker.Kind, mode); v.Process != nil && why != "" {
			problems = append(problems, fmt.Sprintf("variant %s runs a consumer process, which cannot run with mode: %s here: %s", v.Name, mode, why))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	s.Broker.Mode = mode
	s.Broker.Addresses = nil
	return nil
}

// UseToxiproxy routes s's client connections through the external
// toxiproxy whose API is at url (the run's --toxiproxy), for a broker kind
// whose settings take one (a UseToxiproxy method). It refuses a URL that
// is not http(s) and a fault that needs dqbench's in-process toxiproxy.
func (s *Scenario) UseToxiproxy(url string) error {
	settings, ok := s.Broker.Settings.(interface{ UseToxiproxy(string) })
	if !ok {
		return fmt.Errorf("broker kind %s does not go through toxiproxy", s.Broker.Kind)
	}
	if err := catalog.ToxiproxyURL(url); err != nil {
		return fmt.Errorf("%s: %w", catalog.MaskURL(url), err)
	}
	for _, f := range s.Faults {
		if catalog.InProcessOnly(f.Type, f.Params) {
			return fmt.Errorf("fault %s parses AMQP frames inside dqbench's in-process toxiproxy; an external toxiproxy runs only its own toxics", f.Name)
		}
	}
	settings.UseToxiproxy(url)
	return nil
}

// OnlyVariants keeps the variants of s named in names (the run's
// --variant), in the scenario's order, and drops the others. A name the
// scenario does not have is an error listing its variants.
func (s *Scenario) OnlyVariants(names []string) error {
	all := make([]string, len(s.Variants))
	for i, v := range s.Variants {
		all[i] = v.Name
	}
	var unknown []string
	for _, n := range names {
		if slices.Contains(all, n) {
			continue
		}
		u := echo(n)
		if c, ok := strictyaml.Suggest(n, all); ok {
			u += fmt.Sprintf(" (did you mean %q?)", c)
		}
		unknown = append(unknown, u)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("scenario %s has no variant %s; its variants: %s", s.Name, strings.Join(unknown, ", "), strings.Join(all, ", "))
	}
	s.Variants = slices.DeleteFunc(s.Variants, func(v Variant) bool { return !slices.Contains(names, v.Name) })
	return nil
}

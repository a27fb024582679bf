package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/strictyaml"
)

// checker runs the checks that need more than one key, on a decoded
// scenario, reporting through the decoder so that each problem points at
// its key. Defaults are not applied yet: a zero value means "not set".
type checker struct {
	d *strictyaml.Decoder
	s *Scenario
}

func (c *checker) check() {
	c.top()
	c.broker()
	c.autoAck()
	c.deadLetter()
	c.maxLength()
	c.rabbitmq()
	c.producer("producer", &c.s.Producer)
	c.backoffRetries()
	c.consumer("consumer", &c.s.Consumer)
	c.stores()
	c.faults()
	c.variants()
	c.acks()
	c.faultPoints()
	c.faultsAvailable()
	c.stages()
	c.autoCommit()
	c.clients()
	c.leaders()
	c.processVariants()
	c.mqtt()
	c.nats()
	c.natsCluster()
	c.natsDuplicateWindows()
	c.security()
	c.producerPatterns()
}

func (c *checker) top() {
	s := c.s
	switch {
	case !c.d.Has("version"):
		c.missing("version", "add `version: 1` as the first line")
	case s.Version != Version:
		c.errorf("version", "version: %d is not supported; this dqbench reads version %d", s.Version, Version)
	}
	switch {
	case strings.TrimSpace(s.Name) == "" && c.d.Has("name"):
		c.errorf("name", "name: must not be empty")
	case strings.TrimSpace(s.Name) == "":
		c.missing("name", "add a short name, used in reports and topic names")
	case !isSafeName(s.Name):
		c.errorf("name", "name: %s is not allowed: %s", echo(s.Name), safeNameHelp)
	}
	c.inRange("messages", s.Messages, MaxMessages)
	c.positive("deadline", s.Deadline)
	if c.d.Has("deadline") && s.Deadline > MaxDeadline {
		c.errorf("deadline", "deadline: must be at most %s, got %s", MaxDeadline, s.Deadline)
	}
	c.positive("drain", s.Drain)
	deadline, drain := orDefault(s.Deadline, DefaultDeadline), orDefault(s.Drain, DefaultDrain)
	if deadline > 0 && drain >= deadline {
		path := "drain"
		if !c.d.Has(path) {
			path = "deadline"
		}
		c.errorf(path, "drain (%s) must be shorter than deadline (%s): the run publishes first, then drains; raise deadline or lower drain", drain, deadline)
	}
}

func (c *checker) broker() {
	kinds := catalog.BrokerKind("").Allowed()
	if !c.d.Has("broker") {
		c.missing("broker", "add a broker section, e.g. broker: {kind: kafka}")
		return
	}
	b := c.s.Broker
	if !c.d.Has("broker.kind") {
		c.missing("broker.kind", "add kind: one of "+strings.Join(kinds, ", "))
	}
	mode := b.Mode
	if !c.d.Has("broker.mode") {
		mode = catalog.ModeOf(b.Kind)
	}
	kind, known := catalog.LookupBroker(b.Kind)
	if !known && c.d.Has("broker.kind") {
		// The kind is wrong (said where it was read): its addresses, its
		// keys and its faults cannot be judged, and the errors that would
		// follow from it would only bury the one to fix.
		return
	}
	if known && c.d.Has("broker.mode") && indexOf(catalog.Strings(kind.Modes), string(mode)) < 0 {
		c.errorf("broker.mode", "broker.mode: %s is not supported for %s (supported: %s)", mode, b.Kind, strings.Join(catalog.Strings(kind.Modes), ", "))
		mode = "" // said once: no more about addresses for that mode
	}
	example, valid, what := "host:port", catalog.HostPort, "host:port"
	if known {
		example = kind.ExampleAddress
		if kind.ValidAddress != nil {
			valid = kind.ValidAddress
		}
		if b.Kind == catalog.RabbitMQ {
			what = "AMQP URL"
		}
	}
	switch {
	case mode == catalog.External && len(b.Addresses) == 0 && kind.DefaultAddress == "":
		c.errorf(modePath(c), `broker: mode external needs addresses: add addresses: ["%s"] (%s of each broker)%s`, example, what, orEmbedded(kind))
	case (mode == catalog.Embedded || mode == catalog.Managed) && len(b.Addresses) > 0:
		c.errorf("broker.addresses", "broker.addresses: only used with mode: external; add mode: external or remove addresses")
	}
	for i, a := range b.Addresses {
		if err := valid(a); err != nil {
			p := fmt.Sprintf("broker.addresses[%d]", i)
			c.errorf(p, `%s: %s is %s (e.g. "%s")`, p, echo(catalog.MaskURL(a)), err, example)
		}
	}
	c.params("broker", b.Settings, string(b.Kind))
	if rs, ok := b.Settings.(*catalog.RabbitMQSettings); ok && rs.Toxiproxy != "" {
		c.externalToxiproxy(rs.Toxiproxy)
	}
}

// externalToxiproxy checks broker.toxiproxy: an API URL, and no fault that
// acts inside dqbench's in-process toxiproxy (an external one runs only its
// own toxics), as --toxiproxy does.
func (c *checker) externalToxiproxy(url string) {
	if err := catalog.ToxiproxyURL(url); err != nil {
		c.errorf("broker.toxiproxy", "broker.toxiproxy: %s is %v", echo(catalog.MaskURL(url)), err)
	}
	for i, f := range c.s.Faults {
		if k, _ := catalog.LookupFault(f.Type); !k.InProcessToxiproxy && catalog.InProcessOnly(f.Type, f.Params) {
			fp := fmt.Sprintf("faults[%d].connection", i)
			c.errorf(fp, "%s: on the producer's connection, %s watches for the broker's confirm with a filter inside dqbench's in-process toxiproxy, and broker.toxiproxy sends every connection through an external one, which runs only its own toxics; remove broker.toxiproxy or use connection: consumer", fp, f.Type)
			continue
		}
		if catalog.InProcessOnly(f.Type, f.Params) {
			fp := fmt.Sprintf("faults[%d].type", i)
			c.errorf(fp, "%s: %s parses AMQP frames inside dqbench's in-process toxiproxy, and broker.toxiproxy sends every connection through an external one, which runs only its own toxics; remove broker.toxiproxy or this fault", fp, f.Type)
		}
	}
}

// autoAck checks that ack: auto is only used where the broker can ack on
// delivery (catalog.Broker.AutoAck).
func (c *checker) autoAck() {
	kind, ok := catalog.LookupBroker(c.s.Broker.Kind)
	if !ok || kind.AutoAck {
		return
	}
	var can []string
	for _, b := range catalog.Brokers {
		if b.AutoAck {
			can = append(can, string(b.Kind))
		}
	}
	check := func(path string, m catalog.AckMode) {
		if m == catalog.AckAuto {
			c.errorf(path, "%s: auto (the broker acks on delivery) is only for %s, not %s; use before-process for at-most-once", path, strings.Join(can, ", "), kind.Kind)
		}
	}
	check("consumer.ack", c.s.Consumer.Ack)
	for i, v := range c.s.Variants {
		if v.Consumer != nil {
			check(fmt.Sprintf("variants[%d].consumer.ack", i), v.Consumer.Ack)
		}
	}
}

// deadLetter checks that on_failure and delivery_limit are only used where
// the broker takes failed deliveries back (catalog.Broker.DeadLetter) and
// delivery_limit where its settings count deliveries.
func (c *checker) deadLetter() {
	kind, ok := catalog.LookupBroker(c.s.Broker.Kind)
	if !ok {
		return
	}
	check := func(path string, cs *Consumer, settings any) {
		if cs == nil {
			return
		}
		if c.d.Has(path+".on_failure") && cs.OnFailure.HandsBack() && !kind.DeadLetter {
			c.errorf(path+".on_failure", "%s.on_failure: %s cannot hand a failed delivery back (%s); use retry-in-process or leave it out", path, kind.Kind, cs.OnFailure)
		}
		if c.d.Has(path+".on_failure") && cs.OnFailure == catalog.FailRetryInProcess {
			for i, f := range c.s.Faults {
				if f.Type == catalog.PoisonMessage {
					c.errorf(path+".on_failure", "%s.on_failure: retry-in-process with a poison-message fault (faults[%d]) retries for ever: a poison message fails every time; use requeue with a delivery_limit, or reject", path, i)
				}
			}
		}
		if cs.DeliveryLimit == 0 {
			return
		}
		c.inRange(path+".delivery_limit", cs.DeliveryLimit, MaxDeliveryLimit)
		switch {
		case kind.DeliveryLimit == nil:
			c.errorf(path+".delivery_limit", "%s.delivery_limit: %s has no delivery limit; leave it out", path, kind.Kind)
		default:
			if why := kind.DeliveryLimit(settings); why != "" {
				c.errorf(path+".delivery_limit", "%s.delivery_limit: %s", path, why)
			}
		}
	}
	check("consumer", &c.s.Consumer, c.s.Broker.Settings)
	for i, v := range c.s.Variants {
		check(fmt.Sprintf("variants[%d].consumer", i), v.Consumer, c.s.BrokerSettingsFor(v))
	}
}

// maxLength checks that max_length and overflow are only used where the
// broker's queues can be bounded (catalog.Broker.MaxLength).
func (c *checker) maxLength() {
	kind, ok := catalog.LookupBroker(c.s.Broker.Kind)
	if !ok {
		return
	}
	check := func(path string, p *Producer) {
		if p == nil {
			return
		}
		if p.MaxLength != 0 {
			c.inRange(path+".max_length", p.MaxLength, MaxMaxLength)
		}
		for _, key := range []string{"max_length", "overflow"} {
			if c.d.Has(path+"."+key) && !kind.MaxLength {
				c.errorf(path+"."+key, "%s.%s: %s queues have no length limit here; leave it out", path, key, kind.Kind)
			}
		}
	}
	check("producer", &c.s.Producer)
	for i, v := range c.s.Variants {
		check(fmt.Sprintf("variants[%d].producer", i), v.Producer)
	}
}

// modePath is where a missing address is best reported: the mode when
// written, else the broker.
func modePath(c *checker) string {
	if c.d.Has("broker.mode") {
		return "broker.mode"
	}
	return "broker"
}

// orEmbedded suggests the embedded mode where the kind has one.
func orEmbedded(kind catalog.Broker) string {
	if slices.Contains(kind.Modes, catalog.Embedded) || kind.Kind == "" {
		return ", or use mode: embedded"
	}
	return ""
}

// params checks a parameter struct: its required keys, and its numbers
// against the minimum and maximum of their jsonschema tags.
func (c *checker) params(path string, params any, owner string) {
	if params == nil {
		return
	}
	for _, b := range paramBounds(params) {
		kp := join(path, b.key)
		if c.d.Has(kp) && (b.value < b.lo || b.value > b.hi) {
			c.errorf(kp, "%s: %v", kp, checkRange(b.value, b.lo, b.hi))
		}
	}
	for key, d := range durationParams(params) {
		c.positive(join(path, key), d)
	}
	for _, key := range requiredParams(params) {
		if !c.d.Has(join(path, key)) {
			hint := ""
			if doc := paramDoc(params, key); doc != "" {
				hint = " " + doc
			}
			if a, ok := fieldValue(params, key).(strictyaml.Allowed); ok {
				hint += fmt.Sprintf(" (allowed: %s)", strings.Join(a.Allowed(), ", "))
			}
			c.errorf(join(path, key), "%s: %s needs %s:%s", path, owner, key, hint)
		}
	}
}

// stores checks every store: and redis: value.
func (c *checker) stores() {
	c.storeRef("store", c.s.Store)
	for i, v := range c.s.Variants {
		c.storeRef(fmt.Sprintf("variants[%d].store", i), v.Store)
	}
	if c.d.Has("redis") {
		if err := catalog.ParseRedis(c.s.Redis); err != nil {
			c.errorf("redis", "redis: %s: %v", echo(catalog.MaskURL(c.s.Redis)), err)
		}
	}
}

func (c *checker) storeRef(path, ref string) {
	if !c.d.Has(path) {
		return
	}
	if _, err := catalog.ParseStore(ref); err != nil {
		c.errorf(path, "%s: %s: %v", path, echo(catalog.MaskURL(ref)), err)
	}
}

// producer checks producer settings at path: the scenario's, or a
// variant's overrides.
func (c *checker) producer(path string, p *Producer) {
	if p == nil {
		return
	}
	c.inRange(path+".window", p.Window, MaxWindow)
	c.inRange(path+".rate", p.Rate, MaxRate)
	c.inRange(path+".max_lag", p.MaxLag, MaxMessages)
	if p.Retries != nil && c.d.Has(path+".retries") {
		if err := checkRange(*p.Retries, 0, MaxRetries); err != nil {
			c.errorf(path+".retries", "%s.retries: %v", path, err)
		}
	}
	if c.d.Has(path+".confirm_timeout") && p.ConfirmTimeout <= 0 {
		c.errorf(path+".confirm_timeout", "%s.confirm_timeout: must be more than 0; leave it out to wait as long as the client takes", path)
	}
	c.backoff(path, p)
}

func (c *checker) consumer(path string, cs *Consumer) {
	if cs == nil {
		return
	}
	c.inRange(path+".instances", cs.Instances, MaxInstances)
	c.inRange(path+".prefetch", cs.Prefetch, MaxPrefetch)
}

func (c *checker) faults() {
	names := map[string]string{} // fault name → path of the fault that has it
	for i, f := range c.s.Faults {
		fp := fmt.Sprintf("faults[%d]", i)
		_, known := catalog.LookupFault(f.Type)
		if !c.d.Has(fp + ".type") {
			c.missing(fp+".type", "add type: one of "+strings.Join(f.Type.Allowed(), ", "))
		}

		every, prob := c.d.Has(fp+".every"), c.d.Has(fp+".probability")
		switch {
		case every && prob:
			c.errorf(fp+".probability", "%s: set only one of every and probability, not both", fp)
		case !every && !prob:
			c.errorf(fp, "%s: needs a schedule: add every: N (fire on every Nth intent) or probability: P (0 < P <= 1)", fp)
		}
		if every {
			c.inRange(fp+".every", f.Every, MaxEvery)
			if n := orDefaultInt(c.s.Messages, DefaultMessages); f.Every > n && f.Every <= MaxEvery {
				c.errorf(fp+".every", "%s", everyTooLarge(fp, f.Every, n))
			}
		}
		if prob && !(f.Probability > 0 && f.Probability <= 1) {
			c.errorf(fp+".probability", "%s.probability: must be more than 0 and at most 1, got %v", fp, f.Probability)
		}
		c.inRange(fp+".max_attempt", f.MaxAttempt, MaxMaxAttempt)
		if !known {
			continue
		}
		c.params(fp, f.Params, string(f.Type))
		name := f.Name
		if name == "" {
			name = catalog.DefaultFaultName(f.Type, f.Params)
		}
		namePath := fp + ".name"
		if !c.d.Has(namePath) {
			namePath = fp
		}
		if prev, dup := names[name]; dup {
			c.errorf(namePath, "%s: name %s is already used by %s; add name: with a unique label to one of them", fp, echo(name), prev)
		} else {
			names[name] = fp
		}
	}
}

// faultsAvailable checks that each fault can act with the broker and each
// variant's producer settings (catalog.Fault.Available).
func (c *checker) faultsAvailable() {
	if _, known := catalog.LookupBroker(c.s.Broker.Kind); !known {
		return // the broker's kind is wrong: said once, in broker
	}
	mode := c.s.Broker.Mode
	if mode == "" {
		mode = catalog.ModeOf(c.s.Broker.Kind)
	}
	for i, f := range c.s.Faults {
		kind, ok := catalog.LookupFault(f.Type)
		if !ok || kind.Available == nil {
			continue
		}
		fp := fmt.Sprintf("faults[%d]", i)
		where := catalog.Where{Broker: c.s.Broker.Kind, Mode: mode, Settings: c.s.Broker.Settings}
		if why := kind.Available(where); why != "" {
			c.errorf(fp+".type", "%s: %s cannot act here: %s", fp, f.Type, why)
			continue
		}
		for j, v := range c.s.Variants {
			where.Acks = c.s.ProducerFor(v).Acks
			if where.Acks == "" {
				where.Acks = catalog.AcksAll
			}
			where.ConsumerAck = ""
			if why := kind.Available(where); why != "" {
				path := c.acksPath(j)
				c.errorf(path, "%s: %s (%s) cannot act in variant %s: %s", path, f.Type, fp, echo(v.Name), why)
				continue
			}
			if v.Process != nil {
				continue // the process is the consumer: no ack mode of dqbench's
			}
			where.ConsumerAck = c.s.ConsumerFor(v).Ack
			if why := kind.Available(where); why != "" {
				path := c.consumerAckPath(j)
				c.errorf(path, "%s: %s (%s) cannot act in variant %s: %s", path, f.Type, fp, echo(v.Name), why)
			}
		}
	}
}

// consumerAckPath is where variant j's effective consumer ack mode is
// written.
func (c *checker) consumerAckPath(j int) string {
	if v := c.s.Variants[j]; v.Consumer != nil && v.Consumer.Ack != "" {
		return fmt.Sprintf("variants[%d].consumer.ack", j)
	}
	if c.d.Has("consumer.ack") {
		return "consumer.ack"
	}
	return fmt.Sprintf("variants[%d]", j)
}

// acksPath is where variant j's effective acks setting is written.
func (c *checker) acksPath(j int) string {
	if v := c.s.Variants[j]; v.Producer != nil && v.Producer.Acks != "" {
		return fmt.Sprintf("variants[%d].producer.acks", j)
	}
	if c.d.Has("producer.acks") {
		return "producer.acks"
	}
	return fmt.Sprintf("variants[%d]", j)
}

func (c *checker) variants() {
	if !c.d.Has("variants") {
		c.missing("variants", "add at least one variant with a name and a strategy ("+strings.Join(catalog.StrategyNames(), ", ")+")")
		return
	}
	if len(c.s.Variants) == 0 {
		c.errorf("variants", "variants: is empty; add at least one variant with a name and a strategy (%s)", strings.Join(catalog.StrategyNames(), ", "))
	}
	// Variant names become topic, group and file names, which may not tell
	// case apart: "None" and "none" are the same name.
	names := map[string]string{} // lower-case variant name → path of the variant that has it
	for i, v := range c.s.Variants {
		vp := fmt.Sprintf("variants[%d]", i)
		switch name := strings.TrimSpace(v.Name); {
		case name == "" && c.d.Has(vp+".name"):
			c.errorf(vp+".name", "%s.name: must not be empty", vp)
		case name == "":
			c.missing(vp+".name", "add a name, used in reports and JSON output")
		case !isSafeName(v.Name):
			c.errorf(vp+".name", "%s.name: %s is not allowed: %s", vp, echo(v.Name), safeNameHelp)
		case names[strings.ToLower(v.Name)] != "":
			c.errorf(vp+".name", "%s.name: %s is already the name of %s; variant names must be unique (ignoring case)", vp, echo(v.Name), names[strings.ToLower(v.Name)])
		default:
			names[strings.ToLower(v.Name)] = vp
		}
		if c.d.Has(vp + ".strategy") {
			c.oneOf(vp+".strategy", string(v.Strategy), catalog.StrategyNames())
		} else if !c.d.Has(vp + ".process") {
			c.missing(vp+".strategy", "add strategy: one of "+strings.Join(catalog.StrategyNames(), ", ")+"; or process: to run your own consumer program")
		}
		c.producer(vp+".producer", v.Producer)
		c.consumer(vp+".consumer", v.Consumer)
		c.params(vp, v.Params, string(v.Strategy))
		c.idSource(vp+".id", v.ID)
		c.effect(vp+".effect", v)
	}
}

// effect checks that the variant's strategy can apply its effect kind: an
// order row keyed by the business id is what unique-key is about.
func (c *checker) effect(path string, v Variant) {
	e, ok := catalog.LookupEffect(v.Effect)
	if !ok || !c.d.Has(path) || v.Strategy == "" || e.Only == "" || e.Only == v.Strategy {
		return
	}
	c.errorf(path, "%s: %s is %s's effect (the row its key protects), not %s's; use append for a plain insert, or strategy: %s", path, e.Kind, e.Only, v.Strategy, e.Only)
}

// idSource checks that the broker gives the id source: a delivery tag or
// an offset is the broker's own.
func (c *checker) idSource(path string, src catalog.IDSource) {
	kinds := src.Kinds()
	if kinds == nil || !c.d.Has(path) || slices.Contains(kinds, c.s.Broker.Kind) {
		return
	}
	c.errorf(path, "%s: %s: broker kind %s has none (it comes from the broker: allowed on %s); use business, per-send-uuid or content-hash", path, src, c.s.Broker.Kind, strings.Join(catalog.Strings(kinds), ", "))
}

// acks checks, per variant, that the effective producer settings agree:
// Kafka's idempotent producer needs acks all.
func (c *checker) acks() {
	for i, v := range c.s.Variants {
		p := c.s.ProducerFor(v)
		if p.Acks == "" || p.Acks == catalog.AcksAll || !p.IsIdempotent() {
			continue
		}
		vp := fmt.Sprintf("variants[%d].producer", i)
		path := "producer.acks"
		switch {
		case v.Producer != nil && v.Producer.Acks != "":
			path = vp + ".acks"
		case v.Producer != nil && v.Producer.Idempotent != nil:
			path = vp + ".idempotent"
		}
		why := "Kafka's idempotent producer requires acks all"
		if p.Idempotent == nil {
			why += ", and idempotent defaults to true"
		}
		c.errorf(path, "%s: acks %s needs idempotent: false (%s); set idempotent: false or use acks: all", path, p.Acks, why)
	}
}

// faultPoints checks that each crash point a fault names exists in some
// variant's strategy: otherwise the fault can never fire.
func (c *checker) faultPoints() {
	var used []catalog.Strategy
	for _, v := range c.s.Variants {
		if st, ok := catalog.LookupStrategy(v.Strategy); ok {
			used = append(used, st)
		}
	}
	if len(used) == 0 {
		return
	}
	for i, f := range c.s.Faults {
		pp, ok := f.Params.(catalog.PointParams)
		if !ok || indexOf(pp.Point().Allowed(), string(pp.Point())) < 0 {
			continue
		}
		at := pp.Point()
		found := false
		for _, st := range used {
			found = found || st.HasPoint(at)
		}
		if found {
			continue
		}
		var with []string
		for _, st := range catalog.Strategies {
			if st.HasPoint(at) {
				with = append(with, string(st.Name))
			}
		}
		path := fmt.Sprintf("faults[%d].at", i)
		c.errorf(path, "%s: no variant's strategy has the crash point %s, so the fault never fires; add a variant with strategy %s, or pick another point",
			path, at, strings.Join(with, " or "))
	}
}

// safeNameRE is what a scenario or variant name may be: it names files
// (under --out), topics and consumer groups, so it must not be a path.
var safeNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`)

const safeNameHelp = `use 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit, without ".."`

// isSafeName reports whether name may name a scenario or a variant.
func isSafeName(name string) bool {
	return safeNameRE.MatchString(name) && !strings.Contains(name, "..")
}

// missing reports a required key that is absent (or null).
func (c *checker) missing(path, hint string) {
	key := path[len(parent(path)):]
	key = strings.TrimPrefix(key, ".")
	msg := fmt.Sprintf("missing required key %q; %s", key, hint)
	if p := parent(path); p != "" {
		msg = p + ": " + msg
	}
	if c.d.HasKey(path) {
		msg = fmt.Sprintf("%s: needs a value; %s", path, hint)
	}
	c.errorf(path, "%s", msg)
}

func (c *checker) positive(path string, d Duration) {
	if c.d.Has(path) && d <= 0 {
		c.errorf(path, "%s: must be more than 0s, got %s", path, d)
	}
}

// inRange reports n at path unless 1 <= n <= hi.
func (c *checker) inRange(path string, n, hi int) {
	if !c.d.Has(path) {
		return
	}
	if err := checkRange(n, 1, hi); err != nil {
		c.errorf(path, "%s: %v", path, err)
	}
}

// oneOf reports value at path unless it is one of allowed.
func (c *checker) oneOf(path, value string, allowed []string) bool {
	if indexOf(allowed, value) >= 0 {
		return true
	}
	c.errorf(path, "%s: %s is not allowed (allowed: %s)%s", path, echo(value), strings.Join(allowed, ", "), didYouMean(value, allowed))
	return false
}

// errorf reports a problem at path, unless path (or a place enclosing it)
// already has one: a key with the wrong type should not also be "missing".
func (c *checker) errorf(path, format string, args ...any) {
	if c.d.Reported(path) {
		return
	}
	c.d.ErrorAt(path, fmt.Sprintf(format, args...))
}

func orDefault(d, def Duration) Duration {
	if d == 0 {
		return def
	}
	return d
}

func orDefaultInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// everyTooLarge says why a fault that fires on one intent in every n
// cannot teach anything in a run of fewer intents.
func everyTooLarge(fp string, every, messages int) string {
	return fmt.Sprintf("%s.every: %d is more than the run's %d messages: the fault fires on one intent in every %d, so at most once and most likely never; use every: %d or less, or probability: P",
		fp, every, messages, every, messages)
}

// CheckEvery checks the faults' every against n messages given outside
// the file (--messages).
func (s *Scenario) CheckEvery(n int) error {
	for i, f := range s.Faults {
		if f.Every > n {
			return fmt.Errorf("%s:%d: %s", s.File, f.Line, everyTooLarge(fmt.Sprintf("faults[%d]", i), f.Every, n))
		}
	}
	return nil
}

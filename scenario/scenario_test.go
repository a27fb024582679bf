package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/strictyaml"
	"github.com/dqbench/dqbench/scenarios"
)

type fixture struct {
	file string
	want []string
}

// fixtures drives every file in testdata: a valid file must parse; an
// invalid one must fail with exactly the listed problems, in order, each
// written "LINE:COL: message" (the file path is prefixed by the test).
var fixtures = []fixture{
	{file: "valid/minimal.yaml"},
	{file: "valid/full.yaml"},
	{file: "valid/external.yaml"},
	{file: "valid/merge-keys.yaml"},
	{file: "valid/rabbitmq.yaml"},
	{file: "valid/nats-managed-failover.yaml"},
	{file: "valid/process.yaml"},
	{file: "valid/process-nats.yaml"},
	{file: "valid/sweep-expect.yaml"},
	{file: "valid/nats-tls.yaml"},
	{file: "valid/rabbitmq-tls.yaml"},

	{"invalid/unquoted-comparison.yaml", []string{
		`8:13: YAML syntax error: invalid header option: "0"; a value that starts with > or | must be quoted: write a comparison as lost: ">0"`,
	}},
	{"invalid/every-above-messages.yaml", []string{
		`6:64: faults[0].every: 11 is more than the run's 10 messages`,
	}},
	{"invalid/unknown-top-key.yaml", []string{
		`5:1: unknown key "varients" at the top level (allowed: version, name, description, seed, messages, deadline, drain, broker, producer, consumer, store, redis, faults, variants, stage); did you mean "variants"?`,
	}},
	{"invalid/unknown-nested-key.yaml", []string{
		`7:5: unknown key "stratgies" in variants[0] (allowed: name, strategy, producer, consumer, store, id, effect, expect, sweep_expect, varies, stage, process, audit, kafka, mqtt, rabbitmq, nats); did you mean "strategy"?`,
	}},
	{"invalid/unknown-strategy.yaml", []string{
		`7:15: variants[0].strategy: "dedup-tabel" is not allowed (allowed: ` + strings.Join(catalog.StrategyNames(), ", ") + `); did you mean "dedup-table"?`,
	}},
	{"invalid/producer-app-crash-without-pattern.yaml", []string{
		`5:36: faults[0].at: no variant's producer.pattern is outbox, the only pattern with the point after-publish-before-mark, so the fault never fires; add producer: {pattern: outbox} to a variant, or pick another point`,
		`7:5: faults[2]: producer-app-crash needs at: where the producer application dies: between-write-and-publish (producer.pattern dual-write: its business row committed and the publish never sent) or after-publish-before-mark (producer.pattern outbox: the relay had the broker's confirm and had not marked the outbox row sent) (allowed: between-write-and-publish, after-publish-before-mark)`,
		`10:54: variants[1].producer.pattern: "outbx" is not allowed (allowed: direct, dual-write, outbox); did you mean "outbox"?`,
	}},
	{"invalid/producer-outbox-relay-keys.yaml", []string{
		`4:37: producer.window: the outbox relay (producer.pattern outbox) does not use it: it publishes one row at a time and publishes a row again on its next pass until the broker confirms it; remove window, or set it only where the pattern is direct or dual-write`,
		`6:55: variants[0].producer.retries: the outbox relay (producer.pattern outbox) does not use it: it publishes one row at a time and publishes a row again on its next pass until the broker confirms it; remove retries, or set it only where the pattern is direct or dual-write`,
	}},
	{"invalid/wrong-type.yaml", []string{
		`3:11: messages: must be an integer, got string "many"`,
	}},
	{"invalid/missing-version.yaml", []string{
		"1:1: missing required key \"version\"; add `version: 1` as the first line",
	}},
	{"invalid/missing-variants.yaml", []string{
		`1:1: missing required key "variants"; add at least one variant`,
	}},
	{"invalid/empty-variants.yaml", []string{
		`5:11: variants: is empty; add at least one variant`,
	}},
	{"invalid/duplicate-variant-names.yaml", []string{
		`8:11: variants[1].name: "same" is already the name of variants[0]; variant names must be unique`,
	}},
	{"invalid/every-and-probability.yaml", []string{
		`8:18: faults[0]: set only one of every and probability, not both`,
	}},
	{"invalid/no-schedule.yaml", []string{
		`6:5: faults[0]: needs a schedule: add every: N`,
	}},
	{"invalid/at-on-produce-response-lost.yaml", []string{
		`8:5: faults[0].at: produce-response-lost takes no at (only ` + strings.Join(new(Fault).ParamOwners("at"), ", ") + ` does); remove it`,
	}},
	{"invalid/urls-out-of-range.yaml", []string{
		`6:15: broker.addresses[0]: "amqp://u:***@127.0.0.1:99999/" is not an AMQP URL (amqp://USER:PASSWORD@HOST:PORT/VHOST): port 99999 is not from 1 to 65535 (e.g. "amqp://guest:guest@127.0.0.1:5672/")`,
		`6:46: broker.addresses[1]: "amqp://u:***@:5672/" is not an AMQP URL (amqp://USER:PASSWORD@HOST:PORT/VHOST): no host (e.g. "amqp://guest:guest@127.0.0.1:5672/")`,
		`7:8: redis: "redis://127.0.0.1:99999": must be a redis://HOST:PORT URL (port 99999 is not from 1 to 65535), e.g. redis://127.0.0.1:6379`,
	}},
	{"invalid/ack-lost-mqtt-params-on-rabbitmq.yaml", []string{
		`5:41: faults[0].packet: only for broker kind mqtt (which acknowledgement, on which hop); on rabbitmq, ack-lost drops the consumer's acknowledgement: remove it`,
		`5:54: faults[0].leg: only for broker kind mqtt (which acknowledgement, on which hop); on rabbitmq, ack-lost drops the consumer's acknowledgement: remove it`,
	}},
	{"invalid/external-toxiproxy-amqp-faults.yaml", []string{
		`3:37: broker.toxiproxy: "ftp://127.0.0.1:8474" is not a toxiproxy API URL (http://HOST:8474)`,
		`5:12: faults[0].type: ack-lost parses AMQP frames inside dqbench's in-process toxiproxy, and broker.toxiproxy sends every connection through an external one, which runs only its own toxics; remove broker.toxiproxy or this fault`,
		`6:12: faults[1].type: confirm-lost parses AMQP frames inside dqbench's in-process toxiproxy, and broker.toxiproxy sends every connection through an external one, which runs only its own toxics; remove broker.toxiproxy or this fault`,
	}},
	{"invalid/mqtt-persistence-hides-nothing.yaml", []string{
		`5:16: broker.persistence: only with mode: managed (dqbench configures only the Mosquitto it starts); add mode: managed to broker or remove it`,
		`6:8: broker.qos: must be 0, 1 or 2, got 3`,
	}},
	{"invalid/process-build-flag.yaml", []string{
		`6:22: variants[0].process.build: "-toolexec=./x.sh" is not a package directory inside the scenario's folder; write ./DIR (e.g. ./cmd/consumer), without .., flags or an absolute path`,
		`9:22: variants[1].process.build: "../../elsewhere" is not a package directory inside the scenario's folder; write ./DIR (e.g. ./cmd/consumer), without .., flags or an absolute path`,
	}},
	{"invalid/effect.yaml", []string{
		`5:39: variants[0].effect: create is unique-key's effect (the row its key protects), not none's; use append for a plain insert, or strategy: unique-key`,
		`6:46: variants[1].effect: "sett" is not allowed (allowed: increment, create, set, upsert, delete, append, call, call-with-key); did you mean "set"?`,
		`7:54: variants[2].balance: must be from 1 to 1,000,000,000, got 0`,
		`8:37: variants[3].balance: unique-key takes no balance (only conditional-update does); remove it`,
		`9:88: variants[4].effect: does not apply to a process variant (the process applies its own effects, counted by audit.query); remove it`,
	}},
	{"invalid/process-with-strategy-param.yaml", []string{
		`11:5: variants[0].retention: a process variant takes no retention (only dedup-table does); remove it`,
	}},
	{"invalid/crash-without-at.yaml", []string{
		`6:5: faults[0]: consumer-crash needs at: where the consumer dies (consumer-crash) or stalls (consumer-zombie) (allowed: ` + strings.Join(catalog.Strings(catalog.CrashPoints()), ", ") + `)`,
	}},
	{"invalid/crash-point-unused.yaml", []string{
		`7:9: faults[0].at: no variant's strategy has the crash point between-dedup-and-effect, so the fault never fires; add a variant with strategy dedup-table-split`,
	}},
	{"invalid/unknown-expect-key.yaml", []string{
		`9:7: unknown key "duplicate" in variants[0].expect (allowed: ` + strings.Join(check.CountNames(), ", ") + `); did you mean "duplicates"?`,
	}},
	{"invalid/bad-expectation.yaml", []string{
		`9:13: variants[0].expect.lost: bad expectation "about 3": write a count like 0, or a comparison like ">0"`,
	}},
	{"invalid/bad-sweep-expectation.yaml", []string{
		`9:19: variants[0].sweep_expect.duplicates: bad sweep expectation "> 0 in most runs": write a comparison and the runs it must hold in`,
		`10:13: variants[0].sweep_expect.lost: bad sweep expectation "== 0 in at least 0% of runs": the share of runs must be above 0% and at most 100%`,
		`11:16: variants[0].sweep_expect.effects: bad sweep expectation ">0 in at least 101%": the share of runs must be above 0% and at most 100%`,
		`12:7: unknown key "dupes" in variants[0].sweep_expect (allowed: attempted,`,
		`13:20: variants[0].sweep_expect.redelivered: must be a comparison and the runs it must hold in`,
	}},
	{"invalid/bad-duration.yaml", []string{
		`3:11: deadline: bad duration "1 minute": write a duration such as "30s", "2m" or "1m30s"`,
		`4:8: drain: must be a duration such as "30s", "2m" or "1m30s" (units: ms, s, m, h), got integer 10; add a unit, e.g. 10s`,
	}},
	{"invalid/external-without-addresses.yaml", []string{
		`5:9: broker: mode external needs addresses`,
	}},
	// Values a dial would only refuse at run time (#41, item 3).
	{"invalid/runtime-only-addresses.yaml", []string{
		`3:51: broker.addresses[0]: "127.0.0.1:0" is not host:port: port 0 is not from 1 to 65535`,
		`3:66: broker.addresses[1]: "127.0.0.1:65536" is not host:port: port 65536 is not from 1 to 65535`,
		`3:85: broker.addresses[2]: "bad host:9092" is not host:port: the host "bad host" has a space in it`,
	}},
	{"invalid/rabbitmq-tls-plain.yaml", []string{
		`3:70: broker.tls: TLS to rabbitmq is an address with amqps://, and broker.addresses[0] is amqp:// (plain); write amqps://`,
		`3:112: broker.auth.token_env: rabbitmq's clients cannot log in with token_env; it takes user, password_file, password_env`,
	}},
	{"invalid/leader-move-one-node.yaml", []string{
		`5:11: faults[0]: leader-move cannot act here: it hands each partition's leadership to another replica, and a one-node cluster has none; add brokers: 3 to the broker`,
	}},
	{"invalid/rabbitmq-address-and-mode.yaml", []string{
		`5:9: broker.mode: embedded is not supported for rabbitmq (supported: external, managed)`,
		`6:15: broker.addresses[0]: "127.0.0.1:5672" is not an AMQP URL`,
		`6:33: broker.addresses[1]: "amqp://guest:***@[::1" is not an AMQP URL`,
		`7:15: broker.queue_type: "lazy" is not allowed (allowed: classic, quorum)`,
	}},
	{"invalid/managed-failover-classic.yaml", []string{
		`6:14: broker.addresses: only used with mode: external`,
		`8:11: faults[0]: leader-failover cannot act here: it stops the leader of a quorum queue, and classic queues have none; add queue_type: quorum to the broker`,
	}},
	{"invalid/dead-letter-where-none.yaml", []string{
		`5:19: consumer.delivery_limit: RabbitMQ counts deliveries only on quorum queues (x-delivery-limit); set queue_type: quorum on the broker, or in the variant's rabbitmq`,
		`12:28: variants[0].consumer.on_failure: "drop" is not allowed (allowed: requeue, reject, retry-in-process, retry-queue)`,
	}},
	{"invalid/poison-on-kafka.yaml", []string{
		`5:15: consumer.on_failure: kafka cannot hand a failed delivery back (reject); use retry-in-process or leave it out`,
		`7:11: faults[0]: ack-lost cannot act here: on Kafka it drops the consumer's offset commit on its way to the broker, through the relays in front of a real Kafka; the embedded Kafka's clients reach kfake directly: use mode: managed or external`,
	}},
	{"invalid/retry-in-process-poison.yaml", []string{
		`5:15: consumer.on_failure: retry-in-process with a poison-message fault (faults[0]) retries for ever: a poison message fails every time; use requeue with a delivery_limit, or reject`,
		`11:12: faults[1].times: must be from 1 to 100, got 101`,
	}},
	{"invalid/max-length-on-kafka.yaml", []string{
		`5:15: producer.max_length: kafka queues have no length limit here; leave it out`,
		`9:26: variants[0].producer.overflow: "drop-tail" is not allowed (allowed: drop-head, reject-publish); did you mean "drop-head"?`,
	}},
	{"invalid/rabbitmq-durability.yaml", []string{
		`5:10: broker.nodes: only with mode: managed (the cluster dqbench starts)`,
		`7:12: broker.durable: a quorum queue is always durable (RabbitMQ refuses a transient one), and variant "none" has queue_type: quorum; use queue_type: classic for durable: false`,
		`9:11: faults[0]: broker-restart cannot act here: it restarts a broker process dqbench started`,
	}},
	{"invalid/rabbitmq-durability-on-kafka.yaml", []string{
		`5:13: producer.confirms: RabbitMQ's delivery mode and publisher confirms; broker kind kafka has neither key: leave it out`,
		`9:28: variants[0].producer.persistent: RabbitMQ's delivery mode and publisher confirms; broker kind kafka has neither key: leave it out`,
		`12:15: variants[1].rabbitmq: only for broker kind rabbitmq, not kafka; remove it`,
	}},
	{"invalid/rabbitmq-restart-cluster.yaml", []string{
		`5:11: faults[0]: broker-restart cannot act here: it restarts the node of a single-node managed RabbitMQ, which every variant's queue is on; add nodes: 1 to the broker`,
		`10:45: variants[0].rabbitmq.durable: a quorum queue is always durable`,
	}},
	{"invalid/rabbitmq-consumer-timeout-external.yaml", []string{
		`5:21: broker.consumer_timeout: only with mode: managed: it is a broker-wide setting (rabbitmq.conf)`,
		`7:11: faults[0]: slow-processing cannot act here: it needs a broker that delivers a message again when its consumer holds it too long while still connected`,
	}},
	{"invalid/rabbitmq-slow-without-timeout.yaml", []string{
		`3:59: broker.consumer_timeout: must be more than 0s, got 0s`,
		`5:11: faults[0]: slow-processing cannot act here: it holds a delivery past the broker's consumer_timeout, which is 30 minutes unless set; add consumer_timeout (e.g. 2s) to the broker`,
	}},
	{"invalid/rabbitmq-dlq-missing.yaml", []string{
		`4:31: consumer.dead_letter_queue: variant "requeue" refuses nothing for good (on_failure: reject) and retries nothing through a wait queue (on_failure: retry-queue), so no dead-letter queue of it to leave out; add on_failure: reject or retry-queue, or remove this key`,
		`10:74: variants[1].consumer.dead_letter_queue: variant "limit" has a delivery_limit: the run would wait for its requeued messages to be dead-lettered`,
	}},
	{"invalid/rabbitmq-retry-queue.yaml", []string{
		`10:28: variants[0].consumer.on_failure: retry-queue with a poison-message fault (faults[0]) retries for ever, once every retry_delay: a poison message fails every time; use reject, or fail-once for a transient failure`,
		`10:54: variants[0].consumer.retry_delay: 5s is not shorter than the drain (2s): the drain would give up while failed messages wait; raise drain or lower retry_delay`,
		`13:29: variants[1].consumer.retry_delay: the wait of on_failure: retry-queue, and variant "no-retry" does not retry through a wait queue; add on_failure: retry-queue, or remove this key`,
		`13:58: variants[1].consumer.dead_letter_overflow: what a full dead-letter target does, and variant "no-retry" does not bound it; add dead_letter_max_length, or remove this key`,
		`16:28: variants[2].consumer.on_failure: variant "limit" has a delivery_limit, which would dead-letter into the wait queue too; use one of them`,
		`16:84: variants[2].consumer.dead_letter_max_length: variant "limit" leaves the queue it would bound out (dead_letter_queue: false); remove one of the two keys`,
		`16:106: variants[2].consumer.dead_letter_queue: variant "limit" has a delivery_limit: the run would wait for its requeued messages to be dead-lettered; leave the dead-letter queue out only with on_failure: reject and no delivery_limit`,
		`19:28: variants[3].consumer.on_failure: variant "early-ack" acks before processing (ack: before-process): a failed delivery is gone already, nothing to retry; use ack: after-process`,
		`19:75: variants[3].consumer.retry_delay: must be from 1ms to 1m, got 0s`,
		`22:61: variants[4].consumer.dead_letter_max_length: variant "nothing-dead-lettered" dead-letters nothing (no on_failure: reject or retry-queue, no delivery_limit); add one, or remove this key`,
	}},
	{"invalid/retry-queue-on-nats.yaml", []string{
		`4:24: consumer.on_failure: retry-queue is RabbitMQ's delayed retry (a dead-letter exchange and a wait queue with a TTL); broker kind nats has none: use requeue or retry-in-process`,
		`4:61: consumer.dead_letter_max_length: bounds the queue a RabbitMQ dead-letter exchange routes to; broker kind nats has none: leave it out`,
	}},
	{"invalid/auto-ack-on-kafka.yaml", []string{
		`5:8: consumer.ack: auto (the broker acks on delivery) is only for rabbitmq, nats, not kafka; use before-process`,
		`9:21: variants[0].consumer.ack: auto (the broker acks on delivery) is only for rabbitmq, nats, not kafka`,
	}},
	{"invalid/auto-commit.yaml", []string{
		`5:25: consumer.auto_commit_interval: at least 100ms (the least kgo takes), got 10ms`,
		`9:28: variants[0].consumer.processing: only with commit: auto (the client's auto-commit), and no variant it applies to has it; add commit: auto to the consumer, or remove processing`,
		`12:24: variants[1].consumer.commit: faults[0] (ack-lost) drops dqbench's own offset commits, and with commit: auto the client commits by itself, so it would never fire in variant "ack-first"; remove commit: auto from it, or the fault`,
		`12:35: variants[1].consumer.ack: with commit: auto the client commits by itself (the records of the polls before the latest), whatever ack says; remove ack`,
		`15:24: variants[2].consumer.commit: faults[0] (ack-lost) drops dqbench's own offset commits, and with commit: auto the client commits by itself, so it would never fire in variant "slow-interval"; remove commit: auto from it, or the fault`,
		`15:52: variants[2].consumer.auto_commit_interval: at most 1m0s (a commit must come within the drain), got 2m0s`,
		`15:68: variants[2].consumer.processing: "asynch" is not allowed (allowed: sync, async); did you mean "async"?`,
		`15:93: variants[2].consumer.processing_time: from more than 0s to 1s, got 2s`,
		`17:11: faults[0]: ack-lost cannot act here: on Kafka it drops the consumer's offset commit on its way to the broker, through the relays in front of a real Kafka; the embedded Kafka's clients reach kfake directly: use mode: managed or external`,
	}},
	{"invalid/auto-commit-on-rabbitmq.yaml", []string{
		`5:11: consumer.commit: only for broker kind kafka, not rabbitmq`,
		`9:28: variants[0].consumer.processing: only for broker kind kafka, not rabbitmq`,
	}},
	{"invalid/nats-settings.yaml", []string{
		`5:12: broker.storage: "disk" is not allowed (allowed: file, memory)`,
		`6:13: broker.replicas: must be from 1 to 5, got 0`,
		`7:13: broker.ack_wait: must be a duration such as "30s", "2m" or "1m30s" (units: ms, s, m, h), got integer 30; add a unit, e.g. 30s`,
		`8:11: broker.msg_id: "uuid" is not allowed (allowed: none, business, per-send-uuid)`,
		`9:16: broker.max_deliver: must be from -1 to 1,000, got -2`,
		`10:21: broker.duplicate_window: must be more than 0s, got -1s`,
	}},
	{"invalid/nats-consumer-side.yaml", []string{
		`3:27: broker.ack: "double" is not allowed (allowed: sync, plain)`,
		`4:28: consumer.delivery_limit: NATS counts deliveries with the broker's max_deliver`,
		`6:41: faults[0].packet: only for broker kind mqtt (which acknowledgement, on which hop); on nats, ack-lost drops the consumer's acknowledgement: remove it`,
		`8:43: variants[0].nats.ack: "async" is not allowed (allowed: sync, plain); did you mean "sync"?`,
	}},
	{"invalid/slow-processing-on-rabbitmq.yaml", []string{
		`5:12: faults[0]: slow-processing cannot act here: it needs a broker that delivers a message again when its consumer holds it too long while still connected (NATS JetStream's ack_wait, RabbitMQ's consumer_timeout); use broker kind: nats, or kind: rabbitmq, mode: managed with consumer_timeout`,
	}},
	{"invalid/nats-address.yaml", []string{
		`6:15: broker.addresses[0]: "tcp://127.0.0.1:4222" is not a NATS URL (nats://HOST:PORT, or tls://HOST:PORT for TLS) (e.g. "nats://127.0.0.1:4222")`,
		`6:39: broker.addresses[1]: "nats://127.0.0.1" is not a NATS URL (nats://HOST:PORT, or tls://HOST:PORT for TLS): no port`,
	}},
	{"invalid/tls-settings.yaml", []string{
		`5:8: broker.tls: only with mode: external; the nats broker dqbench runs itself (mode: embedded) speaks plain TCP`,
		`5:15: broker.tls.cert: a client certificate needs both cert and key (PEM files); add key`,
		`6:9: broker.auth: only with mode: external`,
		`6:9: broker.auth: log in one way, not user and token`,
		`6:58: broker.auth.password_env: give the password one way: password_file or password_env, not both`,
	}},
	{"invalid/mqtt-tls.yaml", []string{
		`7:8: broker.tls: TLS to mqtt is an address with ssl:// (or mqtts://), and broker.addresses[0] is tcp:// (plain)`,
		`9:12: faults[0].type: ack-lost cannot act over TLS`,
		`11:55: variants[0].mqtt.auth: TLS and the login are the broker's, for every variant; write auth in broker`,
	}},
	{"invalid/tls-on-kafka.yaml", []string{
		`6:8: broker.tls: only with mode: external; the kafka broker dqbench runs itself (mode: managed) speaks plain TCP`,
		`7:9: broker.auth: only with mode: external`,
		`7:21: broker.auth.mechanism: a SASL mechanism logs a user in; add user`,
	}},
	{"invalid/kafka-secured.yaml", []string{
		`9:12: faults[0].type: connection-reset cannot act on a Kafka reached with TLS or a SASL login`,
		`12:5: variants[0]: client kafka-go has no TLS or SASL in dqbench yet`,
	}},
	{"invalid/tls-protocol-faults.yaml", []string{
		`8:12: faults[0].type: confirm-lost cannot act over TLS: dqbench's in-process proxy reads the broker's protocol`,
		`9:12: faults[1].type: ack-lost cannot act over TLS`,
		`13:14: variants[1].process: a process variant cannot run over TLS`,
	}},
	{"invalid/nats-ack-wait.yaml", []string{
		`5:11: faults[0]: consumer-crash: a consumer killed with unacked messages gets them back from NATS only after ack_wait (30s), and the drain gives up after 10s without progress; set broker ack_wait below drain`,
	}},
	{"invalid/nats-ack-wait-set.yaml", []string{
		`4:32: broker.ack_wait: 5s: a consumer killed with unacked messages gets them back from NATS only after ack_wait (5s), and the drain gives up after 5s`,
	}},
	{"invalid/nats-failover.yaml", []string{
		`3:46: broker.replicas: 3 replicas need a JetStream cluster, and the embedded server is one node; use mode: managed`,
		`5:11: faults[0]: leader-failover cannot act here: it stops a node of the local cluster dqbench manages; use broker kind: rabbitmq, mode: managed, queue_type: quorum, or kind: nats, mode: managed, replicas: 3`,
	}},
	{"invalid/nats-duplicate-window.yaml", []string{
		`3:40: broker.duplicate_window: must be at least 100ms (JetStream refuses a shorter duplicate window), got 50ms`,
		`5:60: variants[0].nats.duplicate_window: must be at least 100ms (JetStream refuses a shorter duplicate window), got 99ms; leave the key out for the broker's`,
		`6:63: variants[1].nats.duplicate_window: must be at least 100ms (JetStream refuses a shorter duplicate window), got -1s; leave the key out for the broker's`,
		`7:59: variants[2].nats.duplicate_window: must be at least 100ms (JetStream refuses a shorter duplicate window), got 0s; leave the key out for the broker's`,
	}},
	{"invalid/nats-managed-replicas.yaml", []string{
		`3:47: broker.replicas: 4 replicas need as many nodes, and the managed JetStream cluster has 3; use replicas: 3 (or 1), or mode: external with a cluster of 4 nodes or more`,
	}},
	{"invalid/process-nul.yaml", []string{
		`7:23: variants[0].process.command[1]: "-c\x00x" holds a NUL byte, which no program argument can carry; remove it`,
		`8:16: variants[0].process.env: the value of "A" holds a NUL byte, which no environment variable can carry; remove it`,
		`8:32: variants[0].process.env: the name "B\x00C" holds a NUL byte, which no environment variable can carry; remove it`,
		`8:44: variants[0].process.env: "D=E" is not a variable name: it must not be empty or hold =`,
	}},
	{"invalid/ack-faults-with-auto-ack.yaml", []string{
		`4:17: consumer.ack: ack-lost (faults[0]) cannot act in variant "auto": it drops the consumer's acknowledgement, and with ack: auto the broker takes a message as acked when it delivers it: there is none to lose; use consumer ack: after-process (or before-process)`,
		`4:17: consumer.ack: slow-processing (faults[1]) cannot act in variant "auto": it holds a delivery unacked past the broker's ack deadline, and with ack: auto the broker takes a message as acked when it delivers it: nothing is held unacked, nothing delivered again; use consumer ack: after-process (or before-process)`,
		`11:56: variants[2].consumer.ack: ack-lost (faults[0]) cannot act in variant "auto-again"`,
		`11:56: variants[2].consumer.ack: slow-processing (faults[1]) cannot act in variant "auto-again"`,
	}},
	{"invalid/nats-failover-replicas.yaml", []string{
		`5:11: faults[0]: leader-failover cannot act here: it fails a stream's leader over to a follower, and a stream needs replicas: 3`,
	}},
	{"invalid/rabbitmq-failover-step-down.yaml", []string{
		`7:10: faults[0].how: step-down is a NATS stream's ($JS.API.STREAM.LEADER.STEPDOWN); on rabbitmq, leader-failover kills the leader's node`,
	}},
	{"invalid/addresses-without-external.yaml", []string{
		`5:14: broker.addresses: only used with mode: external`,
	}},
	{"invalid/syntax-error.yaml", []string{
		`7:15: YAML syntax error: sequence end token ']' not found`,
	}},
	{"invalid/mqtt-settings.yaml", []string{
		`5:24: broker.max_queued_messages: only with mode: managed (dqbench configures only the Mosquitto it starts); add mode: managed to broker or remove it`,
		`7:5: faults[0]: missing required key "packet"; on MQTT, ack-lost needs packet: one of PUBACK, PUBREC, PUBREL, PUBCOMP`,
		`7:5: faults[0]: missing required key "leg"; on MQTT, ack-lost needs leg: one of publisher, subscriber`,
		`8:39: faults[1].leg: "sideways" is not allowed (allowed: publisher, subscriber)`,
		`10:43: variants[0].mqtt.qos: must be 0, 1 or 2, got 3`,
		`10:54: variants[0].mqtt.client: "pahoo" is not allowed (allowed: paho, paho.golang); did you mean "paho"?`,
	}},
	{"invalid/mqtt-shared-managed.yaml", []string{
		`5:14: consumer.instances: 3 instances share one MQTT subscription ($share) only with mode: embedded, not managed (dqbench tracks each shared session's packets in the embedded broker); use mode: embedded or instances: 1`,
		`8:53: variants[1].consumer.instances: 2 instances share one MQTT subscription ($share) only with mode: embedded, not managed (dqbench tracks each shared session's packets in the embedded broker); use mode: embedded or instances: 1`,
		`10:46: variants[3].mqtt.retain: only with mode: embedded, not managed (retained messages outlive the run on a broker dqbench does not start, and the managed Mosquitto's backlog is counted on the clients, which a retained copy would fool); use mode: embedded or remove it`,
	}},
	{"invalid/mqtt-session-expiry.yaml", []string{
		`3:54: broker.session_expiry: must be whole seconds from 1s to 1h0m0s (the broker counts it in seconds), got 1.5s`,
		`5:61: faults[0].at_least: must be from 0 to 8s (a consumer refused longer stops retrying), got 20s`,
		`8:55: variants[1].mqtt.session_expiry: a session expiry is MQTT 5's (a CONNECT property), and variants[1]'s client is paho (MQTT 3.1.1); add client: paho.golang`,
		`9:100: variants[2].mqtt.session_expiry: variants[2] has clean_session: true, whose session ends with the connection (expiry 0); use clean_session: false`,
	}},
	{"invalid/mqtt-shared-offline.yaml", []string{
		`5:12: faults[0].type: subscriber-offline takes the variant's one consumer session offline, and variants[1].consumer.instances is 2 (a shared subscription, one session per instance); with instances above 1 use the other faults that act on embedded MQTT (consumer-crash, consumer-zombie, ack-lost, disconnect, fail-once, producer-app-crash), or instances: 1`,
	}},
	{"invalid/mqtt-on-kafka.yaml", []string{
		`5:12: faults[0]: ack-lost cannot act here: on Kafka it drops the consumer's offset commit on its way to the broker, through the relays in front of a real Kafka; the embedded Kafka's clients reach kfake directly: use mode: managed or external`,
		`7:37: variants[0].mqtt: only for broker kind mqtt, not kafka; remove it`,
	}},
	{"invalid/bad-broker-kind.yaml", []string{
		`6:9: broker.kind: "rabbit" is not allowed (allowed: kafka, rabbitmq, mqtt, nats); did you mean "rabbitmq"?`,
	}},
	{"invalid/acks-need-non-idempotent.yaml", []string{
		`6:9: producer.acks: acks leader needs idempotent: false (Kafka's idempotent producer requires acks all, and idempotent defaults to true)`,
		`18:13: variants[2].producer.acks: acks none needs idempotent: false`,
	}},
	{"invalid/id-from-broker.yaml", []string{
		`7:9: variants[0].id: delivery-tag: broker kind kafka has none (it comes from the broker: allowed on rabbitmq, mqtt, nats); use business, per-send-uuid or content-hash`,
	}},
	{"invalid/out-of-range.yaml", []string{
		`3:11: messages: must be from 1 to 10,000,000, got -5`,
		`6:15: broker.partitions: must be from 1 to 1,000, got 0`,
		`8:13: consumer.prefetch: must be from 1 to 100,000, got -1`,
		`11:18: faults[0].probability: must be more than 0 and at most 1, got 1.5`,
	}},
	{"invalid/too-large.yaml", []string{
		`3:11: messages: must be from 1 to 10,000,000, got 1,000,000,000,000`,
		`4:11: deadline: must be at most 24h0m0s, got 48h0m0s`,
		`7:15: broker.partitions: must be from 1 to 1,000, got 4,294,967,297`,
		`9:11: producer.window: must be from 1 to 100,000, got 100,001`,
		`11:14: consumer.instances: must be from 1 to 64, got 9,223,372,036,854,775,807`,
		`12:13: consumer.prefetch: must be from 1 to 100,000, got 100,001`,
		`15:12: faults[0].every: must be from 1 to 10,000,000, got 10,000,001`,
		`16:18: faults[0].max_attempt: must be from 1 to 1,000, got 1,001`,
		`20:27: variants[0].consumer.instances: must be from 1 to 64, got 65`,
	}},
	{"invalid/duplicate-fault-names.yaml", []string{
		`9:5: faults[1]: name "consumer-crash@before-process" is already used by faults[0]`,
	}},
	{"invalid/drain-too-long.yaml", []string{
		`3:11: drain (10s) must be shorter than deadline (5s)`,
	}},
	{"invalid/many-problems.yaml", []string{
		`1:10: version: 2 is not supported; this dqbench reads version 1`,
		`2:7: name: must not be empty`,
		`4:9: broker.kind: "rabbit" is not allowed (allowed: kafka, rabbitmq, mqtt, nats)`,
		`8:15: producer.idempotent: must be true or false, got string "no"`,
		`10:8: consumer.ack: "before" is not allowed (allowed: after-process, before-process, auto)`,
		`12:5: variants[0]: missing required key "name"`,
		`14:13: variants[0].expect.lost: bad expectation "-1"`,
	}},
	{"invalid/not-a-mapping.yaml", []string{
		`1:1: a scenario must be a mapping (keys: version, name,`,
	}},
	{"invalid/empty.yaml", []string{
		`1:1: empty scenario: start with version: 1`,
	}},
	{"invalid/two-documents.yaml", []string{
		`9:1: a second YAML document (after ---): a file holds one scenario`,
	}},
	{"invalid/two-documents-and-more.yaml", []string{
		`4:9: broker.kind: "kafak" is not allowed (allowed: kafka, rabbitmq, mqtt, nats); did you mean "kafka"?`,
		`9:1: a second YAML document (after ---): a file holds one scenario`,
	}},
	{"invalid/duplicate-keys.yaml", []string{
		`4:1: duplicate key "messages" at the top level (first on line 3); remove one of them`,
		`5:23: duplicate key "kind" in broker (first on line 5); remove one of them`,
		`8:15: variants[0].strategy: "nope" is not allowed`,
	}},
	{"invalid/merge-loop.yaml", []string{
		`5:7: broker: a merge key (<<) refers to the mapping it is in`,
	}},
	{"invalid/wrong-types.yaml", []string{
		`1:10: version: must be an integer, got string "1"`,
		`2:7: name: must be a string, got integer 12 (put it in quotes: "12")`,
		`3:7: seed: 99999999999999999999999 is too large`,
		`6:15: broker.partitions: must be an integer, got number 1.5`,
		`9:18: faults[0].probability: must be a finite number, got number .nan`,
		`14:19: variants[0].producer.idempotent: must be true or false, got string "yes"`,
		`15:15: variants[0].consumer: must be a mapping (keys: instances, ack, prefetch, isolation, commit, auto_commit_interval, processing, processing_time, on_failure, delivery_limit, dead_letter_queue, retry_delay, dead_letter_max_length, dead_letter_overflow), got a list`,
		`17:7: variants[0].expect.lost: needs a value; write a count like 0`,
	}},
	{"invalid/response-lost-with-acks-none.yaml", []string{
		`6:9: producer.acks: produce-response-lost (faults[0]) cannot act in variant "none": with acks: none the broker sends no response to lose; use acks: all or leader`,
	}},
	{"invalid/bad-store.yaml", []string{
		`3:8: store: "mysql://root@127.0.0.1/test": mysql:// is not a store this build knows (use sqlite or postgres://USER@HOST:PORT/DATABASE)`,
		`4:8: redis: "127.0.0.1:6379": must be a redis://HOST:PORT URL, e.g. redis://127.0.0.1:6379`,
		`7:38: variants[0].store: "postgres:///test": a PostgreSQL URL needs a host`,
		`8:38: variants[1].store: "sqlite3": must be sqlite or a postgres://USER@HOST:PORT/DATABASE URL`,
	}},
	{"invalid/strategy-params.yaml", []string{
		`5:45: variants[0].effect: "add" is not allowed (allowed: increment, create, set, upsert, delete, append, call, call-with-key)`,
		`6:38: variants[1].ttl: dedup-table takes no ttl (only redis-setnx does); remove it`,
		`7:49: variants[2].retention: must be more than 0s, got -1s`,
		`8:43: variants[3].ttl: must be more than 0s, got 0s`,
	}},
	{"invalid/process.yaml", []string{
		`5:31: faults[0].at: "commmit" is not allowed (allowed: delivery, commit, ack); did you mean "commit"?`,
		`8:15: variants[0]: set either strategy (a built-in consumer) or process (your own consumer), not both`,
		`9:38: variants[0].process: set only one of command and build, not both`,
		`11:5: variants[1]: missing required key "audit"; add audit: {query: SELECT message_id, COUNT(*) FROM TABLE GROUP BY message_id}`,
		`12:14: variants[1].process: needs command: [PROGRAM, ARGS...] or build: ./PACKAGE`,
		`12:26: variants[1].process.instances: must be from 1 to 64, got 0`,
		`12:50: variants[1].process.env: DQBENCH_TOPIC is set by dqbench`,
		`15:12: variants[2].audit: only a process variant is audited by a query; remove audit or add process`,
	}},
	{"invalid/process-rabbitmq-commit.yaml", []string{
		`5:31: faults[0].at: commit is not a kill point on rabbitmq; use delivery or ack`,
	}},
	{"invalid/process-mqtt-instances.yaml", []string{
		`5:31: faults[0].at: commit is not a kill point on mqtt; use delivery or ack`,
		`8:51: variants[0].process.instances: on MQTT the consumer is one persistent session`,
	}},
	{"invalid/process-nats-commit.yaml", []string{
		`5:31: faults[0].at: commit is not a kill point on nats; use delivery or ack`,
	}},
	{"invalid/kill-without-process.yaml", []string{
		`5:12: faults[0]: consumer-kill kills consumer processes, and no variant has one`,
	}},
	{"invalid/unknown-alias.yaml", []string{
		`3:9: broker: unknown alias *nope`,
	}},
	{"invalid/stage-faults-without-stage.yaml", []string{
		`6:12: faults[1].type: transaction-abort needs a transactional stage, and no variant has one`,
		`8:71: variants[0].stage.batch: must be from 1 to 10,000, got 0`,
	}},
	{"invalid/kafka-go-idempotent.yaml", []string{
		`6:56: variants[0].producer.client: kafka-go cannot be idempotent: kafka-go has no idempotent producer and no transactions (its writer always sends producer id -1), and idempotent defaults to true`,
		`6:56: variants[0].producer.client: kafka-go cannot carry a transactional stage`,
		`7:62: variants[1].producer.client: kafka-go cannot carry a transactional stage`,
	}},
	{"invalid/producer-transactional.yaml", []string{
		`6:60: variants[0].producer.transactional_id: "bad id" is not a transactional id: 1 to 200 letters, digits, '.', '_' or '-'`,
		`6:60: variants[0].producer.transactional_id: a transactional producer is always idempotent; remove idempotent: false or the transactional_id`,
		`7:60: variants[1].producer.transactional_id: a transactional producer is always idempotent`,
		`7:60: variants[1].producer.transactional_id: kafka-go has no idempotent producer and no transactions (its writer always sends producer id -1); use client: franz-go`,
		`7:76: variants[1].producer.client: producer-crash (faults[0]) kills a franz-go producer client and starts a new one; use client: franz-go`,
		`8:60: variants[2].producer.transactional_id: a transactional producer in front of a stage is not supported in this build`,
		`9:48: variants[3].producer.acks: producer-crash (faults[0]) cannot act in variant "d": with acks: none the producer waits for no response, so it has nothing unconfirmed to resend; use acks: all or leader`,
	}},
	{"invalid/producer-crash-on-rabbitmq.yaml", []string{
		`4:30: producer.transactional_id: only for broker kind kafka, not rabbitmq`,
		`5:17: faults[0]: producer-crash cannot act here: it sees a Kafka produce request (inside the embedded kfake, or in dqbench's Kafka protocol filter in front of a real Kafka) and kills the client that sent it; use broker kind: kafka`,
	}},
	{"invalid/producer-backoff.yaml", []string{
		`4:21: producer.backoff: a backoff spaces out retries, and variant "d" has none; add retries: N (1 or more)`,
		`6:63: variants[0].producer.backoff: needs delay: the wait before the first retry, e.g. delay: 500ms`,
		`6:76: variants[0].producer.backoff.multiplier: only with policy: exponential`,
		`6:87: variants[0].producer.backoff.jitter: must be from 0 to 1 (the fraction of each wait drawn at random), got 1.5`,
		`7:101: variants[1].producer.backoff.max: 10ms is below delay 1s; the cap must be at least the first wait`,
		`7:119: variants[1].producer.backoff.multiplier: must be from 1 to 10, got 0.5`,
		`8:72: variants[2].producer.backoff.policy: "linear" is not allowed (allowed: fixed, exponential)`,
	}},
	{"invalid/network-producer.yaml", []string{
		`6:33: faults[0].connection: on the producer's connection, latency watches for the broker's confirm with a filter inside dqbench's in-process toxiproxy, and broker.toxiproxy sends every connection through an external one, which runs only its own toxics; remove broker.toxiproxy or use connection: consumer`,
		`7:42: faults[1].connection: "sideways" is not allowed (allowed: consumer, producer, both)`,
		`8:35: faults[2].connection: on the producer's connection, partition watches for the broker's confirm with a filter inside dqbench's in-process toxiproxy`,
	}},
	{"invalid/leader-move-one-broker.yaml", []string{
		`5:12: faults[0].type: leader-move needs at least 2 brokers to move leaders between; add brokers: 3 to the broker`,
	}},
	{"invalid/rabbitmq-overrides.yaml", []string{
		`6:91: variants[1].consumer.delivery_limit: RabbitMQ counts deliveries only on quorum queues (x-delivery-limit); set queue_type: quorum on the broker, or in the variant's rabbitmq`,
		`7:54: variants[2].rabbitmq.queue_type: "stream" is not allowed (allowed: classic, quorum)`,
	}},
	{"invalid/nats-overrides.yaml", []string{
		`5:37: variants[0].nats: only for broker kind nats, not kafka; remove it`,
		`6:37: variants[1].nats: only for broker kind nats, not kafka; remove it`,
		`6:46: variants[1].nats.msg_id: "uuid" is not allowed (allowed: none, business, per-send-uuid)`,
	}},
	{"invalid/rabbitmq-on-kafka.yaml", []string{
		`5:41: variants[0].rabbitmq: only for broker kind rabbitmq, not kafka; remove it`,
	}},
	{"invalid/stage-on-rabbitmq.yaml", []string{
		`4:8: stage: a consume-transform-produce stage runs on Kafka only`,
		`5:23: consumer.isolation: only for broker kind kafka, not rabbitmq`,
	}},
}

func TestFixtures(t *testing.T) {
	for _, tc := range fixtures {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			s, err := Load(path)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if s.File != path || len(s.Source) == 0 {
					t.Errorf("File = %q, len(Source) = %d", s.File, len(s.Source))
				}
				return
			}
			if err == nil {
				t.Fatalf("Load succeeded; want %d problem(s)", len(tc.want))
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, want Errors: %v", err, err)
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d problem(s), want %d:\n%v", len(errs), len(tc.want), err)
			}
			for i, want := range tc.want {
				if got := errs[i].Error(); !strings.HasPrefix(got, path+":"+want) {
					t.Errorf("problem %d:\n got: %s\nwant: %s:%s...", i, got, path, want)
				}
			}
		})
	}
}

// TestFixturesListed keeps the table and testdata in step.
func TestFixturesListed(t *testing.T) {
	files, err := filepath.Glob("testdata/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rel, _ := filepath.Rel("testdata", f)
		listed := slices.ContainsFunc(fixtures, func(fx fixture) bool { return fx.file == filepath.ToSlash(rel) })
		if !listed {
			t.Errorf("%s is not in the fixtures table", f)
		}
	}
}

func TestDefaults(t *testing.T) {
	s, err := Load("testdata/valid/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Seed != 1 || s.Messages != 1000 || s.Deadline.D() != 2*time.Minute || s.Drain.D() != 10*time.Second {
		t.Errorf("seed %d, messages %d, deadline %s, drain %s", s.Seed, s.Messages, s.Deadline, s.Drain)
	}
	if b := s.Broker; b.Kind != "kafka" || b.Mode != "embedded" || b.Settings.(*catalog.KafkaSettings).Partitions != 1 || b.Addresses != nil {
		t.Errorf("broker = %+v", s.Broker)
	}
	p := s.Producer
	if p.Idempotent == nil || !*p.Idempotent || p.Acks != "all" || p.Window != 256 {
		t.Errorf("producer = %+v", p)
	}
	if s.Consumer != (Consumer{Instances: 1, Ack: "after-process", Prefetch: 100}) {
		t.Errorf("consumer = %+v", s.Consumer)
	}
	if len(s.Variants) != 1 || s.Variants[0].Line != 7 {
		t.Errorf("variants = %+v", s.Variants)
	}
}

func TestFull(t *testing.T) {
	s, err := Load("testdata/valid/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range s.Faults {
		names = append(names, f.Name)
	}
	wantNames := []string{"consumer-crash@before-process", "consumer-crash@between-dedup-and-effect", "lost-responses"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("fault names = %q, want %q", names, wantNames)
	}
	if f := s.Faults[0]; f.Line != 22 || f.MaxAttempt != 2 || f.Probability != 0.01 {
		t.Errorf("faults[0] = %+v", f)
	}
	if s.Faults[1].MaxAttempt != 1 {
		t.Errorf("faults[1].MaxAttempt = %d, want the default 1", s.Faults[1].MaxAttempt)
	}
	if s.Deadline.D() != 90*time.Second || s.Seed != 42 {
		t.Errorf("deadline %s, seed %d", s.Deadline, s.Seed)
	}

	none, dedup, split := s.Variants[0], s.Variants[1], s.Variants[2]
	if none.Line != 33 || dedup.Line != 38 {
		t.Errorf("variant lines %d, %d", none.Line, dedup.Line)
	}
	// The anchored expect is shared.
	for _, v := range []Variant{none, dedup} {
		if v.Expect["duplicates"] != (Expectation{"==", 0}) || v.Expect["lost"] != (Expectation{"==", 0}) {
			t.Errorf("%s expect = %v", v.Name, v.Expect)
		}
	}
	if got := split.Expect["duplicates"]; got != (Expectation{"<=", 5}) {
		t.Errorf("split duplicates = %v", got)
	}

	if p := s.ProducerFor(none); !p.IsIdempotent() || p.Acks != "all" || p.Window != 16 {
		t.Errorf("ProducerFor(none) = %+v", p)
	}
	if p := s.ProducerFor(split); p.IsIdempotent() || p.Acks != "leader" || p.Window != 1 {
		t.Errorf("ProducerFor(split) = %+v", p)
	}
	if c := s.ConsumerFor(dedup); c != (Consumer{Instances: 2, Ack: "after-process", Prefetch: 1}) {
		t.Errorf("ConsumerFor(dedup) = %+v", c)
	}
	if c := s.ConsumerFor(split); c != (Consumer{Instances: 2, Ack: "before-process", Prefetch: 10}) {
		t.Errorf("ConsumerFor(split) = %+v", c)
	}
	// ProducerFor returns a copy: changing it leaves the scenario alone.
	*s.ProducerFor(none).Idempotent = false
	if !*s.Producer.Idempotent {
		t.Error("ProducerFor shares the scenario's Idempotent")
	}
}

func TestMergeKeys(t *testing.T) {
	s, err := Load("testdata/valid/merge-keys.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := s.Variants[1]
	if d.Name != "derived" || d.Strategy != "dedup-table" || d.Consumer == nil || d.Consumer.Prefetch != 5 {
		t.Errorf("derived = %+v", d)
	}
}

func TestBuiltins(t *testing.T) {
	names := scenarios.Names()
	if len(names) == 0 {
		t.Fatal("no built-in scenarios")
	}
	for _, name := range names {
		s, err := Resolve(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if s.File != "builtin:"+name || s.Name != name {
			t.Errorf("%s: File %q, Name %q", name, s.File, s.Name)
		}
	}
}

func TestResolve(t *testing.T) {
	builtins := fmt.Sprintf("%d built-ins: dqbench list names them", len(scenarios.Names()))
	if s, err := Resolve("testdata/valid/minimal.yaml"); err != nil || s.Name != "minimal" {
		t.Errorf("Resolve(file) = %v, %v", s, err)
	}
	_, err := Resolve("quickstrat")
	if err == nil || !strings.Contains(err.Error(), `no scenario file or built-in named "quickstrat"`) ||
		!strings.Contains(err.Error(), `did you mean "quickstart"?`) {
		t.Errorf("Resolve(typo) error = %v", err)
	}
	for arg, want := range map[string]string{
		"testdata/nope.yaml": "testdata/nope.yaml: no such file; give an existing scenario file or a built-in name (" + builtins + ")",
		"nope.yml":           "nope.yml: no such file; give an existing scenario file or a built-in name (" + builtins + ")",
		"dir/quickstart":     "dir/quickstart: no such file; give an existing scenario file or a built-in name (" + builtins + `); did you mean "quickstart"?`,
		"quickstrat.yaml":    "quickstrat.yaml: no such file; give an existing scenario file or a built-in name (" + builtins + `); did you mean "quickstart"?`,
	} {
		if _, err := Resolve(arg); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Resolve(%q) error = %v\nwant %s", arg, err, want)
		}
	}
	if _, err := Resolve("testdata"); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Resolve(dir) error = %v", err)
	}
	if _, err := Load("testdata/no-such-file.yaml"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v", err)
	}
}

// TestResolveBuiltinOverLocalFile: a built-in's name runs the built-in even
// in a folder holding a file of that name, which could otherwise swap in
// its own process command; the file is named in a warning and runs when
// given as a path. A name that is no built-in still reads the file.
func TestResolveBuiltinOverLocalFile(t *testing.T) {
	local := "version: 1\nname: local\nbroker: {kind: kafka}\nvariants:\n  - {name: none, strategy: none}\n"
	t.Chdir(t.TempDir())
	for _, f := range []string{"quickstart", "quickstart.yaml", "mine"} {
		if err := os.WriteFile(f, []byte(local), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Resolve("quickstart")
	if err != nil || s.File != "builtin:quickstart" {
		t.Fatalf("Resolve(quickstart) read %s (error %v); want the built-in", fileOf(s), err)
	}
	want := []string{
		"warning: quickstart is the built-in scenario quickstart, not the file quickstart here; to run the file, give its path: ./quickstart",
		"warning: quickstart is the built-in scenario quickstart, not the file quickstart.yaml here; to run the file, give its path: ./quickstart.yaml",
	}
	if !slices.Equal(s.Warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(s.Warnings, "\n"), strings.Join(want, "\n"))
	}
	for _, path := range []string{"./quickstart", "./quickstart.yaml", "quickstart.yaml", "mine"} {
		s, err := Resolve(path)
		if err != nil || s.Name != "local" {
			t.Errorf("Resolve(%s) read %s (error %v); want the local file", path, fileOf(s), err)
		} else if len(s.Warnings) != 0 {
			t.Errorf("Resolve(%s) warns: %q", path, s.Warnings)
		}
	}
}

func fileOf(s *Scenario) string {
	if s == nil {
		return "nothing"
	}
	return s.File
}

// TestResolveContext returns at once when the context ends, even while the
// file is still being read: here a named pipe nobody writes to.
func TestResolveContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ResolveContext(ctx, "quickstart"); !errors.Is(err, context.Canceled) {
		t.Errorf("ResolveContext(cancelled) error = %v", err)
	}
	if s, err := ResolveContext(context.Background(), "quickstart"); err != nil || s.Name != "quickstart" {
		t.Errorf("ResolveContext(quickstart) = %v, %v", s, err)
	}

	fifo := filepath.Join(t.TempDir(), "pipe.yaml")
	if err := exec.Command("mkfifo", fifo).Run(); err != nil {
		t.Skipf("cannot make a named pipe: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := ResolveContext(ctx, fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ResolveContext(pipe) error = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("ResolveContext did not return when its context ended")
	}
	// Let the abandoned read finish (without blocking if it never started).
	if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}

// TestByteOrderMark reads a file that starts with a UTF-8 byte-order mark,
// with positions counted after it.
func TestByteOrderMark(t *testing.T) {
	const doc = "version: 1\nname: bom\nbroker: {kind: kafka}\nvariants: [{name: v, strategy: none}]\n"
	if _, err := Parse("b.yaml", []byte("\ufeff"+doc)); err != nil {
		t.Errorf("Parse(BOM + valid) = %v", err)
	}
	_, err := Parse("b.yaml", []byte("\ufeffversion: 2\n"+doc[len("version: 1\n"):]))
	if err == nil || !strings.HasPrefix(err.Error(), "b.yaml:1:10: version: 2 is not supported") {
		t.Errorf("Parse(BOM + version 2) = %v", err)
	}
}

// TestWorkLimit reports only the work limit once aliases expand past it,
// not a false "missing" problem for every value left unread.
func TestWorkLimit(t *testing.T) {
	doc := "version: 1\nname: w\nbroker: {kind: kafka}\n" +
		"x: &v {name: a, strategy: none, expect: {lost: 0, duplicates: 0}}\n" +
		"variants: [" + strings.Repeat("*v, ", 30_000) + "*v]\n"
	_, err := Parse("w.yaml", []byte(doc))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || !strings.Contains(errs[0].Msg, "too many values: more than 100,000") {
		n := len(errs)
		if n > 3 {
			errs = errs[:3]
		}
		t.Errorf("got %d problem(s), want only the work limit; first: %v", n, errs)
	}
}

// TestNotText says "not a text file" without repeating the binary.
func TestNotText(t *testing.T) {
	binary := make([]byte, 18_000)
	for i := range binary {
		binary[i] = byte(i * 7919 % 251)
	}
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"binary", string(binary), "1:1: not a text file: it holds a NUL byte"},
		{"NUL", "version: 1\nname: a\x00b\n", "2:8: not a text file: it holds a NUL byte"},
		{"Latin-1", "version: 1\nname: caf\xe9\n", "2:10: not a text file: it holds bytes that are not UTF-8"},
		{"escape", "version: 1\nname: \x1b[31mred\n", "2:7: not a text file: it holds the control character U+001B"},
	}
	for _, tc := range tests {
		_, err := Parse("t.yaml", []byte(tc.in))
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "t.yaml:"+tc.want) {
			t.Errorf("%s: %.300v\nwant t.yaml:%s", tc.name, err, tc.want)
		}
	}
}

// TestEcho repeats at most about 80 characters of the input in a message,
// with control characters escaped.
func TestEcho(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	const base = "version: 1\nname: e\nbroker: {kind: kafka}\n"
	tests := []struct {
		name, in string
		want     string // part of the message
	}{
		{"unknown key", base + long + ": 1\nvariants: [{name: v, strategy: none}]\n", `unknown key "` + long[:80] + `"... at the top level`},
		{"unknown expect key", base + "variants: [{name: v, strategy: none, expect: {" + long + ": 1}}]\n", `unknown key "` + long[:80] + `"... in variants[0].expect`},
		{"name", "version: 1\nname: " + long + "\nbroker: {kind: kafka}\nvariants: [{name: v, strategy: none}]\n", `name: "` + long[:80] + `"... is not allowed`},
		{"strategy", base + "variants: [{name: v, strategy: " + long + "}]\n", `variants[0].strategy: "` + long[:80] + `"... is not allowed`},
		{"tab in a value", base + "variants: [{name: v, strategy: \"a\\tb\"}]\n", `variants[0].strategy: "a\tb" is not allowed`},
		{"address", base[:len(base)-len("broker: {kind: kafka}\n")] + "broker: {kind: kafka, mode: external, addresses: [" + long + "]}\nvariants: [{name: v, strategy: none}]\n", `"` + long[:80] + `"... is not host:port`},
		{"duration", base + "deadline: " + long + "\nvariants: [{name: v, strategy: none}]\n", `bad duration "` + long[:80] + `"...: write`},
		{"expectation", base + "variants: [{name: v, strategy: none, expect: {lost: " + long + "}}]\n", `bad expectation "` + long[:80] + `"...: write`},
		{"big number", base + "seed: " + strings.Repeat("9", 10_000) + "\nvariants: [{name: v, strategy: none}]\n", "seed: " + strings.Repeat("9", 80) + "... is too large"},
		{"wrong type", base + "messages: " + long + "\nvariants: [{name: v, strategy: none}]\n", `messages: must be an integer, got string "` + long[:80] + `"...`},
	}
	for _, tc := range tests {
		_, err := Parse("e.yaml", []byte(tc.in))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %.400s\nwant it to contain %s", tc.name, msg, tc.want)
		}
		if len(msg) > 600 {
			t.Errorf("%s: message is %d bytes long: %.400s...", tc.name, len(msg), msg)
		}
	}
	// A YAML syntax error's message escapes the tab it names.
	if _, err := Parse("e.yaml", []byte("a: 1\n\tb")); err == nil || !strings.Contains(err.Error(), `found character '\t'`) {
		t.Errorf("syntax error with a tab: %v", err)
	}
	if _, err := Resolve(long); err == nil || len(err.Error()) > 400 {
		t.Errorf("Resolve(long name) error is %d bytes", len(err.Error()))
	}
}

func TestErrorsAs(t *testing.T) {
	_, err := Parse("x.yaml", []byte("version: 1\nname: x\nbroker: {kind: kafka}\nvariants: [{name: a, strategy: nope}]\n"))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("errors.As(*Error) failed on %v", err)
	}
	if e.File != "x.yaml" || e.Line != 4 || e.Col != 32 {
		t.Errorf("error at %s:%d:%d", e.File, e.Line, e.Col)
	}
}

// TestBounds accepts each number at its bound and rejects it one past.
func TestBounds(t *testing.T) {
	const base = "version: 1\nname: b\nbroker: {kind: kafka}\nvariants: [{name: v, strategy: none}]\n"
	tests := []struct {
		yaml string // with %d for the number
		max  int
		path string
	}{
		{"messages: %d\n", MaxMessages, "messages"},
		{"broker: {kind: kafka, partitions: %d}\n", 1000, "broker.partitions"}, // catalog.KafkaSettings' maximum
		{"producer: {window: %d}\n", MaxWindow, "producer.window"},
		{"producer: {rate: %d}\n", MaxRate, "producer.rate"},
		{"producer: {max_lag: %d}\n", MaxMessages, "producer.max_lag"},
		{"consumer: {instances: %d}\n", MaxInstances, "consumer.instances"},
		{"consumer: {prefetch: %d}\n", MaxPrefetch, "consumer.prefetch"},
		{"messages: 10000000\nfaults: [{type: produce-response-lost, every: %d}]\n", MaxEvery, "faults[0].every"},
		{"faults: [{type: produce-response-lost, every: 1, max_attempt: %d}]\n", MaxMaxAttempt, "faults[0].max_attempt"},
	}
	for _, tc := range tests {
		doc := func(n int) []byte {
			// A later key replaces base's broker: keep only one.
			b := base
			if strings.HasPrefix(tc.yaml, "broker:") {
				b = strings.Replace(b, "broker: {kind: kafka}\n", "", 1)
			}
			return []byte(b + fmt.Sprintf(tc.yaml, n))
		}
		if _, err := Parse("b.yaml", doc(tc.max)); err != nil {
			t.Errorf("%s = %d (the bound) rejected: %v", tc.path, tc.max, err)
		}
		_, err := Parse("b.yaml", doc(tc.max+1))
		want := fmt.Sprintf("%s: must be from 1 to %s, got %s", tc.path, strictyaml.Thousands(tc.max), strictyaml.Thousands(tc.max+1))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s = %d: error %v, want %q", tc.path, tc.max+1, err, want)
		}
	}
	if _, err := Parse("b.yaml", []byte(base+"deadline: 24h\n")); err != nil {
		t.Errorf("deadline 24h rejected: %v", err)
	}
	if _, err := Parse("b.yaml", []byte(base+"seed: 9223372036854775807\n")); err != nil {
		t.Errorf("seed max int64 rejected: %v", err)
	}
}

func TestCheckMessages(t *testing.T) {
	for n, ok := range map[int]bool{1: true, MaxMessages: true, 0: false, MaxMessages + 1: false, -1: false} {
		if err := CheckMessages(n); (err == nil) != ok {
			t.Errorf("CheckMessages(%d) = %v", n, err)
		}
	}
	if err := CheckMessages(1_000_000_000_000); err == nil || err.Error() != "must be from 1 to 10,000,000, got 1,000,000,000,000" {
		t.Errorf("CheckMessages message = %v", err)
	}
}

// TestNames allows only names that are safe as file, topic and group names.
func TestNames(t *testing.T) {
	const help = `is not allowed: use 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit, without ".."`
	doc := func(name, variants string) []byte {
		return []byte("version: 1\nname: " + name + "\nbroker: {kind: kafka}\nvariants: " + variants + "\n")
	}
	const oneVariant = "[{name: v, strategy: none}]"
	tests := []struct {
		name, variants string
		want           string // "" for valid
	}{
		{"a", oneVariant, ""},
		{"My.scenario_2-b", oneVariant, ""},
		{strings.Repeat("x", 64), oneVariant, ""},
		{"a", "[{name: A.b_c-1, strategy: none}, {name: a.b_c-1x, strategy: none}]", ""},
		{"../../x", oneVariant, `2:7: name: "../../x" ` + help},
		{"a..b", oneVariant, `2:7: name: "a..b" ` + help},
		{".hidden", oneVariant, `2:7: name: ".hidden" ` + help},
		{"-x", oneVariant, `2:7: name: "-x" ` + help},
		{"a/b", oneVariant, `2:7: name: "a/b" ` + help},
		{`'a b'`, oneVariant, `2:7: name: "a b" ` + help},
		{`"tab\there"`, oneVariant, `2:7: name: "tab\there" ` + help},
		{"ünï", oneVariant, `2:7: name: "ünï" ` + help},
		{strings.Repeat("x", 65), oneVariant, `2:7: name: "` + strings.Repeat("x", 65) + `" ` + help},
		{"a", "[{name: ../v, strategy: none}]", `4:19: variants[0].name: "../v" ` + help},
		{"a", "[{name: 'at most once', strategy: none}]", `4:19: variants[0].name: "at most once" ` + help},
		{"a", "[{name: none, strategy: none}, {name: None, strategy: none}]", `4:49: variants[1].name: "None" is already the name of variants[0]; variant names must be unique (ignoring case)`},
	}
	for _, tc := range tests {
		_, err := Parse("n.yaml", doc(tc.name, tc.variants))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("name %s, variants %s: %v", tc.name, tc.variants, err)
		case tc.want != "" && (err == nil || err.Error() != "n.yaml:"+tc.want):
			t.Errorf("name %s, variants %s: error %v\nwant n.yaml:%s", tc.name, tc.variants, err, tc.want)
		}
	}
}

func TestExpectation(t *testing.T) {
	tests := []struct {
		in      string
		want    Expectation
		str     string
		holds   []int
		notHold []int
	}{
		{in: "0", want: Expectation{"==", 0}, str: "== 0", holds: []int{0}, notHold: []int{1}},
		{in: "==0", want: Expectation{"==", 0}, str: "== 0", holds: []int{0}, notHold: []int{2}},
		{in: ">0", want: Expectation{">", 0}, str: "> 0", holds: []int{1, 50}, notHold: []int{0}},
		{in: ">= 3", want: Expectation{">=", 3}, str: ">= 3", holds: []int{3, 4}, notHold: []int{2}},
		{in: "<=5", want: Expectation{"<=", 5}, str: "<= 5", holds: []int{0, 5}, notHold: []int{6}},
		{in: " < 2 ", want: Expectation{"<", 2}, str: "< 2", holds: []int{1}, notHold: []int{2}},
		{in: "!=7", want: Expectation{"!=", 7}, str: "!= 7", holds: []int{6, 8}, notHold: []int{7}},
		{in: ""}, {in: "> "}, {in: "=3"}, {in: "-1"}, {in: "> -1"}, {in: "3 or more"},
		{in: "=> 3"}, {in: "99999999999999999999999"},
	}
	for _, tc := range tests {
		got, err := ParseExpectation(tc.in)
		if tc.str == "" {
			if err == nil {
				t.Errorf("ParseExpectation(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want || got.String() != tc.str {
			t.Errorf("ParseExpectation(%q) = %v (%q), %v; want %v (%q)", tc.in, got, got.String(), err, tc.want, tc.str)
			continue
		}
		for _, n := range tc.holds {
			if !got.Holds(n) {
				t.Errorf("%v.Holds(%d) = false", got, n)
			}
		}
		for _, n := range tc.notHold {
			if got.Holds(n) {
				t.Errorf("%v.Holds(%d) = true", got, n)
			}
		}
	}
}

func TestSweepExpectation(t *testing.T) {
	tests := []struct {
		in    string
		str   string // "" when in is bad
		milli int
		// holdsOver and failsOver are [held, runs] pairs.
		holdsOver, failsOver [][2]int
	}{
		{in: "0", str: "== 0 in every run", milli: EveryRun, holdsOver: [][2]int{{200, 200}}, failsOver: [][2]int{{199, 200}, {0, 0}}},
		{in: "== 0 in every run", str: "== 0 in every run", milli: EveryRun},
		{in: "==0 in all runs", str: "== 0 in every run", milli: EveryRun},
		{in: "> 0 in at least 95% of runs", str: "> 0 in at least 95% of runs", milli: 95000,
			holdsOver: [][2]int{{190, 200}, {19, 20}, {200, 200}}, failsOver: [][2]int{{189, 200}, {18, 20}, {0, 0}}},
		{in: ">0 in at least 95%", str: "> 0 in at least 95% of runs", milli: 95000},
		{in: " <= 3  in at least 99.5 % of the runs ", str: "<= 3 in at least 99.5% of runs", milli: 99500,
			holdsOver: [][2]int{{995, 1000}, {199, 200}}, failsOver: [][2]int{{994, 1000}, {198, 200}}},
		{in: ">0 in at least 0.001%", str: "> 0 in at least 0.001% of runs", milli: 1, holdsOver: [][2]int{{1, 100000}}, failsOver: [][2]int{{0, 1}}},
		{in: ">0 in at least 100%", str: "> 0 in every run", milli: EveryRun},
		{in: ""}, {in: "in every run"}, {in: "> 0 in most runs"}, {in: "> 0 in 95%"}, {in: "> 0 in at least 0%"},
		{in: "> 0 in at least 100.5%"}, {in: "> 0 in at least 95.0001%"}, {in: "> 0 in at least -5%"}, {in: "> 0in every run"},
	}
	for _, tc := range tests {
		got, err := ParseSweepExpectation(tc.in)
		if tc.str == "" {
			if err == nil {
				t.Errorf("ParseSweepExpectation(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got.String() != tc.str || got.Milli != tc.milli {
			t.Errorf("ParseSweepExpectation(%q) = %q (milli %d), %v; want %q (milli %d)", tc.in, got.String(), got.Milli, err, tc.str, tc.milli)
			continue
		}
		if again, err := ParseSweepExpectation(got.String()); err != nil || again != got {
			t.Errorf("%q does not parse back: %v, %v", got.String(), again, err)
		}
		for _, hr := range tc.holdsOver {
			if !got.HoldsOver(hr[0], hr[1]) {
				t.Errorf("%v.HoldsOver(%d, %d) = false", got, hr[0], hr[1])
			}
		}
		for _, hr := range tc.failsOver {
			if got.HoldsOver(hr[0], hr[1]) {
				t.Errorf("%v.HoldsOver(%d, %d) = true", got, hr[0], hr[1])
			}
		}
	}
}

func TestSweepExpects(t *testing.T) {
	s, err := Load("testdata/valid/sweep-expect.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range s.Variants[0].SweepExpects() {
		got = append(got, e.Check())
	}
	want := []string{"redelivered >= 1 in at least 99.5% of runs", "effects >= 100 in every run", "duplicates > 0 in at least 95% of runs", "lost == 0 in every run"}
	if !slices.Equal(got, want) {
		t.Errorf("sweep expectations %q, want %q (in the order of the counts)", got, want)
	}
	// The scenario as run keeps them, and parses back to the same.
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("as-run.yaml", y)
	if err != nil {
		t.Fatalf("the scenario as run does not parse: %v\n%s", err, y)
	}
	if !reflect.DeepEqual(back.Variants[0].SweepExpect, s.Variants[0].SweepExpect) {
		t.Errorf("as run: %v, want %v", back.Variants[0].SweepExpect, s.Variants[0].SweepExpect)
	}
}

// TestExpectationCodecs checks the decoders other packages may use.
func TestExpectationCodecs(t *testing.T) {
	var y struct {
		A Expectation `yaml:"a"`
		B Expectation `yaml:"b"`
	}
	if err := yaml.Unmarshal([]byte("a: 3\nb: '>= 1'\n"), &y); err != nil {
		t.Fatal(err)
	}
	if y.A != (Expectation{"==", 3}) || y.B != (Expectation{">=", 1}) {
		t.Errorf("yaml: %v, %v", y.A, y.B)
	}
	var j struct{ A, B Expectation }
	if err := json.Unmarshal([]byte(`{"A": 2, "B": "<1"}`), &j); err != nil {
		t.Fatal(err)
	}
	if j.A != (Expectation{"==", 2}) || j.B != (Expectation{"<", 1}) {
		t.Errorf("json: %v, %v", j.A, j.B)
	}
	out, err := json.Marshal(j)
	if err != nil || string(out) != `{"A":"== 2","B":"\u003c 1"}` {
		t.Errorf("json.Marshal = %s, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"A": "lots"}`), &j); err == nil {
		t.Error("json: bad expectation accepted")
	}
}

func TestDuration(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("1m30s")); err != nil || d.D() != 90*time.Second {
		t.Errorf("UnmarshalText(1m30s) = %s, %v", d, err)
	}
	if b, _ := d.MarshalText(); string(b) != "1m30s" {
		t.Errorf("MarshalText = %s", b)
	}
	if err := d.UnmarshalText([]byte("90")); err == nil {
		t.Error("UnmarshalText(90) succeeded")
	}
	var y struct {
		D Duration `yaml:"d"`
	}
	if err := yaml.Unmarshal([]byte("d: 2m\n"), &y); err != nil || y.D.D() != 2*time.Minute {
		t.Errorf("yaml: %s, %v", y.D, err)
	}
}

func TestSchema(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	if v["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", v["$schema"])
	}
	for _, want := range append([]string{`"variants"`, `"additionalProperties": false`, `"dedup-table-split"`, `"between-dedup-and-effect"`, `>0`}, check.CountNames()...) {
		if !strings.Contains(string(b), want) {
			t.Errorf("schema does not mention %s", want)
		}
	}
}

// TestSchemaBounds keeps the schema's maximum= tags in step with the Max
// constants.
func TestSchemaBounds(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Properties map[string]struct{ Maximum float64 }
		Defs       map[string]struct {
			Properties map[string]struct{ Maximum float64 }
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		def, prop string
		want      int
	}{
		{"", "messages", MaxMessages},
		{"Producer", "window", MaxWindow},
		{"Consumer", "instances", MaxInstances},
		{"Consumer", "prefetch", MaxPrefetch},
		{"Fault", "every", MaxEvery},
		{"Fault", "max_attempt", MaxMaxAttempt},
	} {
		props := v.Properties
		if tc.def != "" {
			props = v.Defs[tc.def].Properties
		}
		if got := props[tc.prop].Maximum; got != float64(tc.want) {
			t.Errorf("schema %s.%s maximum = %v, want %d", tc.def, tc.prop, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range scenarios.Names() {
		data, _ := scenarios.Read(name)
		f.Add(data)
	}
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error is not a non-empty Errors: %T %v", err, err)
			}
			for _, e := range errs {
				if e.Line < 1 || e.Col < 1 || e.Msg == "" {
					t.Fatalf("problem without a position or message: %#v", e)
				}
			}
			return
		}
		if s.Version != Version || s.Name == "" || len(s.Variants) == 0 || s.Messages < 1 {
			t.Fatalf("Parse accepted an incomplete scenario: %+v", s)
		}
	})
}

// The scenario as run, rendered to YAML, parses back to the same scenario:
// a saved run is judged with what actually ran.
func TestYAMLRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.yaml")
	for _, name := range scenarios.Names() {
		files = append(files, name)
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			s, err := Resolve(file)
			if err != nil {
				t.Fatal(err)
			}
			s.Seed, s.Messages, s.Deadline = 0, 1234, Duration(7*time.Minute)
			y, err := s.YAML()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse("rendered.yaml", y)
			if err != nil {
				t.Fatalf("rendered scenario does not parse: %v\n%s", err, y)
			}
			clean := func(x *Scenario) *Scenario {
				c := *x
				c.File, c.Source, c.Warnings = "", nil, nil
				c.Faults = slices.Clone(x.Faults)
				for i := range c.Faults {
					c.Faults[i].Line = 0
				}
				c.Variants = slices.Clone(x.Variants)
				for i := range c.Variants {
					c.Variants[i].Line = 0
				}
				return &c
			}
			if got, want := clean(back), clean(s); !reflect.DeepEqual(got, want) {
				t.Errorf("round trip changed the scenario:\n got %+v\nwant %+v\n%s", got, want, y)
			}
		})
	}
}

// A file past the size bound is refused before it is read whole.
func TestLoadTooLarge(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, 3*MaxFileSize), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "at most 256 KiB") {
		t.Errorf("Load(big) = %v", err)
	}
}

// --addresses: a scenario pointed at an external broker of its kind.
func TestUseExternalBroker(t *testing.T) {
	s, err := Resolve("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UseExternalBroker([]string{"127.0.0.1:9092"}); err != nil || s.Broker.Mode != "external" || s.Broker.Addresses[0] != "127.0.0.1:9092" {
		t.Errorf("quickstart: %v, broker %+v", err, s.Broker)
	}
	s, _ = Resolve("rabbitmq-consumer-crash")
	err = s.UseExternalBroker([]string{"http://guest:secret@127.0.0.1:5672/"})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a bad AMQP URL: %v (want an error without the password)", err)
	}
	s, _ = Resolve("mqtt-subscriber-offline")
	if err := s.UseExternalBroker([]string{"tcp://127.0.0.1:1883"}); err == nil || !strings.Contains(err.Error(), "subscriber-offline") {
		t.Errorf("a fault that needs the embedded broker: %v", err)
	}
	if s.Broker.Mode != "embedded" {
		t.Errorf("a refused override changed the broker: %+v", s.Broker)
	}
}

// TestConfirmLostTimeout: a confirm-lost fault withholds confirms that
// never come, so a scenario that sets no confirm_timeout gets
// DefaultConfirmLostTimeout; one that sets it keeps it, in the scenario or
// a variant, and without the fault there is no timeout.
func TestConfirmLostTimeout(t *testing.T) {
	const head = "version: 1\nname: t\nbroker: {kind: rabbitmq}\n"
	for _, tc := range []struct {
		name, yaml string
		want       map[string]time.Duration // by variant
	}{
		{"default", head + "faults: [{type: confirm-lost, every: 10}]\nvariants: [{name: a, strategy: none}]\n",
			map[string]time.Duration{"a": 5 * time.Second}},
		{"scenario's own", head + "producer: {confirm_timeout: 300ms}\nfaults: [{type: confirm-lost, every: 10}]\nvariants: [{name: a, strategy: none}]\n",
			map[string]time.Duration{"a": 300 * time.Millisecond}},
		{"variant's own", head + "faults: [{type: confirm-lost, every: 10}]\nvariants: [{name: a, strategy: none}, {name: b, strategy: none, producer: {confirm_timeout: 1s}}]\n",
			map[string]time.Duration{"a": 5 * time.Second, "b": time.Second}},
		{"no fault", head + "variants: [{name: a, strategy: none}]\n",
			map[string]time.Duration{"a": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("t.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range s.Variants {
				if got := s.ProducerFor(v).ConfirmTimeout.D(); got != tc.want[v.Name] {
					t.Errorf("variant %s: confirm_timeout %s, want %s", v.Name, got, tc.want[v.Name])
				}
			}
		})
	}
}

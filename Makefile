# dqbench: common tasks. `make help` lists them.
GO ?= go
PKGS := ./...
# make bench BENCH_INTENTS=5000 BENCH_PAIRS=3 for a quicker look
BENCH_INTENTS ?= 20000
BENCH_PAIRS ?= 5
# make quorum-evidence: messages per queue, consumer kills, acks before each kill
EVIDENCE_MESSAGES ?= 2000
EVIDENCE_KILLS ?= 20
EVIDENCE_ACKS ?= 80
# the second table: published while consuming, this much work per message (dqbench's consumer: a median 69µs between acks, 255µs at p90)
EVIDENCE_WORK ?= 150us
# the MQTT row: mochi-mqtt queues at most 8192 unacked messages per session, so fewer intents
MQTT_BENCH_INTENTS ?= 5000
# the crash-recovery row: runs with and without a consumer crash every 50 intents
CRASH_BENCH_INTENTS ?= 5000
# the real-Kafka rows (a one-node Apache Kafka from dqbench's jar cache, skipped without them): the raw loop commits each record synchronously, 0.3-0.6 ms each, so fewer intents; both rows take about a minute
REAL_KAFKA_BENCH_INTENTS ?= 5000
# the sweep rows: dqbench sweep of each of these built-ins over seeds 1..SWEEP_BENCH_SEEDS at --parallel 1 and 2 (SWEEP_BENCH_MESSAGES=0: the built-in's messages); quickstart keeps 1.4 CPUs busy at --parallel 1, mqtt-client-qos2 0.35
SWEEP_BENCH_SCENARIOS ?= quickstart mqtt-client-qos2
SWEEP_BENCH_SEEDS ?= 8
SWEEP_BENCH_MESSAGES ?= 0
# the PostgreSQL rows of make bench and make bench-strategies (skipped when unreachable)
BENCH_POSTGRES ?= postgres://postgres@127.0.0.1:5432/test
STRATEGY_INTENTS ?= 5000
STRATEGY_ROUNDS ?= 3
# make bench-scale SCALE_SIZES=10000,100000 skips the 1M run (about 6 minutes and 0.9 GiB peak RSS with three variants, as measured in docs/performance.md)
SCALE_SIZES ?= 10000,100000,1000000
SCALE_BROKERS ?= kafka,mqtt,rabbitmq
# Go stamps the VCS revision only where it finds a .git directory: a linked git worktree has a .git
# file, so there make build gives the revision, commit time and modified flag by -ldflags instead
BUILDINFO := github.com/dqbench/dqbench/internal/buildinfo
VCS_LDFLAGS = $(shell if [ "$$(git rev-parse --git-dir 2>/dev/null)" != "$$(git rev-parse --git-common-dir 2>/dev/null)" ]; then \
	echo "-X $(BUILDINFO).vcsRevision=$$(git rev-parse HEAD)" \
	"-X $(BUILDINFO).vcsTime=$$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)" \
	"-X $(BUILDINFO).vcsModified=$$(test -z "$$(git status --porcelain)" && echo false || echo true)"; fi)

.PHONY: help services services-status services-down kafka-jars kafka-diff install build test test-short race lint bench bench-strategies bench-scale demo schema compose-check repeat quorum-evidence qos2-evidence

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

services: ## install (Debian, as root) and start on loopback what the tests use: PostgreSQL (trust, database test), Redis, RabbitMQ (guest/guest), Mosquitto, nats-server -js; what .ci/run does first
	scripts/services up

services-status: ## which of those services answer
	scripts/services status

services-down: ## stop those services
	scripts/services down

kafka-jars: ## copy Apache Kafka's broker jar and runtime dependencies from Maven Central into dqbench's cache (mvn), for mode: managed Kafka; once
	$(GO) run . brokers fetch kafka

kafka-diff: kafka-jars ## every Kafka built-in on the embedded broker and on a managed real Apache Kafka, same seed: a Markdown table of the counts that differ (fails on one the scenario does not say varies)
	@$(GO) test -count=1 -run '^TestKafkaEmbeddedVersusManaged$$' -v -timeout 30m ./runner/kafkadiff/ -args -kafkadiff.table 2>&1 \
		| grep -E '^(\||--- FAIL|FAIL|ok|PASS|\s+kafkadiff_test)'

install: ## go install dqbench into $(go env GOPATH)/bin (or $GOBIN), stamped with the commit it is built from
	$(GO) install -buildvcs=true -ldflags "$(VCS_LDFLAGS)" .

build: ## build ./dqbench, stamped with the commit it is built from (dqbench version, every report's provenance)
	$(GO) build -buildvcs=true -ldflags "$(VCS_LDFLAGS)" -o dqbench .

test: ## run the tests (what CI runs)
	$(GO) test $(PKGS)

test-short: ## the fast tier: go test -short, no service and no broker program needed
	$(GO) test -short $(PKGS)

race: ## run the tests with the race detector
	$(GO) test -race $(PKGS)

lint: ## gofmt, go vet
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet $(PKGS)

bench: ## pipeline vs raw kgo loop on SQLite, then on PostgreSQL: median ratio of interleaved pairs, tx and commit bounds; then the transactional stage vs a raw kgo GroupTransactSession loop; then RabbitMQ vs a raw amqp091-go loop when it answers; then MQTT QoS 1 on mochi-mqtt vs a raw paho loop; then NATS JetStream on the embedded nats-server vs a raw nats.go loop; then the cost of one consumer crash on embedded Kafka; then, on a one-node Apache Kafka (make kafka-jars), the pipeline vs a raw kgo loop and the cost of one consumer crash; then dqbench sweep of a CPU-bound and a waiting built-in at --parallel 2 vs --parallel 1 (runs/s ratio, CPUs busy). Each prints a Markdown table (median, min, max, date, load) for docs/performance.md
	$(GO) test -run '^$$' -bench PipelineVsRaw -benchtime 1x -timeout 60m ./bench/ \
		-args -bench.intents=$(BENCH_INTENTS) -bench.pairs=$(BENCH_PAIRS) -bench.store=sqlite
	$(GO) test -run '^$$' -bench PipelineVsRaw -benchtime 1x -timeout 60m ./bench/ \
		-args -bench.intents=$(BENCH_INTENTS) -bench.pairs=$(BENCH_PAIRS) -bench.store=$(BENCH_POSTGRES)
	$(GO) test -run '^$$' -bench TransactionalStage -benchtime 1x -timeout 60m ./bench/ \
		-args -bench.intents=$(BENCH_INTENTS) -bench.pairs=$(BENCH_PAIRS) -bench.store=sqlite
	$(GO) test -run '^$$' -bench RabbitMQVsRawLoop -benchtime 1x -timeout 60m ./bench/ \
		-args -bench.intents=$(BENCH_INTENTS) -bench.pairs=$(BENCH_PAIRS)
	$(GO) test -run '^$$' -bench MQTTVsRaw -benchtime 1x -timeout 60m ./bench/ \
		-args -bench.intents=$(MQTT_BENCH_INTENTS) -bench.pairs=$(BENCH_PAIRS)
	$(GO) test -run '^$$' -bench NATSVsRaw -benchtime 1x -timeout 60m ./bench/ \
		-args -bench.intents=$(BENCH_INTENTS) -bench.pairs=$(BENCH_PAIRS)
	$(GO) test -run '^$$' -bench CrashRecovery -benchtime 1x -timeout 60m ./bench/ \
		-args -bench.intents=$(CRASH_BENCH_INTENTS) -bench.pairs=$(BENCH_PAIRS)
	$(GO) test -run '^$$' -bench 'ManagedKafka(VsRaw|Crash)' -benchtime 1x -timeout 60m ./bench/ \
		-args -bench.intents=$(REAL_KAFKA_BENCH_INTENTS) -bench.pairs=$(BENCH_PAIRS) -bench.store=sqlite
	for s in $(SWEEP_BENCH_SCENARIOS); do \
		$(GO) test -run '^$$' -bench SweepParallel -benchtime 1x -timeout 60m ./bench/ \
			-args -bench.pairs=$(BENCH_PAIRS) -bench.sweep-scenario=$$s \
			-bench.sweep-seeds=$(SWEEP_BENCH_SEEDS) -bench.sweep-messages=$(SWEEP_BENCH_MESSAGES) || exit 1; \
	done

bench-strategies: ## each strategy's intents/s on SQLite and PostgreSQL, through the whole pipeline
	$(GO) test -run '^$$' -bench Strategies -benchtime 1x -timeout 60m ./bench/ \
		-args -bench.intents=$(STRATEGY_INTENTS) -bench.pairs=$(STRATEGY_ROUNDS) -bench.postgres=$(BENCH_POSTGRES)

bench-scale: ## wall time and peak RSS of the dqbench binary at 10k, 100k, 1M intents: embedded Kafka with 1 and 3 variants, embedded MQTT and the local RabbitMQ with 1 (SCALE_BROKERS=kafka for Kafka only)
	$(GO) run ./bench/scale -sizes $(SCALE_SIZES) -brokers $(SCALE_BROKERS)

demo: ## run the built-in scenarios on the embedded broker (the strategy ones need Redis)
	$(GO) run . run $$($(GO) run . list --wide | cut -d" " -f1)

schema: ## write the scenario JSON Schema to dqbench.schema.json
	$(GO) run . schema > dqbench.schema.json

compose-check: ## check docker-compose.yml (needs docker compose, or the older docker-compose)
	@if docker compose version >/dev/null 2>&1; then docker compose -f docker-compose.yml config -q; \
	else docker-compose -f docker-compose.yml config -q; fi

repeat: ## run every built-in REPEAT times (default 5) with its seed: fails on a count that differs without the scenario's varies naming it (DQBENCH_REPEAT_ONLY=a,b for some)
	DQBENCH_REPEAT=$(or $(REPEAT),5) $(GO) test -count=1 -run TestBuiltinsRepeat -timeout 60m -v ./runner/ 2>&1 | grep -E '^\s*(---|repeat_test|ok|FAIL|PASS)'

quorum-evidence: ## acked messages a queue delivers again after its consumer dies: raw amqp091-go on the local RabbitMQ (quorum vs classic × prefetch × settle; publishing first, then as dqbench runs), then the built-in rabbitmq-quorum-acked-redelivery
	$(GO) test -count=1 -run '^TestAckedRedelivery$$' -v -timeout 10m ./brokers/rabbitmq/ \
		-args -ackloss.messages=$(EVIDENCE_MESSAGES) -ackloss.kills=$(EVIDENCE_KILLS) -ackloss.acks=$(EVIDENCE_ACKS)
	$(GO) test -count=1 -run '^TestAckedRedelivery$$' -v -timeout 10m ./brokers/rabbitmq/ \
		-args -ackloss.messages=1600 -ackloss.kills=20 -ackloss.acks=80 -ackloss.concurrent -ackloss.work=$(EVIDENCE_WORK)
	$(GO) run . run rabbitmq-quorum-acked-redelivery

qos2-evidence: ## raw paho.mqtt.golang and paho.golang on mochi-mqtt, no dqbench code: duplicates per lost PUBREC, PUBREL, PUBCOMP on each leg (QoS 2, one message in flight; ROUNDS=20)
	@out=$$($(GO) test -count=1 -v -run TestQoS2RawClients ./brokers/mqtt/qos2truth/ -args -qos2.table -qos2.rounds=$(or $(ROUNDS),20) 2>&1); st=$$?; \
	echo "$$out" | grep -v -E '^(=== RUN|ok|PASS)|--- PASS'; exit $$st

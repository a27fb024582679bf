# dqbench: common tasks. `make help` lists them.
GO ?= go
PKGS := ./...

.PHONY: help build test race lint bench demo schema compose-check

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build ./dqbench
	$(GO) build -o dqbench .

test: ## run the tests (what CI runs)
	$(GO) test $(PKGS)

race: ## run the tests with the race detector
	$(GO) test -race $(PKGS)

lint: ## gofmt, go vet
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet $(PKGS)

bench: ## pipeline vs raw kgo+SQLite loop on the embedded broker
	$(GO) test -run '^$$' -bench . -benchtime 3x ./bench/

demo: ## run the built-in scenarios on the embedded broker
	$(GO) run . run quickstart kafka-idempotent-producer delivery-guarantees

schema: ## write the scenario JSON Schema to dqbench.schema.json
	$(GO) run . schema > dqbench.schema.json

compose-check: ## check docker-compose.yml (needs docker-compose)
	docker-compose -f docker-compose.yml config -q

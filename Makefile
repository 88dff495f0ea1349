# Respire's developer commands. `make test` is the contract: on a fresh Debian machine it
# installs what the tests need and runs them all.

GO          ?= go
REDIS_PKGS  := redis-server redis-sentinel redis-tools
# Fuzz budgets are counts of executions, not durations: with a duration, Go 1.26's fuzz
# coordinator can report its own -fuzztime deadline as "context deadline exceeded" and
# fail a target that found nothing (golang/go#75804, fixed in Go 1.27).
FUZZTIME    ?= 200000x
TESTFLAGS   ?=

.PHONY: all deps servers test soak bench bench-go fuzz fuzz-short lint

all: test

# deps makes sure the real servers the integration tests start are installed.
deps:
	@missing=""; for b in redis-server redis-sentinel redis-cli; do \
		command -v $$b >/dev/null 2>&1 || missing="$$missing $$b"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing $(REDIS_PKGS) (missing:$$missing)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(REDIS_PKGS) >/dev/null; \
		else \
			echo "missing:$$missing. Install them with:"; \
			echo "    sudo apt-get install -y $(REDIS_PKGS)"; \
			exit 1; \
		fi; \
	fi

# servers builds the server generations the tests run beside the installed Redis 7
# (Redis 6.0, Redis 8.6, Valkey 8.1 and 9.1) from Debian source packages into a cache
# that later runs reuse (test/testserver/build-servers.sh): the first time about 6
# minutes on 2 cores, one build at a time; after that nothing. A generation it cannot
# fetch or build is recorded there, and its tests skip naming the source package; it
# is tried again a day later, or at once with RETRY=1.
servers:
	RESPIRE_SERVERS_RETRY=$(RETRY) sh test/testserver/build-servers.sh

# test: vet, then every test with the race detector against real servers.
test: deps servers
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m $(TESTFLAGS) ./...
	@# Allocation budgets are checked without -race, which allocates on its own.
	$(GO) test -count=1 -run 'Alloc' $(TESTFLAGS) ./...
	@# respbench is a module of its own (its peers stay out of the library's go.mod). Its
	@# tests run the main job (bench below): every scenario with every participant, the
	@# sweep and the memory figures, for -quick's windows, on a server and on a cluster it
	@# starts itself (about 45 s on 2 cores).
	cd cmd/respbench && $(GO) vet ./... && $(GO) test -short -count=1 -timeout 10m ./...
	cd respireotel && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	@# The library builds on other platforms; the harness under test/, which runs
	@# servers, is unix-only.
	GOOS=windows $(GO) build $$($(GO) list ./... | grep -v /test/)
	GOOS=darwin $(GO) build $$($(GO) list ./... | grep -v /test/)
	@# A bounded run of every fuzz target beyond its checked-in corpus.
	$(MAKE) fuzz-short

# soak: the long versions of the tests that record histories (RESPIRE_SOAK=1); `make
# test` runs them bounded. The client-side cache's coherence checker (100,000 writes a
# run and 50 runs of each scenario, standalone and on a Cluster) and the fault scenarios
# of test/faults, each for SOAK_DURATION, and conn's randomized check that no
# re-authentication lands inside a transaction (20 rounds). To add a scenario to the
# soak, add its test name to SOAK_RUN.
SOAK_RUN      ?= Coherence|TestReauthNeverInTransactionRandomized|TestS1PausedHolder|TestS2Restart|TestS4Partition|TestS5|TestS6ResetMidReply|TestS11Cancellation|TestS3SentinelFailover|TestS7|TestS8ACLDenial|TestS9ClusterReshardAndFailover|TestS10TrackingInvalidationLoss
SOAK_DURATION ?= 5m
soak: deps
	RESPIRE_SOAK=1 RESPIRE_SOAK_DURATION=$(SOAK_DURATION) $(GO) test -race -count=1 -timeout 300m -run '$(SOAK_RUN)' -v $(TESTFLAGS) . ./conn/ ./test/faults/

# bench: the main job. respbench runs Respire side by side with go-redis, rueidis and
# the lock libraries against a redis-server it starts (medians of 5 rounds, reference
# rows beside the lock and cache figures), then the -sweep cost curves and the -memory
# figures, and writes the README-ready table (docs/respbench.txt), the charts
# (docs/respbench.png, docs/respbench-sweep.png) and every figure as JSON
# (respbench.json); then the lock scenario on Redis 8 (DELEX), with the binary `make
# servers` built, when there is one (docs/respbench-redis8.txt); then the Cluster
# scenarios against three masters it starts (docs/respbench-cluster.txt,
# respbench-cluster.json). Each table ends with the verdict on every performance target
# it measures. About 25 minutes on 2 cores (15 for one server, 2 for Redis 8, 8 for the
# cluster); BENCHFLAGS passes flags to every run (e.g. BENCHFLAGS='-duration 1s -rounds
# 3'); BENCH_REDIS8= and BENCH_CLUSTER=no leave those runs out (for -addr host:port, a
# server respbench cannot start itself, such as an emulator profile).
BENCHFLAGS ?=
BENCH_CLUSTER ?= yes
BENCH_CLUSTER_SCENARIOS ?= get-par,set-par,pipeline,pipeline-spread,lock
BENCH_REDIS8 ?= $(abspath $(firstword $(wildcard $(RESPIRE_SERVERS_DIR)/redis-8.*/redis-server \
	$(XDG_CACHE_HOME)/respire-servers/redis-8.*/redis-server \
	$(HOME)/.cache/respire-servers/redis-8.*/redis-server)))
bench: deps servers
	cd cmd/respbench && $(GO) run . -sweep -memory -json ../../respbench.json \
		-table ../../docs/respbench.txt -chart ../../docs/respbench.png \
		-sweep-chart ../../docs/respbench-sweep.png $(BENCHFLAGS)
	if [ -n "$(BENCH_REDIS8)" ]; then cd cmd/respbench && $(GO) run . -scenarios lock \
		-server $(BENCH_REDIS8) -json ../../respbench-redis8.json \
		-table ../../docs/respbench-redis8.txt $(BENCHFLAGS); \
	else echo "bench: no Redis 8 built (make servers builds it): the DELEX lock run is left out"; fi
	if [ "$(BENCH_CLUSTER)" != no ]; then cd cmd/respbench && $(GO) run . -cluster \
		-scenarios $(BENCH_CLUSTER_SCENARIOS) -json ../../respbench-cluster.json \
		-table ../../docs/respbench-cluster.txt $(BENCHFLAGS); fi

# bench-go: the library's own Go benchmarks with allocation figures, for benchstat
# (run it with -count 6 before and after a change: BENCHGOFLAGS='-count 6').
BENCHGOFLAGS ?=
bench-go: deps
	$(GO) test -run '^$$' -bench . -benchmem $(BENCHGOFLAGS) ./resp/ ./conn/ ./pool/ ./internal/command/ ./cache/ ./lock/ . ./test/integration/

# fuzz: a bounded run of every fuzz target, FUZZTIME executions each (the corpora under
# testdata/fuzz/ already run as ordinary tests in `make test`). Every target runs even
# when one fails; a crasher is saved by go test as a new corpus entry under the
# package's testdata/fuzz/<Target>/, to be committed with its fix. fuzz-short is the
# quick version (FUZZTIME=50000x, under 10 s for the slowest target on 2 cores),
# cheap enough for CI beside `make test`.
fuzz:
	@failed=""; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || failed="$$failed $$pkg.$$target"; \
		done; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz targets that failed:$$failed"; exit 1; fi

fuzz-short:
	$(MAKE) fuzz FUZZTIME=50000x

# lint: formatting and vet; fails on any finding.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

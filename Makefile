# trialform — build, test, demo, bench. `make test` installs what it needs.
GO      ?= go
BIN     := bin/trialform
GOFLAGS ?=

# fuzz and ui-check run in test.
.PHONY: image docs fuzz ui-check web ui-assets bench-ui all build test unit e2e deps k8s demo demo-clean bench bench-tuners bench-tuners-budgets bench-tuners-full bench-tuners-multi vet fmt-check clean

all: build

# -trimpath: no local paths in the binary; -s -w: no symbol table or
# DWARF (a third of the size; panics still print their stack traces).
BUILDFLAGS ?= -trimpath -ldflags "-s -w"

build:
	$(GO) build $(BUILDFLAGS) $(GOFLAGS) -o $(BIN) ./cmd/trialform
	$(GO) build $(BUILDFLAGS) $(GOFLAGS) -o $(dir $(BIN))trialform-supervisor ./cmd/trialform-supervisor

deps:
	bash scripts/deps.sh

# The controller's container image, with no Docker daemon and no base image
# to pull: a static linux binary (CGO_ENABLED=0; GOARCH=arm64 for another
# architecture) in one layer FROM scratch with the CA bundle and a non-root
# user, written as an OCI image layout in $(IMAGE_DIR) by tools/image
# (go-containerregistry). Push it with `crane push $(IMAGE_DIR) REF` or
# `skopeo copy oci:$(IMAGE_DIR):$(IMAGE_TAG) docker://REF`.
IMAGE_DIR ?= bin/image
IMAGE_TAG ?= latest
image:
	CGO_ENABLED=0 GOOS=linux $(GO) build $(BUILDFLAGS) -o bin/linux/trialform ./cmd/trialform
	cd tools/image && $(GO) run . -binary $(CURDIR)/bin/linux/trialform -out $(CURDIR)/$(IMAGE_DIR) -tag $(IMAGE_TAG) -version "$$(git describe --tags --always --dirty 2>/dev/null)"

# The dashboard's bundle (internal/ui/assets, committed so `go build` needs
# no node): web/ sources with ECharts and esbuild at the versions pinned in
# web/package-lock.json.
ui-assets:
	cd web && npm ci --no-audit --no-fund && npm run build
web: ui-assets

# Fails when the committed bundle is stale against web/ ("run make web"):
# builds web/ in a temporary directory and compares (scripts/ui-check.sh).
ui-check:
	bash scripts/ui-check.sh

# The test control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler) built from tools/k8s into ~/.cache/trialform/k8s/<version>/;
# reused while tools/k8s is unchanged (the first build takes 10-20 minutes).
k8s:
	bash scripts/build-k8s.sh

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The core packages run under the race detector; the rest of the suite
# runs without it (the core is not run twice).
CORE := ./state/... ./plan/... ./apply/... ./providers/local/... ./tuner/...

# The whole suite: unit tests, conformance suites (local, and kubernetes on
# the control plane `make k8s` builds), testscript end-to-end tests.
# TRIALFORM_REQUIRE_ALL=1 (set by .ci/run) fails a test whose dependency is
# missing instead of skipping it.
# The tuners' statistical quality tests (tuner/quality_test.go, built
# only without -race) run without the race detector, which makes them 5-8
# times slower and finds nothing in their single goroutine.
QUALITY_TESTS = ^($(shell grep -ho '^func Test[A-Za-z0-9_]*' tuner/quality_test.go | sed 's/^func //' | paste -sd'|'))$$

# Most tests wait (for trials, servers, timeouts) more than they compute:
# TEST_PARALLEL of them run at once in each package and TEST_PACKAGES
# packages at once (go test's default for both is the number of cores, 2
# on CI's machine, which left it half idle). The slowest packages start
# first (SLOW), and the tuners' quality tests, which compute on one core,
# run beside the rest of the suite.
TEST_PARALLEL ?= 4
TEST_PACKAGES ?= 4
SLOW := ./internal/command ./providers/kubernetes ./providers/remote ./internal/ui

test: deps build k8s fmt-check vet
	$(GO) test -count=1 -race -timeout 30m -parallel $(TEST_PARALLEL) $(CORE)
	@quality=$$(mktemp); \
	echo "$(GO) test -count=1 -timeout 30m -run '$(QUALITY_TESTS)' ./tuner/ (beside the rest; its output follows it)"; \
	$(GO) test -count=1 -timeout 30m -run '$(QUALITY_TESTS)' ./tuner/ >$$quality 2>&1 & q=$$!; \
	echo "$(GO) test -count=1 -timeout 30m -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) $(SLOW) (and every package but those and the core)"; \
	$(GO) test -count=1 -timeout 30m -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) $(SLOW) \
		$$($(GO) list ./... | grep -vxF "$$($(GO) list $(CORE) $(SLOW))"); rest=$$?; \
	wait $$q; qs=$$?; cat $$quality; rm -f $$quality; \
	test $$rest = 0 && test $$qs = 0
	cd tools/image && $(GO) test -count=1 ./...
	$(MAKE) fuzz
	$(MAKE) ui-check

# The fuzzers of the parsers of bytes trialform did not write, each for
# FUZZTIME executions (a count, not a duration: see TestFuzzRunsByCount)
# (their seed corpora, testdata/fuzz/FuzzXxx, also run as plain
# tests in every `go test`). A failure writes the input that failed to
# testdata/fuzz/FuzzXxx/: fix the bug and commit it as a regression seed.
FUZZTIME ?= 50000x
FUZZERS := ./state:FuzzJournal ./internal/tfevents:FuzzReadScalars \
	./providers/trialproto:FuzzParseMetricRecords ./providers/trialproto:FuzzParseStdoutLine \
	./tuner/space:FuzzParseNNI
fuzz:
	@set -e; for f in $(FUZZERS); do \
		echo "fuzz $${f#*:} ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${f#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s "$${f%%:*}"; \
	done

unit:
	$(GO) test -count=1 -short ./...

e2e: build
	$(GO) test -count=1 -run TestScripts ./internal/command/...

# The generated parts of the docs, from their one source each: the
# commands' -help (docs/cli), the platform registry (docs/platforms), the
# tuner declarations (docs/tuners.md) and the pages' headings (tables of
# contents). The same tests without -update fail when a part is stale.
docs:
	$(GO) test -count=1 -run TestCLIDocs ./internal/command -update
	$(GO) test -count=1 -run TestReadmePlatformReference ./providers/platforms -update
	$(GO) test -count=1 -run TestReadmeTunerReference ./tuner -update
	$(GO) test -count=1 -run TestDocContents ./internal/docs -update

# The quickstart on the local platform, then its results table.
demo: build
	cd examples/quickstart && ../../$(BIN) apply -auto-approve -wait && ../../$(BIN) trials quickstart

demo-clean:
	rm -rf examples/quickstart/.trialform examples/sklearn-digits/.trialform

bench: build
	go build -o bin/genstate ./bench/genstate
	go build -o bin/watchlat ./bench/watchlat
	go build -o bin/loadstate ./bench/loadstate
	go build -o bin/ctllat ./bench/ctllat
	bash scripts/bench.sh
	bash scripts/build-k8s.sh >/dev/null
	TRIALFORM_K8S_BENCH=1 $(GO) test -count=1 -run TestBench1000 -v ./providers/kubernetes/ | grep -E '^(kubernetes bench|--- )'
	TRIALFORM_K8S_BENCH=1 $(GO) test -count=1 -run TestBenchKubeflow200 -v ./providers/kubernetes/ | grep -E '^(kubeflow bench|--- )'
	TRIALFORM_K8S_BENCH=1 $(GO) test -count=1 -run TestBenchStateBackend -v ./state/kubernetes/ | grep -E '^(state bench|  |--- )'
	TRIALFORM_PG_BENCH=1 $(GO) test -count=1 -run TestBenchStateBackend -v ./state/pg/ | grep -E '^(pg bench|  |--- )'
	TRIALFORM_PG_BENCH=1 TRIALFORM_BIN=$(abspath $(BIN)) GENSTATE_BIN=$(abspath bin/genstate) $(GO) test -count=1 -run TestBenchCommands -v ./state/pg/ | grep -E '^(pg bench|  |--- )'
	$(MAKE) bench-tuners
	$(MAKE) bench-ui

# The dashboard on 10,000 trials x 100 intermediate points (bench/genstate,
# generated once into bin/bench-ui-state): API times, first render in
# headless chromium, rows in the DOM.
bench-ui:
	TRIALFORM_UI_BENCH=1 $(GO) test -count=1 -run TestDashboardBench -v ./internal/ui/ | grep -v '^=== RUN'

# Our tuners next to Optuna 3.1 (python3-optuna) and NNI's own tuners on the
# same problems; see docs/benchmarks.md, "Tuner benchmark". TUNERS_OUT: where the
# markdown report goes. NNI's tuners load from $(TRIALFORM_NNI_SRC), a
# checkout of github.com/microsoft/nni (skipped with a note when unset; an
# error with TRIALFORM_REQUIRE_ALL=1). NNI_TUNERS: which (gp, metis; metis
# takes about 20 s a suggestion).
TUNERS_OUT ?= bin/tuners-results.md
NNI_TUNERS ?= gp

bench-tuners: deps
	@mkdir -p bin
	$(GO) run ./bench/tuners -trials 100 -seeds 10 -go random,tpe,auto,gp,smac -nni $(NNI_TUNERS) -out $(TUNERS_OUT)

# TPE and auto at 50, 100 and 200 trials (issue 18): the pinned seeds 1-10,
# then the held-out seeds 101-108. Optuna's runs are kept in bin/tuners-cache
# and reused.
bench-tuners-budgets: deps
	@mkdir -p bin
	$(GO) run ./bench/tuners -trials 200 -budgets 50,100 -seeds 10 -go random,tpe,auto -cache bin/tuners-cache -out $(TUNERS_OUT)
	$(GO) run ./bench/tuners -trials 200 -budgets 20,50,80,100 -seeds 8 -seed0 101 -go tpe,auto -optuna tpe -latency '' -cache bin/tuners-cache -out $(TUNERS_OUT:.md=-heldout.md)

# Several objectives (issue 29): nsga2, motpe, auto and random against
# Optuna's NSGA-II and MOTPE, hypervolume at 50, 100 and 200 trials, 10
# seeds; Optuna's runs (slow: MOTPE in 3 objectives) kept in bin/tuners-cache.
bench-tuners-multi: deps
	@mkdir -p bin
	$(GO) run ./bench/tuners multi -trials 200 -budgets 50,100,200 -seeds 10 -workers 2 -cache bin/tuners-cache -out bin/tuners-multi.md

bench-tuners-full: deps
	@mkdir -p bin
	$(GO) run ./bench/tuners -trials 200 -seeds 20 -parallel 1,8 -out $(TUNERS_OUT)

clean:
	rm -rf bin

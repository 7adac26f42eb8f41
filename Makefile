# Every target installs what it needs into .venv by itself: a fresh clone needs only python3 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000
SEED ?= 1


# Every install into .venv takes its releases from the lock: exact pins written by `make lock` (scripts/lock.py).
CONSTRAINTS := constraints.txt
PIP_INSTALL := $(BIN)/python -m pip install --quiet -c $(CONSTRAINTS)


.PHONY: install dist run test spec-sync lowest-check test-exhaustive test-e2e lint docs fuzz bench bench-anchors bench-fixture bench-cpu bench-mcp cluster-test clean interop gate-compare example image image-test test-containers test-browser screenshots soak lock upgrade-check attack

$(STAMP): pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e ".[dev]"
	touch $(STAMP)

# `make run` needs the server alone: the package with its runtime dependencies, no dev tools (a fresh clone serves
# in seconds, not after 450 MB of linters, docs and test tools). A .venv that has the dev install has it too.
RUN_STAMP := $(VENV)/.runtime-stamp
$(RUN_STAMP): pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) -e .
	touch $(RUN_STAMP)

install: $(STAMP)

## make lock: constraints.txt again from a clean venv: exact pins of everything ".[dev,browser]" resolves to today
lock:
	$(PYTHON) scripts/lock.py lock --python $(PYTHON)

## make upgrade-check: the newest releases (no constraints) in a throwaway venv, the smoke tier run there; prints each
## package that differs from constraints.txt (locked -> newest) and the tier's verdict (non-zero exit if it fails). In CI.
upgrade-check:
	$(PYTHON) scripts/lock.py upgrade-check --python $(PYTHON)

## make lowest-check: every direct dependency at the floor pyproject.toml declares (uv --resolution lowest-direct, in a
## throwaway venv), the smoke tier run there: public and admin API, TLS served by a real process, the plugin. In CI.
lowest-check:
	$(PYTHON) scripts/lock.py lowest-check --python $(PYTHON)

## make dist: the sdist and the wheel into $(DIST)/ (the wheel holds the mock_server package alone); then
## `pip install dist/pix_limits_mock_server-*.whl` anywhere, or `pipx install dist/pix_limits_mock_server-*.whl`
DIST ?= dist
dist: $(STAMP)
	rm -rf $(DIST)/pix_limits_mock_server-*
	$(BIN)/python -m build --outdir $(DIST) .

## make run: serve the shipped default scenario on 127.0.0.1:8000, ids seeded (--seed 1) so the docs' examples
## reproduce; Ctrl-C stops it (the server exits 0, so make reports no error). Installs the runtime only.
run: $(if $(wildcard $(STAMP)),$(STAMP),$(RUN_STAMP))  # a .venv with the dev install has the runtime too
	$(BIN)/mock-server --host $(HOST) --port $(PORT) --seed $(SEED) --log-level info

## make test: the default tier, in process, on both cores (unit, API, admin, bounded schemathesis contract runs).
## worksteal: a worker out of tests takes half of the other's queue, so the run does not end on one worker's tail.
## PYTHONDONTWRITEBYTECODE emptied for the run: with it set (this sandbox sets it) pytest rewrote every test
## module's asserts again in each worker, ~7 s of CPU each; now kept in __pycache__/ (ignored by git).
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q -n 2 --dist worksteal

## make test-exhaustive: the full sweeps whose sample make test runs, in process on both cores (marker exhaustive:
## schemathesis's coverage phase on PUT /__mock/state, every planted defect for verify-provider); in CI after make test
test-exhaustive: $(STAMP)
	$(BIN)/pytest -q -n 2 -m exhaustive

## make test-e2e: the tests that start the server, pytest, make, a tool or a fresh interpreter in a child process, and a
## new feature's slow tests (real servers in threads, real exporters) (marker e2e: tests/e2e/, and tests marked e2e
## elsewhere), on
## both cores: each module on one worker (loadfile), so a module's fixtures (a built wheel, a venv) are made once;
## every server binds port 0 and every file goes to tmp_path (tests/conftest.py: children are no xdist workers)
test-e2e: $(STAMP)
	$(BIN)/pytest -q -m e2e -n 2 --dist loadfile

## make attack: the adversarial rounds' attacks (issue 24: pages on other origins, DNS rebinding, Host and upgrade
## hygiene, names, counts) replayed against a real server on loopback, each bounded in time (part of make test-e2e;
## their chromium half is in make test-browser)
attack: $(STAMP)
	timeout 300 $(BIN)/pytest -q -p no:cacheprovider -m e2e tests/e2e/test_attacks.py

REDOCLY := .tools/npm/node_modules/.bin/redocly
$(REDOCLY):
	npm install --silent --no-audit --no-fund --prefix .tools/npm @redocly/cli@2

## make lint: ruff, mypy --strict (mock_server, bench, tests: see pyproject.toml), and Redocly's OpenAPI linter on both specs
lint: $(STAMP) $(REDOCLY)
	$(BIN)/ruff check mock_server tests scripts bench
	$(BIN)/ruff format --check mock_server tests scripts bench
	$(BIN)/mypy
	$(REDOCLY) lint openapi.yaml admin/openapi.yaml --format=stylish

## make spec-sync: admin/openapi.yaml's lists of the public operations (the PublicOperationId enum, what a fault's
## `match` may name per operation) rewritten from openapi.yaml; tests/contract/test_spec_sync.py fails when stale
spec-sync: $(STAMP)
	$(BIN)/python scripts/spec_sync.py

## make docs: the documentation site from docs/ and mkdocs.yml into site/, offline (no fonts, CDN or plugin
## fetched), every link and anchor checked (--strict); docs/reference.md is rendered from the code first.
## NO_MKDOCS_2_WARNING: mkdocs-material prints its end-of-life notice on every build without it.
docs: $(STAMP)
	$(BIN)/python scripts/gen_reference.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

## make fuzz: the real server + `st run` on both specs, every check, 1000 examples per operation
FUZZ_EXAMPLES ?= 1000
fuzz: $(STAMP)
	$(BIN)/python scripts/fuzz.py --max-examples $(FUZZ_EXAMPLES)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build $(DIST) site *.egg-info

## make bench: end-to-end benchmark over loopback with wrk (installed if missing) -> BENCHMARKS.md. Not part of CI.
bench: $(STAMP)
	$(BIN)/python -m bench.run --command "make bench"

## make bench-cpu: only the server's CPU per request beside bare Starlette (wrk, interleaved rounds, /proc CPU
## time; about 3 min); rewrites its own section of BENCHMARKS.md and leaves the rest. Another commit beside it
## in the same run: git worktree add /tmp/old COMMIT && make bench-cpu BENCH_CPU_ARGS="--compare-tree /tmp/old"
BENCH_CPU_ARGS ?=
bench-cpu: $(STAMP)
	$(BIN)/python -m bench.cpu_cost $(BENCH_CPU_ARGS) \
		--command 'make bench-cpu$(if $(strip $(BENCH_CPU_ARGS)), BENCH_CPU_ARGS="$(strip $(BENCH_CPU_ARGS))")'

## make bench-anchors: the same run plus Prism and WireMock (npm, installed under bench/.tools/)
bench-anchors: $(STAMP)
	$(BIN)/python -m bench.run --anchors --command "make bench-anchors"

## make bench-mcp: what an MCP tool call costs in process (bench/mcp_cost.py): the median of 2,000 calls, the
## official client's and the server side's alone. Not CI.
bench-mcp: $(STAMP)
	$(BIN)/python -m bench.mcp_cost

## make bench-fixture: only what the pix_mock fixture costs a test, against pytest-httpserver and respx (installed
## into bench/.tools/fixture-venv, never .venv): its section of BENCHMARKS.md is replaced, the rest kept. Not CI.
bench-fixture: $(STAMP)
	$(BIN)/python -m bench.fixture_cost --command "make bench-fixture"

## make example: the sample integrator project's tests against the mock, three ways (in-process, -n 2, external)
example: $(STAMP)
	cd examples/integrator && PATH="$(CURDIR)/$(BIN):$$PATH" pytest -q -p no:cacheprovider
	cd examples/integrator && PATH="$(CURDIR)/$(BIN):$$PATH" pytest -q -p no:cacheprovider -n 2
	cd examples/integrator && PATH="$(CURDIR)/$(BIN):$$PATH" ./run-against-external.sh -q -p no:cacheprovider

## make image-test: build the Containerfile offline with podman (podman, runc, mmdebstrap installed from Debian if
## missing; root) FROM a local Debian + python3 base, run it read-only, wait for its HEALTHCHECK, replay the docs'
## examples against it, check the user and the read-only root, stop it. Not part of make test (docs: run time).
image-test: $(STAMP)
	$(BIN)/python scripts/image_test.py

## make image: the image PixMockContainer runs by default, localhost/pix-limits-mock-server:latest, built offline as
## make image-test builds it (scripts/image_build.py; podman, runc, mmdebstrap from Debian if missing; root).
## Elsewhere: docker build -f Containerfile -t localhost/pix-limits-mock-server:latest .
image: $(STAMP)
	$(BIN)/python scripts/image_build.py

## make test-containers: make image, then PixMockContainer against it through testcontainers-python and podman's
## Docker API (started and stopped by the tests), and the Kubernetes router's HAProxy config run by Debian's haproxy
## (installed when missing) over replicas found by DNS (marker containers: tests/containers, tests/deploy)
test-containers: image
	@command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || (apt-get -o DPkg::Lock::Timeout=600 update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq haproxy >/dev/null)
	timeout 900 $(BIN)/pytest -q -p no:cacheprovider -m containers tests/containers tests/deploy

## make test-browser: Playwright (PyPI) drives Debian's chromium (installed if missing; never `playwright install`)
## through the dashboard and the docs. Not part of make test. `make screenshots` refreshes the docs' pictures.
BROWSER_STAMP := $(VENV)/.browser-stamp
$(BROWSER_STAMP): $(STAMP)
	command -v chromium >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=600 update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
		chromium fonts-dejavu-core; }
	$(PIP_INSTALL) -e ".[dev,browser]"
	touch $@

test-browser: $(BROWSER_STAMP)
	$(BIN)/pytest -q -m browser tests/browser

screenshots: $(BROWSER_STAMP)
	SCREENSHOTS=docs/screenshots $(BIN)/pytest -q -m browser tests/browser -k "screenshot or try_it_out"

## make interop: Specmatic --strict, openapi-python-client and openapi-core against a live server (about 2 min;
## installs Java 17, Specmatic and its own tool venv under .tools/ the first time). Not part of make test.
interop: $(STAMP)
	$(BIN)/python scripts/interop.py

## make gate-compare: the labelled corpus of spec changes (tests/gate/mutations.py) through `mock-server gate spec` and
## Specmatic's `compare` (installed as make interop installs it); the verdicts into docs/gate.md. A minute or more per
## Specmatic run on a busy machine; an interrupted run goes on where it stopped. Not part of make test.
gate-compare: $(STAMP)
	$(BIN)/python scripts/gate_compare.py

## make cluster-test: two mock-server processes behind nginx (installed with apt-get when missing), the acceptance
## flows in parallel sessions, each session sticking to one process (scripts/cluster.py). Not part of CI.
cluster-test: $(STAMP)
	@command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null)
	$(BIN)/pytest -q -m cluster tests/cluster

## make soak: issue 16's adversarial mixes against one real server on loopback for SOAK_SECONDS (not in CI);
## asserts bounded RSS, no 5xx but injected ones, the bystander's p99, nothing acknowledged lost, SIGTERM
SOAK_SECONDS ?= 120
soak: $(STAMP)
	$(BIN)/python scripts/soak.py --seconds $(SOAK_SECONDS)

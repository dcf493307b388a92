# Two commands: `make run` and `make test`. Both bootstrap what they need, idempotently.
PYTHON ?= python3
VENV   := .venv
SDK03  := .venvs/sdk03
SDK13  := .venvs/sdk13
BIN    := $(VENV)/bin
CONFIG ?= config/gateway.yaml
WORKERS ?= 1
LOG_FORMAT ?= console
PIP_FLAGS := --disable-pip-version-check -q

.PHONY: run test setup venvs lint unit bench clean matrix redis nginx chromium demo-migration test-aiohttp-range docs docs-refs image-test

# Two markers in one .venv: `.runtime` (the gateway's own dependencies, all `make run`
# needs) and `.installed` (those plus the dev toolchain, for `make test`). The dev install
# is a superset, so it sets both. Both install the lock (requirements/, `make lock`) with
# every file's hash checked, then the project itself without resolving anything.
LOCK_RUNTIME := requirements/runtime.txt
LOCK_DEV     := requirements/dev.txt
$(VENV)/.installed: pyproject.toml $(LOCK_DEV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install $(PIP_FLAGS) --require-hashes -r $(LOCK_DEV)
	$(BIN)/pip install $(PIP_FLAGS) --no-deps -e .
	touch $@ $(VENV)/.runtime

$(VENV)/.runtime: pyproject.toml $(LOCK_RUNTIME)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install $(PIP_FLAGS) --require-hashes -r $(LOCK_RUNTIME)
	$(BIN)/pip install $(PIP_FLAGS) --no-deps -e .
	touch $@

# Refresh the lock from pyproject.toml's ranges (docs/releasing.md "The lock"): the newest
# versions PyPI has today within them, with every file's hash, resolved once for every
# Python 3.11.x and platform (`--universal`: a package only some of them need carries its
# marker, e.g. async-timeout below 3.11.3), so the lock does not depend on the Python that
# ran `make lock`. The dev lock is constrained by the runtime one: both agree on what they
# share. LOCK_ARGS="--upgrade-package NAME" moves one package; without --upgrade the pins
# already in the files are kept where the ranges allow.
LOCK_ARGS ?=
UV_COMPILE = $(BIN)/uv pip compile -q pyproject.toml --universal --python-version 3.11 \
  --generate-hashes --custom-compile-command "make lock" $(LOCK_ARGS)
.PHONY: lock
lock: setup
	@# uv comes with the dev lock; only a venv made before uv was in it lacks it.
	@test -x $(BIN)/uv || $(BIN)/pip install $(PIP_FLAGS) 'uv>=0.5'
	@# A file uv rewrites unchanged keeps its time, so the venvs are not reinstalled for it.
	@for f in $(LOCK_RUNTIME) $(LOCK_DEV); do cp -p $$f $$f.before; done
	$(UV_COMPILE) -o $(LOCK_RUNTIME)
	$(UV_COMPILE) --extra dev -c $(LOCK_RUNTIME) -o $(LOCK_DEV)
	@for f in $(LOCK_RUNTIME) $(LOCK_DEV); do \
	  if cmp -s $$f $$f.before; then touch -r $$f.before $$f; else echo "$$f changed"; fi; \
	  rm -f $$f.before; done

$(SDK03)/.installed: tests/interop/requirements-sdk03.txt
	$(PYTHON) -m venv $(SDK03)
	$(SDK03)/bin/pip install $(PIP_FLAGS) -r $<
	touch $@

$(SDK13)/.installed: tests/interop/requirements-sdk13.txt
	$(PYTHON) -m venv $(SDK13)
	$(SDK13)/bin/pip install $(PIP_FLAGS) -r $<
	touch $@

setup: $(VENV)/.installed
venvs: $(SDK03)/.installed $(SDK13)/.installed

# One worker with console logs (docs/quickstart.md); `make run WORKERS=N` for more. Both
# go through the config's environment overrides (docs/configuration.md), not the file.
LOG_ENV = A2A_GATEWAY__LOG__FORMAT=$(LOG_FORMAT)
run: $(VENV)/.runtime
	A2A_GATEWAY__WORKERS=$(WORKERS) $(LOG_ENV) $(BIN)/a2a-gateway serve --config $(CONFIG)

# Migration mode on one machine (README "Migrating an agent"): a v1.0 demo agent on :9010
# that words one artifact differently (the candidate), the gateway in front of the built-in
# v0.3 demo agent (the primary) in canary + shadow, 30 conversations sent through it; then
# the report's URL. Ctrl-C stops both.
demo-migration: $(VENV)/.runtime
	@$(BIN)/a2a-gateway demo-agent --port 9010 --protocol 1.0 --answer-variant artifact-text & \
	candidate=$$!; \
	$(LOG_ENV) $(BIN)/a2a-gateway serve --config config/migration-demo.yaml & gateway=$$!; \
	trap 'kill $$candidate $$gateway 2>/dev/null' EXIT INT TERM; \
	$(BIN)/python -m gateway.demo.traffic http://127.0.0.1:8080/shop/ --count 30 && \
	echo "migration report: http://127.0.0.1:8081/_admin/migration/shop/page" && \
	echo "  or: $(BIN)/a2a-gateway migration report shop --config config/migration-demo.yaml" && \
	wait $$gateway

lint: setup
	$(BIN)/ruff check gateway translators tests bench docsgen
	$(BIN)/mypy --strict translators gateway

test: setup venvs lint redis nginx chromium docs
	$(BIN)/pytest -q -p no:cacheprovider
	$(MAKE) --no-print-directory image-test

# The docs site (docs/, mkdocs.yml) built in strict mode: a broken link or anchor, or a page
# missing from the nav, fails it (a few seconds). The generated reference pages are checked
# first: `make docs-refs` rewrites them from the config schema, the CLI parser and the
# metrics registry (docsgen/).
docs: setup
	$(BIN)/python -m docsgen --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs-refs: setup
	$(BIN)/python -m docsgen

# The state store's tests start a real redis-server on a loopback port (tests/state). It is
# installed with apt when missing and we are root; without root, build or fetch one and set
# A2A_TEST_REDIS_SERVER to its path (docs/testing.md, "The state store's tests").
redis:
	@if [ -n "$$A2A_TEST_REDIS_SERVER" ]; then test -x "$$A2A_TEST_REDIS_SERVER" || \
	  { echo "A2A_TEST_REDIS_SERVER=$$A2A_TEST_REDIS_SERVER is not executable" >&2; exit 1; }; \
	elif command -v redis-server >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; \
	else echo "redis-server is missing and this is not root: see docs/testing.md " \
	  "(A2A_TEST_REDIS_SERVER)" >&2; exit 1; fi

# The rolling-restart test puts a real nginx in front of two gateway replicas
# (tests/interop/test_rolling_restart.py): Debian's nginx-light, installed as redis-server
# is; without root, set A2A_TEST_NGINX to an nginx binary.
nginx:
	@if [ -n "$$A2A_TEST_NGINX" ]; then test -x "$$A2A_TEST_NGINX" || \
	  { echo "A2A_TEST_NGINX=$$A2A_TEST_NGINX is not executable" >&2; exit 1; }; \
	elif command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; \
	else echo "nginx is missing and this is not root: see docs/testing.md " \
	  "(A2A_TEST_NGINX)" >&2; exit 1; fi

# The migration report's web page is rendered in a real headless browser
# (tests/integration/test_migration_page.py): Debian's chromium, installed as redis-server
# is; without root, set A2A_TEST_CHROMIUM to a chromium binary.
chromium:
	@if [ -n "$$A2A_TEST_CHROMIUM" ]; then test -x "$$A2A_TEST_CHROMIUM" || \
	  { echo "A2A_TEST_CHROMIUM=$$A2A_TEST_CHROMIUM is not executable" >&2; exit 1; }; \
	elif command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "chromium is missing and this is not root: see docs/testing.md " \
	  "(A2A_TEST_CHROMIUM)" >&2; exit 1; fi

# The aiohttp-facing tests against the oldest and the newest aiohttp that pyproject.toml
# admits (docs/architecture.md, "aiohttp versions"), each in a venv of its own (under
# AIOHTTP_RANGE_DIR) holding only that aiohttp and seeing the project's venv for the rest.
AIOHTTP_SPEC := $(shell sed -n 's/^ *"\(aiohttp[<>=][^"]*\)",*$$/\1/p' pyproject.toml)
AIOHTTP_OLDEST := $(shell echo '$(AIOHTTP_SPEC)' | sed -n 's/.*>=\([0-9.]*\).*/\1/p')
AIOHTTP_RANGE_DIR ?= /tmp/a2a-gateway-aiohttp-range
AIOHTTP_RANGE ?= oldest newest
AIOHTTP_RANGE_TESTS = tests/unit/gateway/http/test_aiohttp_internals.py \
  tests/unit/gateway/ingress/test_fast_lane_head.py \
  tests/integration/test_fast_lane.py tests/integration/test_fast_lane_same_answer.py \
  tests/integration/test_http1_pool.py tests/hardening/test_connections.py \
  tests/integration/test_logs.py tests/integration/test_cards.py \
  tests/interop/test_sdk_interop.py
test-aiohttp-range: setup venvs
	@set -e; purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'; \
	project=$$($(BIN)/python -c "$$purelib"); \
	for which in $(AIOHTTP_RANGE); do \
	  if [ $$which = oldest ]; then spec='aiohttp==$(AIOHTTP_OLDEST)'; else spec='$(AIOHTTP_SPEC)'; fi; \
	  dir=$(AIOHTTP_RANGE_DIR)/$$which; rm -rf $$dir; \
	  $(BIN)/python -m venv --without-pip $$dir; site=$$($$dir/bin/python -c "$$purelib"); \
	  echo "import site; site.addsitedir('$$project')" > $$site/zz_project_venv.pth; \
	  printf '#!%s\nimport sys\nfrom gateway.cli import main\nsys.exit(main())\n' \
	    "$$dir/bin/python" > $$dir/bin/a2a-gateway; chmod +x $$dir/bin/a2a-gateway; \
	  $(BIN)/pip install $(PIP_FLAGS) --no-deps --target $$site "$$spec"; \
	  echo "== $$which: $$($$dir/bin/python -c 'import aiohttp; print("aiohttp", aiohttp.__version__, "from", aiohttp.__file__)')"; \
	  $$dir/bin/python -m pytest -q -p no:cacheprovider $(AIOHTTP_RANGE_TESTS); \
	done

unit: setup
	$(BIN)/pytest -q tests/unit

# Property-based fuzzing of every ingress (tests/fuzz/README.md). `make test` runs a small
# budget of it; this is the long one: 20,000 JSON-RPC, 10,000 REST and 5,000 gRPC inputs.
# A2A_FUZZ_BUDGET=medium|long and A2A_FUZZ_EXAMPLES=N choose other budgets.
.PHONY: fuzz
FUZZ_BUDGET ?= long
fuzz: setup
	A2A_FUZZ_BUDGET=$(FUZZ_BUDGET) $(BIN)/pytest -q -p no:cacheprovider -rfEP tests/fuzz

# The compatibility matrix: run tests/interop/test_matrix.py, which writes the results
# (A2A_MATRIX_RESULTS), then render them into docs/compatibility.md between the matrix markers.
MATRIX_RESULTS := .matrix/results.json
matrix: setup venvs
	rm -f $(MATRIX_RESULTS)
	A2A_MATRIX_RESULTS=$(MATRIX_RESULTS) $(BIN)/pytest -q -p no:cacheprovider tests/interop/test_matrix.py
	$(BIN)/python tests/interop/matrix_report.py $(MATRIX_RESULTS) --page docs/compatibility.md

# bench/README.md: the gateway against nginx, a bare aiohttp proxy and a direct call, the
# middle hop pinned to one core (bench.run, peers), one worker vs two (bench.workers), the
# same with real backends, the push relay's durable queue vs the in-memory relay before it
# (bench.relay, inside bench.run), the stream journal on vs off and a resume (bench.journal,
# inside bench.run), migration mode: none, off, canary, shadow (bench.migration, inside
# bench.run), then 10,000 idle streams through it to an HTTP and to a gRPC backend
# (bench.idle_streams), then what recording the task index costs: off, SQLite, Redis
# (bench.recording).
# nginx-light (Debian) and uvloop are installed for the bench when missing; without nginx
# the nginx rows are reported missing; valgrind too (bench.recording counts instructions per
# call under it: the task index targets). BENCH_ARGS passes options to bench.run.
BENCH_ARGS ?=
bench: setup venvs
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light) || \
	  echo "bench: nginx-light could not be installed: the nginx rows will be missing"
	@command -v valgrind >/dev/null || \
	  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind) || \
	  echo "bench: valgrind could not be installed: the task index targets will be missing"
	@$(BIN)/python -c 'import uvloop' 2>/dev/null || $(BIN)/pip install $(PIP_FLAGS) uvloop || \
	  echo "bench: uvloop could not be installed: only the asyncio loop will be measured"
	$(BIN)/python -m bench.run $(BENCH_ARGS)
	$(BIN)/python -m bench.idle_streams
	$(BIN)/python -m bench.recording

clean:
	rm -rf $(VENV) .venvs .pytest_cache .mypy_cache .ruff_cache .hypothesis .matrix .site

# Offline validators for deploy/ (tests/deploy): kubernetes-validate, helm-python-sdk (Helm's
# Go SDK), hadolint and check-jsonschema, pinned in tests/deploy/requirements-tools.txt, in their
# own virtualenv (about 450 MB: the Helm library and the Kubernetes schemas).
TOOLS := .venvs/tools

.PHONY: deploy-tools deploy-test

$(TOOLS)/.installed: tests/deploy/requirements-tools.txt
	$(PYTHON) -m venv --clear $(TOOLS)
	$(TOOLS)/bin/pip install $(PIP_FLAGS) -r $<
	touch $@

deploy-tools: $(TOOLS)/.installed

# `make test` runs tests/deploy too, so it needs the tools (an extra prerequisite of `test`).
test: deploy-tools

deploy-test: setup deploy-tools
	$(BIN)/pytest -q -p no:cacheprovider tests/deploy

# The container image built and run as docs/deployment.md says, and the compose recipe
# started (tests/image): needs root or a running engine; starts Debian's dockerd when none
# answers (installing docker.io, docker-compose and debootstrap with apt when missing) and
# stops it after. A stand-in base is built once per machine where no registry answers.
.PHONY: image-test
image-test: setup
	A2A_IMAGE_TEST=1 $(BIN)/pytest -q -p no:cacheprovider -rs tests/image

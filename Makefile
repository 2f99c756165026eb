# The two commands a newcomer needs: `make demo` and `make test`.
# Each sets up everything itself: a venv, the Python deps, and a ZooKeeper from the OS packages.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: demo test test-zk39 test-pythons test-314 unit integration chaos lint typecheck check plugin-check docs site-shots bench bench-quick bench-java ab abi floor barelock instant handover-floor profile soak repeat ci-local zookeeper kerberos curator venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,dev]'
	touch $(STAMP)

venv: $(STAMP)

zookeeper:
	./scripts/install-zookeeper

# MIT Kerberos (a test KDC, and the gssapi package of the `kerberos` extra) for the SASL
# GSSAPI tests; where it cannot be installed, those tests skip, naming what is missing.
kerberos: venv
	./scripts/install-kerberos $(PY)

# The Curator versions the tests' Java peers run against (5.4 and 5.7, Debian's jars, each
# with its ZooKeeper client) and a JDK: fetched once into /var/cache/aiocoord/curator.
curator:
	./scripts/install-curator

demo: venv zookeeper
	$(PY) -m aiocoord demo

test: venv zookeeper kerberos curator
	$(PY) -m pytest -q

# The suite against ZooKeeper 3.9 (Debian forky's 3.9.6 jars, on the OS's Java), beside the
# OS's 3.8 that `make test` uses.
test-zk39: venv zookeeper kerberos curator
	home=$$(./scripts/install-zookeeper --version 3.9 --suite forky) && ZOOKEEPER_HOME=$$home $(PY) -m pytest -q

# The suite on every other Python the package claims (3.12, 3.13, 3.14): a venv each; 3.14
# with DeprecationWarning as an error, in a Debian forky root where the machine has no
# python3.14 (scripts/forky-root).
test-pythons: venv zookeeper kerberos curator
	./scripts/test-pythons

# Python 3.14 alone. The forky root is made on the first run (about 4 minutes) and kept in
# /var/cache/aiocoord/forky-root; a later run copies the checkout in and starts at once.
test-314:
	./scripts/test-pythons 3.14

unit: venv
	$(PY) -m pytest -q tests/unit

integration: venv zookeeper kerberos curator
	$(PY) -m pytest -q tests/integration

chaos: venv zookeeper
	$(PY) -m pytest -q tests/chaos

lint: venv
	$(PY) -m ruff check aiocoord tests examples benchmarks
	$(PY) -m ruff format --check aiocoord tests examples benchmarks

typecheck: venv
	$(PY) -m mypy aiocoord

check: lint typecheck test

# The docs site into site/; a broken reference or a warning fails it, and so does a page a
# reader would find broken (raw Sphinx roles, unhighlighted code, an untyped public name).
docs: venv
	$(PY) -m pip install -q -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict -q
	$(PY) scripts/check_site.py site

# Screenshots of the built site (home, a recipe page, API pages) into /tmp/aiocoord-site-shots,
# to look at as a reader; installs headless Chromium if missing.
site-shots: docs
	PYTHON=$(PY) ./scripts/site-shots site

# The pytest plugin in three scratch projects outside the repo (bare, pytest-asyncio, anyio).
plugin-check: venv zookeeper
	PYTHON=$(PY) ./scripts/check-plugin-isolation

# The Java peer (Apache Curator 5.4 on the OS's jars): installed if missing, compiled.
bench-java:
	./scripts/build-curator-peer

bench: venv zookeeper bench-java
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m benchmarks

bench-quick: venv zookeeper bench-java
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m benchmarks --quick

# A commit against the working tree on one workload: `make ab REF=HEAD WORKLOAD=W2`; with
# RTT=0.5 (ms) the clients reach the server through the latency proxy.
REF ?= HEAD
WORKLOAD ?= W2
RTT ?= 0
ab: venv zookeeper
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m benchmarks.ab $(REF) --workload $(WORKLOAD) --rtt $(RTT)

# The same in one process, both trees taking turns in short blocks on one server (the noise of
# the machine's drift left out): `make abi REF=HEAD WORKLOAD=W1`.
abi: venv zookeeper
	$(PY) -m benchmarks.abi $(REF) --workload $(WORKLOAD)

# The event loop's own CPU per W1 cycle with no ZooKeeper and no aiocoord (echo server): `make floor`.
floor: venv
	$(PY) -m benchmarks.floor

# The least a bare Python lock client spends per W1 cycle against a local ZooKeeper: `make barelock`.
barelock: venv zookeeper
	$(PY) -m benchmarks.barelock

# What a W1 cycle costs a client with nothing to wait for (a peer that answers at once) beside
# the same client against ZooKeeper: `make instant`.
instant: venv zookeeper
	$(PY) -m benchmarks.instant

# The least a lock hand-over between two clients takes, with and without a listing, per RTT:
# `make handover-floor`.
handover-floor: venv zookeeper
	$(PY) -m benchmarks.handover_floor

# Where aiocoord's time goes on one workload (py-spy samples, top functions): `make profile WORKLOAD=W1`.
profile: venv zookeeper
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m benchmarks.profile $(WORKLOAD)

# The chaos mix for a chosen duration on an ensemble of its own: `make soak MINUTES=30`.
MINUTES ?= 30
soak: venv zookeeper
	$(PY) -m tests.chaos.soak --minutes $(MINUTES)

# One test (a pytest node id) N times, each in a fresh process, to catch a rare failure:
# `make repeat TEST='tests/chaos/test_scenarios.py::test_x[lock]' N=40`. Failed runs keep
# their output in /tmp/aiocoord-repeat/; it fails if any run did. Without hypothesis's plugin:
# on this machine's CPython 3.11.7 its lazy import at the end of a one-test chaos run failed a
# quarter of the runs that had passed ("AST constructor recursion depth mismatch", a CPython
# bug: python/cpython#106905).
N ?= 20
repeat: venv zookeeper
	@test -n "$(TEST)" || { echo "usage: make repeat TEST=<pytest node id> [N=20]"; exit 2; }
	@rm -rf /tmp/aiocoord-repeat && mkdir -p /tmp/aiocoord-repeat; failed=0; \
	for i in $$(seq 1 $(N)); do \
	  log=/tmp/aiocoord-repeat/run-$$i.log; \
	  if $(PY) -m pytest -q -p no:cacheprovider -p no:hypothesispytest "$(TEST)" > $$log 2>&1; then \
	    echo "run $$i: passed"; rm -f $$log; \
	  else echo "run $$i: FAILED ($$log)"; failed=$$((failed + 1)); fi; \
	done; echo "$$failed of $(N) runs failed"; test $$failed -eq 0

# What CI does, on a fresh clone of the committed tree (uncommitted changes are left out).
ci-local:
	rm -rf /tmp/aiocoord-ci && git clone -q . /tmp/aiocoord-ci && cd /tmp/aiocoord-ci && CI=true bash .ci/run

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

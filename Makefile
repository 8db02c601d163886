# Two commands for a newcomer: `make run` and `make test`. Both install what they need into .venv:
# torch's CPU build, then every other dependency at the version pinned in requirements.lock, then
# trapbot itself with --no-deps (so nothing is resolved afresh), then `pip check`.
#
# requirements.lock pins every runtime and dev dependency at the versions the suite passes with.
# To refresh it: `make lock` resolves pyproject.toml's dependencies and dev extras afresh in a
# throwaway venv and writes its `pip freeze`; then `make clean test test-slow` and commit the lock
# with pyproject.toml. Add or bump a dependency in pyproject.toml first, never in the lock by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH := torch==2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
LOCK := requirements.lock
# -n 2: two xdist workers (the suite is parallel-safe: tmp dirs, PostgreSQL schemas, sim caches
# and ports are per test); --durations=10 prints the ten slowest at the end.
PYTEST_FAST ?= -n 2 --durations=10
# Some shells export PYTHONDONTWRITEBYTECODE=1; then every run recompiles the project and
# re-rewrites 220 test modules (about 5 s of each worker's start). The tests may cache.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-slow install dev lock lint bench clean

run: $(VENV)/.installed
	$(BIN)/trapbot migrate
	$(BIN)/trapbot run

# The fast suite. The slow proofs (marked `slow`: all seeds, whole labelled sets, PostgreSQL soak)
# are left out here and run by `make test-slow`; the two together run every test once.
test: $(VENV)/.installed
	$(BIN)/python -m pytest -q -m "not slow" $(PYTEST_FAST)

# pytest's exit 5 (no test collected: no test is marked slow) is not a failure here.
test-slow: $(VENV)/.installed
	RUN_SLOW=1 $(BIN)/python -m pytest -q -m slow $(PYTEST_FAST) || [ $$? -eq 5 ]

install: $(VENV)/.installed
dev: $(VENV)/.installed

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The CPU build is 2.13.0+cpu: found in a local wheel cache (pip's find-links) when there is
# one, else on PyTorch's own index of CPU builds; either way pip never picks the CUDA build.
install_torch = $(1) -m pip install --quiet "$(TORCH)+cpu" 2>/dev/null \
	|| $(1) -m pip install --quiet "$(TORCH)+cpu" --extra-index-url $(TORCH_CPU_INDEX)

$(VENV)/.torch: | $(BIN)/python
	$(call install_torch,$(BIN)/python)
	touch $@

$(VENV)/.installed: pyproject.toml $(LOCK) $(VENV)/.torch
	$(BIN)/python -m pip install --quiet --no-deps -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m pip check
	touch $@

# Writes the lock from a fresh resolution (see the top of this file); the venv is thrown away.
lock:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	$(call install_torch,"$$tmp/venv/bin/python"); \
	"$$tmp/venv/bin/python" -m pip install --quiet '.[dev]'; \
	{ echo "# Every runtime and dev dependency of trapbot, pinned: written by \`make lock\` (see the Makefile)."; \
	  echo "# torch is the CPU build, installed before this file by the Makefile."; \
	  "$$tmp/venv/bin/python" -m pip freeze --exclude trapbot; } > "$$tmp/lock"; \
	mv "$$tmp/lock" $(LOCK); \
	echo "wrote $(LOCK): $$(grep -vc '^#' $(LOCK)) packages; now run make clean test test-slow"

lint: $(VENV)/.installed
	$(BIN)/ruff check bot cards grader sims tests bench
	$(BIN)/trapbot cards lint

bench: $(VENV)/.installed
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/engine_roundtrip.py

clean:
	rm -rf $(VENV)

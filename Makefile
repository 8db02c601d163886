# Two commands for a newcomer: `make run` and `make test`. Both install what they need into .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH := torch==2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: run test install dev lint bench clean

run: $(VENV)/.installed
	$(BIN)/trapbot migrate
	$(BIN)/trapbot run

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q

install: $(VENV)/.installed
dev: $(VENV)/.installed-dev

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The CPU build is 2.13.0+cpu: found in a local wheel cache (pip's find-links) when there is
# one, else on PyTorch's own index of CPU builds; either way pip never picks the CUDA build.
$(VENV)/.torch: | $(BIN)/python
	$(BIN)/python -m pip install --quiet "$(TORCH)+cpu" 2>/dev/null \
		|| $(BIN)/python -m pip install --quiet "$(TORCH)+cpu" --extra-index-url $(TORCH_CPU_INDEX)
	touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.torch
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check bot cards grader sims tests bench
	$(BIN)/trapbot cards lint

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/engine_roundtrip.py

clean:
	rm -rf $(VENV)

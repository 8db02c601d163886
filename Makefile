# Two commands for a newcomer: `make run` and `make test`. Both install what they need into .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH := torch==2.13.0
# CPU build of torch: this machine's wheel cache first, else PyTorch's CPU index.
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

$(VENV)/.torch: | $(BIN)/python
	$(BIN)/python -m pip install --quiet --no-index $(TORCH) 2>/dev/null \
		|| $(BIN)/python -m pip install --quiet $(TORCH) --index-url $(TORCH_CPU_INDEX)
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

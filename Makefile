# The two commands of the README: `make demo` (the main job) and `make test`.
# Both create .venv if it is missing and install the package with everything it needs.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_OUT ?= out/demo

# torch / torchvision are pinned together: open_clip needs torchvision, and a
# torchvision from another torch build does not import.
TORCH_PINS ?= torch==2.14.1 torchvision==0.29.1

.PHONY: install demo test clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_PINS)
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/t2ibench demo --out $(DEMO_OUT)

test: $(STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf out .pytest_cache

# The two commands of the README: `make demo` (the main job) and `make test`; `make docs` serves
# the documentation site (mkdocs.yml) on http://127.0.0.1:8000.
# Both create .venv if it is missing and install the package with everything it needs:
# .[test] holds every extra ([all] = [audit] + [app], and [docs]) and the test tools.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_OUT ?= out/demo

# torch / torchvision are pinned together: open_clip needs torchvision, and a
# torchvision from another torch build does not import.
TORCH_PINS ?= torch==2.14.1 torchvision==0.29.1

# Debian packages the tests need: Chromium (browser tests of the Gradio apps, driven by
# playwright; never `playwright install`) and the Noto Color Emoji font (PaintSkills renderer).
SYSTEM_PACKAGES ?= chromium fonts-noto-color-emoji

.PHONY: install system-deps demo test test-quick test-pandas2 docs clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_PINS)
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/t2ibench demo --out $(DEMO_OUT)

# The documentation site, rebuilt as pages change; 127.0.0.1 only (`mkdocs build --strict` is
# what the tests run: tests/test_docs_site.py).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

system-deps:
	@if [ -x /usr/bin/chromium ] && [ -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ]; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null; \
	else echo "make: install the Debian packages $(SYSTEM_PACKAGES) (as root: apt-get install $(SYSTEM_PACKAGES))" >&2; exit 1; fi

# Two pytest workers, each test file on one worker (its module fixtures built once), the longest
# files first (tests/conftest.py LONGEST_FILES; xdist's own reordering by test count is off).
# The log ends with the 25 slowest tests and the 25 slowest files (wall and CPU seconds);
# out/test-times.json keeps every test's figures. docs/contributing_tests.md has the measurements.
PYTEST_WORKERS ?= -n 2 --dist loadfile --no-loadscope-reorder
TIMES_FILE ?= out/test-times.json
QUICK_TIMES_FILE ?= out/test-quick-times.json

test: $(STAMP) system-deps
	$(BIN)/python -m pytest -q $(PYTEST_WORKERS) --durations=25 --file-durations=25 --times-file=$(TIMES_FILE)

# The edit loop, a few minutes: the tests not marked slow (tests/slow_tests.py: no browser, no venv
# from the package index, no test function that took 2 CPU seconds or more, such as subprocess
# audits and multi-process launches; docs/contributing_tests.md). CI runs `make test`.
test-quick: $(STAMP) system-deps
	$(BIN)/python -m pytest -q $(PYTEST_WORKERS) -m "not slow" --durations=10 --file-durations=10 \
		--times-file=$(QUICK_TIMES_FILE)

# pyproject.toml allows pandas 2.2 as well as the pandas 3 that .venv installs: the fast tests again
# with pandas 2.2 put in front of it (a side folder on PYTHONPATH, .venv itself unchanged), its
# warnings of behaviour that pandas 3 changes (fillna's downcasting) failing the test. Not part of
# `make test` (it would add the fast tests' 3-4 minutes to CI): run it after changing frame code.
PANDAS2 ?= pandas==2.2.3
PANDAS2_DIR ?= out/pandas2
test-pandas2: $(STAMP) system-deps
	test -f $(PANDAS2_DIR)/.$(PANDAS2) || { rm -rf $(PANDAS2_DIR) && \
		$(BIN)/python -m pip install -q --no-deps --target $(PANDAS2_DIR) $(PANDAS2) pytz && touch $(PANDAS2_DIR)/.$(PANDAS2); }
	PYTHONPATH=$(PANDAS2_DIR) $(BIN)/python -c "import pandas; assert pandas.__version__.startswith('2.'), \
		pandas.__version__; print('pandas', pandas.__version__, 'from', pandas.__file__)"
	PYTHONPATH=$(PANDAS2_DIR) $(BIN)/python -m pytest -q $(PYTEST_WORKERS) -m "not slow" -p no:cacheprovider \
		-W "error:Downcasting:FutureWarning"

clean:
	rm -rf out site .pytest_cache

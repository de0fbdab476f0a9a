"""Fixtures shared by the test modules."""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest

from benchmark import frozen_imports

# The test processes import torch & co. as `t2ibench` does: with the collector paused, then frozen
# (benchmark/frozen_imports.py); every later full collection of a worker's heap skips them.
frozen_imports.install()
# `tests` is this folder (a namespace package: `from tests.test_leaderboard import ...`), even where a
# dependency's wheel installs a top-level `tests` package (ppi-python 0.2.3 does), which would win.
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in list(getattr(sys.modules.get("tests"), "__path__", None) or []):
    sys.modules["tests"] = types.ModuleType("tests")
    sys.modules["tests"].__path__ = [_TESTS]

import slow_tests  # noqa: E402
from lb_synthetic import tiny_audit_argv  # noqa: E402
from shared_folders import shared_across_workers  # noqa: E402

# datasets caches a local folder under ~/.cache/huggingface/datasets keyed by the folder's
# name and card, not its location: a run folder "tiny" of another test session (whose temp
# folder is gone) would otherwise be served from that cache. Each session gets its own
# cache, set before any test module imports datasets and inherited by subprocesses.
_DATASETS_CACHE = tempfile.mkdtemp(prefix="t2ibench-test-datasets-cache-")
os.environ["HF_DATASETS_CACHE"] = _DATASETS_CACHE
atexit.register(shutil.rmtree, _DATASETS_CACHE, ignore_errors=True)

# One CPU thread per test process (and the subprocesses it starts), unless the caller chose:
# `make test` runs two workers on two cores, and torch's OpenMP threads, two per worker, spin
# while they wait for each other (on the CI machine, 3x the CPU time of the in-process model
# tests; docs/contributing_tests.md). Set before any test module imports torch or numpy.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """The built-in tiny models' cache: one folder for the whole session, so each model is
    built once and every later use loads it back through the real ``from_pretrained`` path."""
    root = tmp_path_factory.getbasetemp() / "t2ibench-cache"
    mp = pytest.MonkeyPatch()
    mp.setenv("T2IBENCH_CACHE", str(root))
    yield root
    mp.undo()


@pytest.fixture(scope="session")
def tiny_audit(tmp_path_factory):
    """One real (meaningless) audit of builtin:tiny-sd on gep_neutral and pst_single, shared
    read-only by the validation and submission tests: its results.json is what users submit.
    Built once per session, whatever the number of xdist workers (the tests only read or copy it)."""

    def build(root: Path) -> None:
        out = root / "run"
        env = {**os.environ, "T2IBENCH_CACHE": str(root / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
        proc = subprocess.run([sys.executable, "-m", "benchmark.cli", *tiny_audit_argv(out)], capture_output=True,
                              text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]

    return shared_across_workers(tmp_path_factory, "tiny_audit", build) / "run"

# Per-file wall and CPU time (--file-durations N, --times-file PATH): tests/time_report.py
pytest_plugins = ["time_report"]

#: The test files that take the longest (CPU seconds measured by tests/time_report.py,
#: docs/contributing_tests.md), longest first. `make test` hands whole files to its two xdist
#: workers in collection order (--dist loadfile --no-loadscope-reorder); starting with these
#: lets the short files fill in at the end, so both workers finish at about the same time
#: instead of one running the last long file alone. A file missing here only runs later.
LONGEST_FILES = [
    "test_generate.py", "test_model_families.py", "test_bench_scripts.py", "test_run_cli.py",
    "test_run_folder_faults.py", "test_worker.py", "test_packaging.py", "test_annotation_browser.py",
    "test_lora_audit.py", "test_tasks.py", "test_metric_modules.py", "test_annotate_stage.py",
    "test_compare_calibration.py", "test_new_task.py", "test_supplied_images.py", "test_human_dataset.py",
    "test_leaderboard_browser.py", "test_submit.py", "test_generation_speed.py", "test_mcas_reference.py",
    "test_validate.py", "test_compare_gates.py", "test_reference_attributes.py", "test_terminal.py",
    "test_compare_cli.py",
]

#: Markers whose tests may run past the default timeout ([tool.pytest.ini_options] timeout),
#: with the limit they get: a venv installed from the package index.
SLOW_MARKER_TIMEOUTS = {"wheel": 1200, "fresh_venv": 1200}


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
    for item in items:
        limits = [t for m, t in SLOW_MARKER_TIMEOUTS.items() if item.get_closest_marker(m)]
        if limits and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(max(limits)))
    slow_tests.mark(items)  # what `make test-quick` (-m "not slow") leaves out

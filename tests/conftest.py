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

# `tests` is this folder (a namespace package: `from tests.test_leaderboard import ...`), even where a
# dependency's wheel installs a top-level `tests` package (ppi-python 0.2.3 does), which would win.
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in list(getattr(sys.modules.get("tests"), "__path__", None) or []):
    sys.modules["tests"] = types.ModuleType("tests")
    sys.modules["tests"].__path__ = [_TESTS]

from lb_synthetic import tiny_audit_argv  # noqa: E402
from shared_folders import shared_across_workers  # noqa: E402

# datasets caches a local folder under ~/.cache/huggingface/datasets keyed by the folder's
# name and card, not its location: a run folder "tiny" of another test session (whose temp
# folder is gone) would otherwise be served from that cache. Each session gets its own
# cache, set before any test module imports datasets and inherited by subprocesses.
_DATASETS_CACHE = tempfile.mkdtemp(prefix="t2ibench-test-datasets-cache-")
os.environ["HF_DATASETS_CACHE"] = _DATASETS_CACHE
atexit.register(shutil.rmtree, _DATASETS_CACHE, ignore_errors=True)


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

"""The test suite's own tools: the list of slow tests names tests that exist, the scheduling
order names files that exist, and the time report adds up per file what its reports say."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import conftest
import slow_tests
import time_report

TESTS = Path(__file__).resolve().parent


def _defined_tests(path: Path) -> set[str]:
    """``test_x`` and ``Class::test_x`` of the test functions defined in ``path``."""
    tree = ast.parse(path.read_text())
    names = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        names |= {f"{cls.name}::{f.name}" for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return {n for n in names if n.split("::")[-1].startswith("test")}


def test_every_listed_slow_test_exists():
    """A renamed or deleted test left in tests/slow_tests.txt would leave its successor in
    `make test-quick` unnoticed: the list must name tests that exist."""
    names = slow_tests.listed()
    assert len(names) > 50
    missing = []
    for name in sorted(names):
        file, _, function = name.partition("::")
        path = TESTS.parent / file
        if not path.is_file() or function not in _defined_tests(path):
            missing.append(name)
    assert missing == [], f"tests/slow_tests.txt names tests that do not exist (run tests/slow_tests.py again): {missing}"


def test_longest_files_exist_once():
    assert len(set(conftest.LONGEST_FILES)) == len(conftest.LONGEST_FILES)
    assert [f for f in conftest.LONGEST_FILES if not (TESTS / f).is_file()] == []


def test_slow_functions_add_up_parameter_cases_and_merge_runs():
    one = {"tests": {"tests/test_a.py::test_x[1]": {"cpu_own": 1.2, "cpu_subprocesses": 0.0},
                     "tests/test_a.py::test_x[2]": {"cpu_own": 0.5, "cpu_subprocesses": 0.6},
                     "tests/test_a.py::test_y": {"cpu_own": 0.1, "cpu_subprocesses": 1.0}}}
    two = {"tests": {"tests/test_a.py::test_y": {"cpu_own": 0.0, "cpu_subprocesses": 2.5}}}
    assert slow_tests.slow_functions([one], 2.0) == ["tests/test_a.py::test_x"]  # 1.2 + 0.5 + 0.6 s
    assert slow_tests.slow_functions([one, two], 2.0) == ["tests/test_a.py::test_x", "tests/test_a.py::test_y"]
    assert slow_tests.slow_functions([one], 5.0) == []


def test_browser_files_and_venv_markers_are_slow():
    def item(name, markers=()):
        return SimpleNamespace(path=Path(name), nodeid=f"tests/{name}::test_z",
                               get_closest_marker=lambda m: m if m in markers else None)

    assert slow_tests.is_slow(item("test_x_browser.py"), set())
    assert slow_tests.is_slow(item("test_x.py", ["wheel"]), set())
    assert slow_tests.is_slow(item("test_x.py"), {"tests/test_x.py::test_z"})
    assert not slow_tests.is_slow(item("test_x.py", ["timeout"]), set())


def test_time_report_sums_phases_per_test_and_tests_per_file():
    phases = ("setup", "call", "teardown")

    def report(nodeid, when, duration, own, sub, start, worker="gw0"):
        """A phase's report as the controller gets it: the item's properties so far, one per phase run."""
        done = phases[:phases.index(when) + 1]
        return SimpleNamespace(nodeid=nodeid, when=when, duration=duration, start=start, stop=start + duration,
                               node=SimpleNamespace(gateway=SimpleNamespace(id=worker)),
                               user_properties=[(time_report._PROPERTY, (p, own, sub)) for p in done])

    tally = time_report._Tally()
    for when in ("setup", "call", "teardown"):
        tally.add(report("tests/test_a.py::test_x", when, 1.0, 0.5, 2.0, start=100.0))
    tally.add(report("tests/test_a.py::test_y", "call", 3.0, 1.0, 0.0, start=110.0, worker="gw1"))
    tally.add(report("tests/test_b.py::test_z", "call", 0.5, 0.25, 0.0, start=105.0))
    x = tally.tests["tests/test_a.py::test_x"]
    # each phase's CPU is counted once, from the report of that phase
    assert (x["wall"], x["cpu_own"], x["cpu_subprocesses"]) == (3.0, 1.5, 6.0)
    [a, b] = tally.per_file()  # most wall time first
    assert (a["file"], a["tests"], a["wall"], a["cpu"], a["cpu_subprocesses"]) == ("tests/test_a.py", 2, 6.0, 8.5, 6.0)
    assert a["workers"] == ["gw0", "gw1"] and (a["start"], a["stop"]) == (100.0, 113.0)
    assert (b["file"], b["cpu"]) == ("tests/test_b.py", 0.25)

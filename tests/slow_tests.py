"""Which tests `make test-quick` leaves out: the ``slow`` marker, given by tests/conftest.py.

A test is slow when
- its file drives a browser (``*_browser.py``: Chromium through playwright, seconds per page),
- it builds a venv from the package index (markers ``wheel``, ``fresh_venv``),
- it is marked ``@pytest.mark.slow`` in its file (the way to mark a new test), or
- its function is listed in tests/slow_tests.txt: the test functions that took at least
  ``--cpu-s`` CPU seconds (all their parameter cases together, with the module fixtures they
  built first) in a measured run of the whole suite. The list is made by this script from the
  times file of ``make test`` (out/test-times.json); several files are merged (a test that was
  slow in any of them stays slow), so a run of ``make test-quick`` with ``--times-file`` adds
  the tests that pay for a module fixture once the test that used to build it is left out:

    python tests/slow_tests.py out/test-times.json [more.json ...] [--cpu-s 2] [--add] > new.txt
    mv new.txt tests/slow_tests.txt   # --add: keep the functions already listed

Everything else runs in both ``make test`` and ``make test-quick``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest

LIST = Path(__file__).with_name("slow_tests.txt")
MARKERS = ("wheel", "fresh_venv")  # a venv installed from the package index


def function_id(nodeid: str) -> str:
    """``tests/test_x.py::test_y`` of a test id (its parameter case dropped)."""
    return nodeid.split("[", 1)[0]


def listed() -> set[str]:
    return {ln.strip() for ln in LIST.read_text().splitlines() if ln.strip() and not ln.startswith("#")}


def is_slow(item, names: set[str]) -> bool:
    return (item.path.name.endswith("_browser.py") or any(item.get_closest_marker(m) for m in MARKERS)
            or function_id(item.nodeid) in names)


def mark(items) -> None:
    """Give the ``slow`` marker to every slow test among ``items``."""
    names = listed()
    for item in items:
        if not item.get_closest_marker("slow") and is_slow(item, names):
            item.add_marker(pytest.mark.slow)


def slow_functions(times: list[dict], cpu_s: float) -> list[str]:
    """The test functions whose cases took at least ``cpu_s`` CPU seconds in one of ``times``."""
    slow: set[str] = set()
    for doc in times:
        per_function: dict[str, float] = defaultdict(float)
        for nodeid, t in doc["tests"].items():
            per_function[function_id(nodeid)] += t["cpu_own"] + t["cpu_subprocesses"]
        slow |= {f for f, cpu in per_function.items() if cpu >= cpu_s}
    return sorted(slow)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Print tests/slow_tests.txt from times files of tests/time_report.py.")
    parser.add_argument("times", nargs="+", type=Path, help="JSON written by pytest --times-file")
    parser.add_argument("--cpu-s", type=float, default=2.0, help="CPU seconds that make a test function slow")
    parser.add_argument("--add", action="store_true", help="keep the functions tests/slow_tests.txt lists now")
    args = parser.parse_args(argv)
    docs = [json.loads(p.read_text()) for p in args.times]
    names = sorted(set(slow_functions(docs, args.cpu_s)) | (listed() if args.add else set()))
    print("# Test functions `make test-quick` leaves out (tests/slow_tests.py made this list: functions that took")
    print(f"# at least {args.cpu_s:g} CPU seconds in a measured run; docs/contributing_tests.md). One per line.")
    print("\n".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())

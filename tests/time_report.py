"""Where the test suite's time goes: each test's wall time and CPU time, summed per test file.

A pytest plugin (tests/conftest.py loads it). Each test's setup, call and teardown are measured
where they run (an xdist worker or the single process): wall time from pytest's own reports, CPU
time as user + system seconds of the test process and of the subprocesses it waited for
(``getrusage``: a model built in a subprocess counts, a server thread counts in its process).
The controller adds them up per file. ``--file-durations N`` prints the N files that took the
longest after the run (``make test`` does, so CI's log keeps the table); ``--times-file=PATH``
writes every test's figures and the per-file sums as JSON. Write it with ``=``: pytest reads
the command line once before this plugin's options exist, and a separate existing PATH would be
taken for the tests to run (out/ instead of tests/, so this file would not load: "unrecognized
arguments" on the second `make test` of a checkout).

Under load, wall time grows with the machine's other work and CPU time much less: compare CPU
seconds between runs made at different times, wall seconds only within one run.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest

_PROPERTY = "cpu_seconds"  # (phase, own process, waited-for subprocesses), one per phase


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def pytest_addoption(parser):
    group = parser.getgroup("time report (tests/time_report.py)")
    group.addoption("--file-durations", type=int, default=None, metavar="N",
                    help="after the run, show the N test files with the most wall time, with their CPU time "
                         "(0 for all)")
    group.addoption("--times-file", default=None, metavar="PATH",
                    help="write each test's wall and CPU seconds and the per-file sums to PATH (JSON)")


def _measure(item, phase: str):
    """Wrap one phase of one test: its CPU seconds go with the phase's report (user_properties
    travel from an xdist worker to the controller)."""
    own0, kids0 = _cpu()
    try:
        return (yield)
    finally:
        own1, kids1 = _cpu()
        item.user_properties.append((_PROPERTY, (phase, own1 - own0, kids1 - kids0)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _measure(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _measure(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    return (yield from _measure(item, "teardown"))


class _Tally:
    """The controller's sums, from the reports it receives."""

    def __init__(self):
        self.tests: dict[str, dict] = {}
        self.started = time.time()

    def add(self, report) -> None:
        test = self.tests.setdefault(report.nodeid, {"wall": 0.0, "cpu_own": 0.0, "cpu_subprocesses": 0.0,
                                                     "worker": "main", "start": report.start, "stop": report.stop})
        test["wall"] += report.duration
        test["start"], test["stop"] = min(test["start"], report.start), max(test["stop"], report.stop)
        node = getattr(report, "node", None)  # set by xdist on the controller
        if node is not None:
            test["worker"] = node.gateway.id
        for name, value in report.user_properties:
            if name == _PROPERTY and value[0] == report.when:
                test["cpu_own"] += value[1]
                test["cpu_subprocesses"] += value[2]

    def per_file(self) -> list[dict]:
        files: dict[str, dict] = defaultdict(lambda: {"tests": 0, "wall": 0.0, "cpu": 0.0, "cpu_subprocesses": 0.0,
                                                      "workers": set(), "start": float("inf"), "stop": 0.0})
        for nodeid, t in self.tests.items():
            f = files[nodeid.split("::", 1)[0]]
            f["tests"] += 1
            f["wall"] += t["wall"]
            f["cpu"] += t["cpu_own"] + t["cpu_subprocesses"]
            f["cpu_subprocesses"] += t["cpu_subprocesses"]
            f["workers"].add(t["worker"])
            f["start"], f["stop"] = min(f["start"], t["start"]), max(f["stop"], t["stop"])
        rows = [{"file": name, **f, "workers": sorted(f["workers"])} for name, f in files.items()]
        return sorted(rows, key=lambda r: -r["wall"])


def pytest_configure(config):
    if config.getoption("file_durations") is not None or config.getoption("times_file"):
        config.pluginmanager.register(_Reporter(config), "t2ibench_time_report")


class _Reporter:
    def __init__(self, config):
        self.config, self.tally = config, _Tally()

    def pytest_runtest_logreport(self, report):
        if os.environ.get("PYTEST_XDIST_WORKER") is None:  # the controller, or a run without xdist
            self.tally.add(report)

    def pytest_terminal_summary(self, terminalreporter):
        if os.environ.get("PYTEST_XDIST_WORKER") is not None or not self.tally.tests:
            return
        rows, elapsed = self.tally.per_file(), time.time() - self.tally.started
        t0 = min(r["start"] for r in rows)
        shown = self.config.getoption("file_durations")
        if shown is not None:
            tr = terminalreporter
            tr.write_sep("=", f"time per test file ({'all' if not shown else f'the {shown} longest'}; "
                              "wall s of setup+call+teardown, CPU s incl. waited-for subprocesses)")
            tr.write_line(f"{'wall s':>8} {'CPU s':>8} {'of which subproc.':>17} {'tests':>5}  "
                          f"{'worker':<7} {'from - to s':>13}  file")
            for r in rows[:shown or None]:
                tr.write_line(f"{r['wall']:8.1f} {r['cpu']:8.1f} {r['cpu_subprocesses']:17.1f} {r['tests']:5d}  "
                              f"{','.join(r['workers']):<7} {r['start'] - t0:6.0f} {r['stop'] - t0:6.0f}  {r['file']}")
            tr.write_line(f"{'':>8} {'':>8} {'':>17} {len(self.tally.tests):5d}  all {len(rows)} files: "
                          f"{sum(r['wall'] for r in rows):.0f} s of test wall time, "
                          f"{sum(r['cpu'] for r in rows):.0f} s CPU; the session took {elapsed:.0f} s "
                          f"(load average now {os.getloadavg()[0]:.1f})")
        path = self.config.getoption("times_file")
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps({"files": rows, "tests": self.tally.tests,
                                              "load_average": os.getloadavg()}, indent=1))

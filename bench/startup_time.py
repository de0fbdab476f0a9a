"""Benchmark: what a ``t2ibench`` process costs before and around its work, with the heavy
libraries imported under a paused, then frozen, garbage collector (``benchmark/frozen_imports.py``)
and without (``T2IBENCH_NO_FROZEN_IMPORTS=1``).

Each command runs in its own process, the two settings alternated, ``--repeats`` times each;
the table gives the median wall and CPU seconds (user + system, from ``os.wait4``), the peak
resident memory and the ratio frozen / as-is, side by side in one run.

    python bench/startup_time.py                       # light commands and a tiny audit (2 suites, --limit 4), 3 repeats
    python bench/startup_time.py --repeats 5 --out bench-results/
    python bench/startup_time.py --commands scores     # one command only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmark.contract.times import utc_iso  # noqa: E402
from benchmark.frozen_imports import OPT_OUT  # noqa: E402
from benchmark.present.text import markdown_table  # noqa: E402
from bench.workload import prompt_suites  # noqa: E402

#: name -> t2ibench arguments ({out}: a fresh run folder per process)
COMMANDS = {
    "scores": ["scores"],
    "probes-list": ["probes", "list"],
    "tiny-audit": ["run", "--model", "builtin:tiny-sd", "--suites", *prompt_suites(2), "--limit", "4",
                   "--out", "{out}", "--quiet"],
}
SETTINGS = {"frozen": {}, "as-is": {OPT_OUT: "1"}}


def one_process(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall s, CPU s and peak RSS MB of ``python -m benchmark.cli ARGV``; a failure stops the bench."""
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as stderr:
        args = [a.replace("{out}", str(Path(tmp) / "run")) for a in argv]
        start = time.perf_counter()
        # stderr to a file, not a pipe: a child that writes more than a pipe holds would block while
        # os.wait4 waits for it
        proc = subprocess.Popen([sys.executable, "-m", "benchmark.cli", *args], env=env,
                                stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        stderr.seek(0)
        err = stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"startup_time: t2ibench {' '.join(argv)} failed:\n{err[-2000:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", nargs="+", choices=sorted(COMMANDS), default=list(COMMANDS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="folder for startup_time.json and .md")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    root = str(Path(__file__).resolve().parents[1])
    base_env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
                "HF_HUB_OFFLINE": "1"}
    base_env.pop(OPT_OUT, None)
    one_process(COMMANDS["tiny-audit"] if "tiny-audit" in args.commands else COMMANDS["scores"], base_env)  # warm caches
    rows = []
    for name in args.commands:
        samples: dict[str, list[dict[str, float]]] = {s: [] for s in SETTINGS}
        for _ in range(args.repeats):
            for setting, extra in SETTINGS.items():
                samples[setting].append(one_process(COMMANDS[name], {**base_env, **extra}))
        med = {s: {k: statistics.median(x[k] for x in v) for k in v[0]} for s, v in samples.items()}
        rows.append({"command": name, "repeats": args.repeats,
                     **{f"{s}_{k}": round(v, 2) for s, m in med.items() for k, v in m.items()},
                     "cpu_ratio": round(med["frozen"]["cpu_s"] / med["as-is"]["cpu_s"], 3),
                     "wall_ratio": round(med["frozen"]["wall_s"] / med["as-is"]["wall_s"], 3)})

    header = (f"startup_time {utc_iso()} on {platform.node()} ({os.cpu_count()} CPUs, Python {platform.python_version()}, "
              f"load average {os.getloadavg()[0]:.2f})")
    table = markdown_table(list(rows[0]), [[str(v) for v in r.values()] for r in rows], align="l" + "r" * (len(rows[0]) - 1),
                           pad=True)
    print(header)
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "startup_time.json").write_text(json.dumps({"header": header, "rows": rows}, indent=2))
        (args.out / "startup_time.md").write_text(f"{header}\n\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: the leaderboard app with many models (10 to 10,000).

For each size N: writes N synthetic valid results files (a real tiny audit's results.json
with other model ids and shifted scores: ``tests/lb_synthetic.write_many``), builds the
contents table (``t2ibench leaderboard build-contents``), rebuilds it after one new file
(counting the files read), starts ``t2ibench leaderboard`` on 127.0.0.1 as a subprocess and
times its first HTTP 200, a search, a page turn and the forest plot of 10 selected models
(through the app's own API, ``gradio_client``), with the app's peak memory (VmHWM of its
process). The synthetic models' scores are made up: only the times mean anything.

    python bench/leaderboard_scale.py                         # 10, 100, 1000 models
    python bench/leaderboard_scale.py --sizes 10000 --out bench_out
    python bench/leaderboard_scale.py --results-json RUN/results.json   # skip the tiny audit
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
sys.path.insert(0, str(ROOT / "tests"))  # the synthetic results generator the tests use

from benchmark.present.text import markdown_table  # noqa: E402
from benchmark.present.progress import progress_bar  # noqa: E402
from lb_synthetic import many_model_ids, tiny_audit_argv, write_many  # noqa: E402
from submissions.leaderboard import contents  # noqa: E402

COLUMNS = ("models", "write_s", "build_s", "rebuild_s", "rebuild_reads", "start_s", "search_s", "page_s",
           "forest10_s", "peak_rss_mb")


def tiny_results(work: Path) -> Path:
    """A real (meaningless) tiny audit's results.json, as the tests make it."""
    out = work / "tiny-run"
    env = {**os.environ, "T2IBENCH_CACHE": str(work / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "benchmark.cli", *tiny_audit_argv(out)]
    print(f"tiny audit: t2ibench {' '.join(cmd[3:-2])}", file=sys.stderr)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"leaderboard_scale: error: the tiny audit failed: {proc.stderr.strip()[-300:]}")
    return out / "results.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _first_200(url: str, proc: subprocess.Popen, timeout: float) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"leaderboard_scale: error: the app exited with status {proc.returncode}: "
                             f"{proc.stderr.read().decode()[-300:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return time.perf_counter() - t0
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"leaderboard_scale: error: no HTTP 200 from {url} within {timeout:.0f} s")


def _timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def time_app(folder: Path, n: int, probes: str, timeout: float) -> dict:
    """Start the app on ``folder``; (first HTTP 200, search, page turn, forest of 10) seconds and peak RSS."""
    from gradio_client import Client

    port = _free_port()
    cmd = [sys.executable, "-m", "benchmark.cli", "leaderboard", "--results", str(folder), "--host", "127.0.0.1",
           "--port", str(port)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/"
        start = _first_200(url, proc, timeout)
        client = Client(url, verbose=False)
        ids = many_model_ids(n)[:10]  # model-00000 ... model-00009: what the search finds
        view = "All headline scores"
        # filters: search, suites, families, demo, sort, view, evaluated, images (the table's order)
        search_s, _ = _timed(lambda: client.predict([], "model-0000", [], [], True, None, view, "all", "all",
                                                    api_name="/search"))
        page_s, _ = _timed(lambda: client.predict(1, [], "model-0000", [], [], True, None, view, "all", "all",
                                                  api_name="/page"))
        keys = [f"{i}@main#{probes}" for i in ids]  # the ten models the search shows, selected
        forest_s, _ = _timed(lambda: client.predict(view, True, keys, [], api_name="/forest"))
        return {"start_s": start, "search_s": search_s, "page_s": page_s, "forest10_s": forest_s,
                "peak_rss_mb": _peak_rss_mb(proc.pid)}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def one_size(n: int, results_json: Path, work: Path, timeout: float) -> dict:
    folder = work / f"lb-{n}"
    with progress_bar(n, f"{n} results files", unit="file") as bar:
        write_s, paths = _timed(lambda: write_many(results_json, folder, n, progress=lambda: bar.update(1)))
    build_s, _ = _timed(lambda: contents.build_contents(folder))
    extra = folder / "results" / "zz-new__model" / "2025-01-02T00-00-00.json"
    extra.parent.mkdir(parents=True)
    extra.write_bytes(paths[0].read_bytes().replace(b"org000/model-00000", b"zz-new/model"))
    stats = contents.BuildStats()
    rebuild_s, _ = _timed(lambda: contents.build_contents(folder, stats))
    return {"models": n, "write_s": write_s, "build_s": build_s, "rebuild_s": rebuild_s,
            "rebuild_reads": stats.read,
            **time_app(folder, n, json.loads(results_json.read_text())["probes"]["fingerprint"], timeout)}


def table_text(rows: list[dict]) -> str:
    return markdown_table(list(COLUMNS), ([f"{r[c]:,}" if isinstance(r[c], int) else f"{r[c]:.2f}" for c in COLUMNS]
                                          for r in rows), align="r" * len(COLUMNS))


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000], help="numbers of models")
    ap.add_argument("--results-json", type=Path, help="a real results.json to copy (default: a tiny audit is run)")
    ap.add_argument("--work", type=Path, help="where the synthetic folders go (default: a temporary folder)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the app's first HTTP 200")
    ap.add_argument("--out", type=Path, help="write leaderboard_scale.json there")
    args = ap.parse_args(argv)
    if any(n < 1 for n in args.sizes):
        ap.error("--sizes must be positive")
    if args.results_json is not None and not args.results_json.is_file():
        ap.error(f"--results-json: no such file: {args.results_json}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="t2ibench-lb-scale-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        results_json = args.results_json or tiny_results(work)
        rows = [one_size(n, results_json, work, args.timeout) for n in args.sizes]
    text = table_text(rows)
    machine = f"{platform.machine()}, {os.cpu_count()} CPU(s), Python {platform.python_version()}"
    print(f"Leaderboard at scale ({machine}); synthetic models, made-up scores: only the times mean anything.")
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        doc = {"machine": machine, "rows": rows}
        (args.out / "leaderboard_scale.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

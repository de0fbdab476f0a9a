"""Benchmark: the leaderboard app with many models (10 to 10,000).

For each size N: writes N synthetic valid results files (a real tiny audit's results.json
with other model ids and shifted scores: ``tests/lb_synthetic.write_many``), builds the
contents table (``build_contents``), adds one new file and rebuilds it in this process
(``add1_s``, counting the files read) and with the command a user runs, a fresh Python
(``t2ibench leaderboard build-contents DIR``: ``add1_cli_s``). Then, once every board is built,
it starts ``t2ibench leaderboard`` on 127.0.0.1 as a subprocess on each board in turn, the sizes
alternated ``--starts`` times (the machine is shared: alternating spreads its load over the
sizes), and times its first HTTP 200 (the median of the starts), then through the app's own API
(``gradio_client``) a search, a page turn, the last page, the whole board ordered worst first
and the forest plot of 10 selected models, with the app's peak memory (VmHWM of its process)
and the machine's load average (1 min) when each start began. The synthetic models' scores are
made up: only the times mean anything.

    python bench/leaderboard_scale.py                         # 10, 100, 1000 models
    python bench/leaderboard_scale.py --sizes 100 10000 --starts 3 --out bench_out
    python bench/leaderboard_scale.py --results-json RUN/results.json   # skip the tiny audit
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
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

COLUMNS = ("models", "write_s", "build_s", "add1_s", "add1_reads", "add1_cli_s", "start_s", "starts_s", "load",
           "search_s", "page_s", "last_s", "worst_first_s", "forest10_s", "peak_rss_mb")


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


def rss_mb(pid: int, field: str = "VmHWM") -> float:
    """The process's peak memory (VmHWM), or another line of its status (VmRSS: now), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
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


def _filters(search: str = "", order: str = "value") -> list:
    """The table's filters, in the order the app's API takes them (board_tab.FIELDS): search, suites,
    families, show demo, rank by (None: the first column), score columns, evaluated by, images,
    order, adapters, access, made since, until, package versions, columns shown."""
    return [search, [], [], True, None, "All headline scores", "all", "all", order, "all", "all", "", "", [],
            ["tier", "badge", "suites"]]


def start_app(folder: Path | str, timeout: float, *, root: Path = ROOT, option: str = "--results",
              env: dict | None = None) -> tuple[subprocess.Popen, str, float, float]:
    """Start the app of the checkout ``root`` (default: this one) on ``folder`` (``option``:
    ``--results`` for a folder, ``--repo`` for a Hub dataset id), with ``env`` added to the
    environment: (its process, its URL, seconds to its first HTTP 200, the machine's load average
    when it started)."""
    port = _free_port()
    cmd = [sys.executable, "-m", "benchmark.cli", "leaderboard", option, str(folder), "--host", "127.0.0.1",
           "--port", str(port)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(root), **(env or {})}
    load = os.getloadavg()[0]
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/"
    try:
        return proc, url, _first_200(url, proc, timeout), load
    except BaseException:
        stop_app(proc)
        raise


def stop_app(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=30)


def time_requests(url: str, proc: subprocess.Popen, n: int, probes: str) -> dict:
    """A search, a page turn, the last page, the whole board worst first, the forest of 10, and
    the app's peak RSS so far."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    ids = many_model_ids(n)[:10]  # model-00000 ... model-00009: what the search finds
    search_s, _ = _timed(lambda: client.predict([], *_filters("model-0000"), api_name="/search"))
    page_s, _ = _timed(lambda: client.predict(1, [], *_filters("model-0000"), api_name="/page"))
    keys = [f"{i}@main#{probes}" for i in ids]  # the ten models the search shows (the picker's choices), selected
    forest_s, _ = _timed(lambda: client.predict("All headline scores", True, keys, [], api_name="/forest"))
    last_s, _ = _timed(lambda: client.predict(1, [], *_filters(), api_name="/last"))
    worst_s, _ = _timed(lambda: client.predict([], *_filters(order="value-worst"), api_name="/search"))
    return {"search_s": search_s, "page_s": page_s, "last_s": last_s, "worst_first_s": worst_s,
            "forest10_s": forest_s, "peak_rss_mb": rss_mb(proc.pid)}


def build_board(n: int, results_json: Path, work: Path) -> tuple[Path, dict]:
    """The board of ``n`` synthetic files, its table built, then one file added and the table
    rebuilt in this process and by the command (a fresh Python)."""
    folder = work / f"lb-{n}"
    with progress_bar(n, f"{n} results files", unit="file") as bar:
        write_s, paths = _timed(lambda: write_many(results_json, folder, n, progress=lambda: bar.update(1)))
    build_s, _ = _timed(lambda: contents.build_contents(folder))
    stats = contents.BuildStats()
    add_one(paths[0], folder, "zz-new/model")
    add1_s, _ = _timed(lambda: contents.build_contents(folder, stats))
    add_one(paths[0], folder, "zz-new/model-cli")
    cmd = [sys.executable, "-m", "benchmark.cli", "leaderboard", "build-contents", str(folder)]
    add1_cli_s, proc = _timed(lambda: subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900))
    if proc.returncode != 0 or "(1 read," not in proc.stdout:
        raise SystemExit(f"leaderboard_scale: error: build-contents did not read the one new file: "
                         f"{(proc.stdout + proc.stderr).strip()[-300:]}")
    return folder, {"models": n, "write_s": write_s, "build_s": build_s, "add1_s": add1_s, "add1_reads": stats.read,
                    "add1_cli_s": add1_cli_s}


def add_one(like: Path, folder: Path, model_id: str) -> None:
    """A new results file of ``model_id`` under ``folder``: a copy of the first synthetic model's ``like``."""
    extra = folder / "results" / model_id.replace("/", "__") / "2025-01-02T00-00-00.json"
    extra.parent.mkdir(parents=True)
    extra.write_bytes(like.read_bytes().replace(b"org000/model-00000", model_id.encode()))


def time_apps(boards: list[tuple[Path, dict]], probes: str, starts: int, timeout: float) -> None:
    """Start the app on each board in turn, ``starts`` rounds; the last start of each board also
    times the requests. Adds the median start (and every start) and the mean load to each row."""
    times: dict[int, list[float]] = {row["models"]: [] for _, row in boards}
    loads: dict[int, list[float]] = {row["models"]: [] for _, row in boards}
    for round_ in range(starts):
        for folder, row in boards:
            proc, url, start_s, load = start_app(folder, timeout)
            try:
                times[row["models"]].append(start_s)
                loads[row["models"]].append(load)
                if round_ == starts - 1:
                    row.update(time_requests(url, proc, row["models"], probes))
            finally:
                stop_app(proc)
    for _, row in boards:
        row["start_s"] = statistics.median(times[row["models"]])
        row["starts_s"] = " / ".join(f"{t:.1f}" for t in times[row["models"]])
        row["load"] = statistics.fmean(loads[row["models"]])


def _cell(value) -> str:
    return f"{value:,}" if isinstance(value, int) else value if isinstance(value, str) else f"{value:.2f}"


def table_text(rows: list[dict]) -> str:
    table = markdown_table(list(COLUMNS), ([_cell(r[c]) for c in COLUMNS] for r in rows), align="r" * len(COLUMNS))
    if len(rows) > 1:
        table += (f"\n\nstart-up, largest / smallest board: {rows[-1]['start_s'] / rows[0]['start_s']:.2f}x "
                  f"(medians of {rows[0]['starts_s'].count('/') + 1} alternated starts)")
    return table


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000], help="numbers of models")
    ap.add_argument("--results-json", type=Path, help="a real results.json to copy (default: a tiny audit is run)")
    ap.add_argument("--work", type=Path, help="where the synthetic folders go (default: a temporary folder)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the app's first HTTP 200")
    ap.add_argument("--starts", type=int, default=1, help="starts of the app per board, the sizes alternated (median)")
    ap.add_argument("--out", type=Path, help="write leaderboard_scale.json there")
    args = ap.parse_args(argv)
    if any(n < 1 for n in args.sizes):
        ap.error("--sizes must be positive")
    if not 1 <= args.starts <= 20:
        ap.error("--starts must be between 1 and 20")
    if args.results_json is not None and not args.results_json.is_file():
        ap.error(f"--results-json: no such file: {args.results_json}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="t2ibench-lb-scale-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        results_json = args.results_json or tiny_results(work)
        boards = [build_board(n, results_json, work) for n in args.sizes]
        probes = json.loads(results_json.read_text())["probes"]["fingerprint"]
        time_apps(boards, probes, args.starts, args.timeout)
        rows = [row for _, row in boards]
    text = table_text(rows)
    machine = (f"{platform.machine()}, {os.cpu_count()} CPU(s), Python {platform.python_version()}; load average "
               "(1 min) at each start in the load column: the machine may be shared")
    print(f"Leaderboard at scale ({machine}); synthetic models, made-up scores: only the times mean anything.")
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        doc = {"machine": machine, "rows": rows}
        (args.out / "leaderboard_scale.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

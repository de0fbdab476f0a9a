"""Benchmark: "Reload results" of the leaderboard app with many models, when nothing changed and
when one thing changed before each reload, as a visitor does it: a click in Debian's headless
Chromium, timed until the page and the app are quiet (every event the click sets off included),
or through the app's API (``--api``); this checkout side by side with another
(``--baseline-root``: ``git archive COMMIT | tar -x -C DIR``), on the same boards.

Boards (``--source``):

- ``hub``: a synthetic contents table of N models (``tests/lb_synthetic.synthetic_table``)
  served as a Hub results dataset serves it: a Hugging Face cache folder holding the dataset's
  snapshot, read by ``t2ibench leaderboard --repo bench/results-N`` with ``HF_HUB_OFFLINE=1``
  (huggingface_hub's own download path). A change: a new commit whose table has one more row.
- ``folder``: N synthetic results files (``tests/lb_synthetic.write_many``, from a tiny audit's
  results.json) with their contents table, read by ``t2ibench leaderboard --results DIR``. A
  change: one new results file.

For each board and app: ``--reloads`` reloads with nothing changed, then as many with one change
before each: the median and the slowest seconds, the app's CPU seconds (utime + stime of its
process), the events the page sent (Gradio queue joins) per reload, and the app's memory (VmRSS)
after the first and after the last reload. The synthetic scores are made up: only the times and
the memory mean anything.

    python bench/leaderboard_reload.py                             # hub, 100 and 10,000 models
    python bench/leaderboard_reload.py --source hub folder --baseline-root /tmp/old --out out
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

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]  # run from a checkout, with the tests' data

from benchmark.contract.digest import sha256_hex  # noqa: E402
from benchmark.present.text import markdown_table  # noqa: E402
from leaderboard_scale import add_one, rss_mb, start_app, stop_app, tiny_results  # noqa: E402
from lb_synthetic import many_model_ids, synthetic_table, write_many  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
COLUMNS = ("source", "models", "app", "via", "reloads", "same_s", "same_max_s", "same_cpu_s", "same_events",
           "same_rss_first_mb", "same_rss_last_mb", "change_s", "change_max_s", "change_cpu_s", "change_events",
           "change_rss_first_mb", "change_rss_last_mb")


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- boards


class HubBoard:
    """A synthetic contents table of ``n`` models in a Hugging Face cache folder, as the snapshot of
    the dataset ``bench/results-N``; :meth:`change` commits a table with one more row."""

    def __init__(self, n: int, work: Path) -> None:
        import pyarrow.parquet as pq

        self.n, self.cache = n, work / f"hf-cache-{n}"
        self.repo = f"bench/results-{n}"
        self.folder = self.cache / f"datasets--bench--results-{n}"
        self.table, _ = synthetic_table(n)
        self.commits = 0
        self._write(self.table, pq)

    def _write(self, table, pq) -> None:
        self.commits += 1
        commit = sha256_hex(f"{self.repo} {self.commits}".encode())[:40]
        path = self.folder / "snapshots" / commit / "contents" / "contents.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        (self.folder / "refs").mkdir(parents=True, exist_ok=True)
        (self.folder / "refs" / "main").write_text(commit)

    def start(self, timeout: float, root: Path):
        return start_app(self.repo, timeout, root=root, option="--repo", env={"HF_HUB_CACHE": str(self.cache)})

    def change(self, i: int, tag: str) -> None:
        """A new commit: the table with one more row (a copy of the first, another model)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        row = self.table.slice(0, 1)
        model = f"{tag}/model-{i:03d}"
        for col, value in (("model_id", model), ("model_spec", model), ("key", f"{model}@main"),
                           ("source", f"results/{tag}/{i}.json")):
            row = row.set_column(row.schema.get_field_index(col), col, pa.array([value], type=pa.string()))
        self.table = pa.concat_tables([self.table, row])
        self._write(self.table, pq)


class FolderBoard:
    """``n`` synthetic results files and their contents table in ``work/lb-N`` (kept for another
    run: a board already there is used as it is); :meth:`change` adds one file. ``results_json``
    gives the results.json the files copy (called only when the board is written)."""

    def __init__(self, n: int, work: Path, results_json) -> None:
        from submissions.leaderboard import contents

        self.n, self.folder = n, work / f"lb-{n}"
        self.like = self.folder / "results" / many_model_ids(1)[0].replace("/", "__") / "2025-01-01T00-00-00.json"
        if not (self.folder / contents.CONTENTS_FILE).is_file():
            write_many(results_json(), self.folder, n)
            contents.build_contents(self.folder)

    def start(self, timeout: float, root: Path):
        return start_app(self.folder, timeout, root=root)

    def change(self, i: int, tag: str) -> None:
        add_one(self.like, self.folder, f"{tag}/model-{i:03d}-{time.time_ns()}")


# --------------------------------------------------------------------------- one reload


class PageActivity:
    """What a click on the page sets off: the events the page sends to the app (Gradio's queue
    joins: the click's own and every event its outputs trigger in turn) and the app's CPU time; a
    click's work is done when both have been quiet for ``quiet`` seconds."""

    def __init__(self, page, pid: int, quiet: float = 1.5) -> None:
        self.page, self.pid, self.quiet = page, pid, quiet
        self.joins: list[float] = []
        page.on("request", lambda r: self.joins.append(time.perf_counter()) if "/queue/join" in r.url else None)

    def click(self, selector: str, timeout: float = 600.0) -> tuple[float, float, int]:
        """Click ``selector``: (seconds until the last sign of work, app CPU seconds, events sent)."""
        seen, cpu0 = len(self.joins), cpu_s(self.pid)
        t0 = time.perf_counter()
        self.page.click(selector)
        last, last_cpu, joins = t0, cpu0, seen
        while time.perf_counter() - t0 < timeout:
            self.page.wait_for_timeout(100)  # (lets the page's requests be seen)
            now, cpu = time.perf_counter(), cpu_s(self.pid)
            if cpu - last_cpu > 0.02 or len(self.joins) > joins:  # the app works (an idle one uses ~0)
                last = now
            last_cpu, joins = cpu, len(self.joins)
            if now - last >= self.quiet and now - t0 >= 1.0:
                return last - t0, cpu_s(self.pid) - cpu0, len(self.joins) - seen
        raise SystemExit(f"leaderboard_reload: error: the page was still busy {timeout:.0f} s after the click")


def browser_reloader(url: str, pid: int, browser):
    """A reload as a click on "Reload results" in a page of ``url`` (opened and settled first)."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url)
    page.wait_for_selector('#lb-table [data-testid="cell-0-0"]', timeout=600_000)
    activity = PageActivity(page, pid)
    activity.click("#lb-first")  # the page's own start, settled
    return (lambda: activity.click("#lb-reload")), page.close


def api_reloader(url: str, pid: int):
    """A reload through the app's API (``/reload``; ``/on_reload`` before it was named)."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    api = "/reload" if "/reload" in endpoints else "/on_reload"
    args = [p.get("parameter_default") if p.get("parameter_has_default") else None
            for p in endpoints[api]["parameters"]]

    def reload() -> tuple[float, float, int]:
        cpu0, t0 = cpu_s(pid), time.perf_counter()
        client.predict(*args, api_name=api)
        return time.perf_counter() - t0, cpu_s(pid) - cpu0, 1
    return reload, lambda: None


def time_reloads(board, root: Path, app: str, reloads: int, timeout: float, browser) -> dict:
    """Start ``root``'s app on ``board``; ``reloads`` reloads with nothing changed, then as many with
    one change before each (see the module docstring)."""
    proc, url, _, _ = board.start(timeout, root)
    try:
        reload, close = browser_reloader(url, proc.pid, browser) if browser is not None else \
            api_reloader(url, proc.pid)
        out = {"source": type(board).__name__.removesuffix("Board").lower(), "models": board.n, "app": app,
               "via": "browser" if browser is not None else "api", "reloads": reloads}
        try:
            for kind in ("same", "change"):
                times, cpus, events, rss = [], [], [], []
                for i in range(reloads):
                    if kind == "change":
                        board.change(i, f"zz-{app.split()[0]}")
                    took, cpu, sent = reload()
                    times.append(took)
                    cpus.append(cpu)
                    events.append(sent)
                    rss.append(rss_mb(proc.pid, "VmRSS"))
                out.update({f"{kind}_s": statistics.median(times), f"{kind}_max_s": max(times),
                            f"{kind}_cpu_s": statistics.median(cpus), f"{kind}_events": statistics.median(events),
                            f"{kind}_rss_first_mb": rss[0], f"{kind}_rss_last_mb": rss[-1]})
        finally:
            close()
        return out
    finally:
        stop_app(proc)


# --------------------------------------------------------------------------- the run


def _cell(value) -> str:
    return f"{value:,}" if isinstance(value, int) else value if isinstance(value, str) else f"{value:.2f}"


def table_text(rows: list[dict]) -> str:
    """The table, and a line per board and app: the medians and the memory's growth."""
    text = markdown_table(list(COLUMNS), ([_cell(r[c]) for c in COLUMNS] for r in rows), align="r" * len(COLUMNS))
    for r in rows:
        for kind, words in (("same", "nothing changed"), ("change", "one change before each")):
            growth = r[f"{kind}_rss_last_mb"] / r[f"{kind}_rss_first_mb"] - 1
            text += (f"\n{r['app']}, {r['source']}, {r['models']:,} models, {words} ({r['via']}): median "
                     f"{r[f'{kind}_s']:.2f} s (slowest {r[f'{kind}_max_s']:.2f} s), {r[f'{kind}_cpu_s']:.2f} s app CPU, "
                     f"{r[f'{kind}_events']:g} event(s), RSS {growth:+.1%} from the first reload to the "
                     f"{r['reloads']}th")
    return text


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000], help="numbers of models")
    ap.add_argument("--source", nargs="+", choices=("hub", "folder"), default=["hub"], help="the boards' kinds")
    ap.add_argument("--reloads", type=int, default=20, help="reloads of each kind (nothing changed, one change)")
    ap.add_argument("--api", action="store_true", help="reload through the app's API instead of a browser click")
    ap.add_argument("--baseline-root", type=Path, help="another checkout whose app is measured on the same boards")
    ap.add_argument("--baseline-reloads", type=int, help="reloads of each kind of the baseline (default: --reloads)")
    ap.add_argument("--results-json", type=Path, help="the results.json the folder boards copy (default: a tiny audit)")
    ap.add_argument("--work", type=Path, help="where the boards go (default: a temporary folder; folder boards kept "
                    "there are used again)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for an app's first HTTP 200")
    ap.add_argument("--out", type=Path, help="write leaderboard_reload.json there")
    args = ap.parse_args(argv)
    if any(n < 1 for n in args.sizes):
        ap.error("--sizes must be positive")
    if not 1 <= args.reloads <= 200:
        ap.error("--reloads must be between 1 and 200")
    if args.baseline_root is not None and not (args.baseline_root / "benchmark" / "cli.py").is_file():
        ap.error(f"--baseline-root: no checkout of this project at {args.baseline_root}")
    if not args.api and not Path(CHROMIUM).is_file():
        ap.error(f"a browser reload needs Debian's Chromium at {CHROMIUM} (apt-get install chromium), or pass --api")
    if args.results_json is not None and not args.results_json.is_file():
        ap.error(f"--results-json: no such file: {args.results_json}")
    return args


def _boards(args, work: Path) -> list:
    made: list[Path] = [args.results_json] if args.results_json is not None else []

    def results_json() -> Path:  # a tiny audit, run once, and only if a folder board is written
        if not made:
            made.append(tiny_results(work))
        return made[0]

    return [HubBoard(n, work) if source == "hub" else FolderBoard(n, work, results_json)
            for source in args.source for n in args.sizes]


def main(argv=None) -> int:
    args = parse_args(argv)
    apps = [(ROOT, "this checkout", args.reloads)]
    if args.baseline_root is not None:
        apps.append((args.baseline_root.resolve(), f"baseline {args.baseline_root.name}",
                     args.baseline_reloads or args.reloads))
    with tempfile.TemporaryDirectory(prefix="t2ibench-lb-reload-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        boards = _boards(args, work)
        rows = []
        with _chromium(not args.api) as browser:
            for board in boards:
                for root, app, reloads in apps:
                    rows.append(time_reloads(board, root, app, reloads, args.timeout, browser))
    machine = (f"{platform.machine()}, {os.cpu_count()} CPU(s), Python {platform.python_version()}, load average "
               f"{os.getloadavg()[0]:.1f} (1 min) at the end: the machine may be shared")
    print(f"Leaderboard reloads ({machine}); synthetic models, made-up scores: only the times and memory mean anything.")
    print(table_text(rows))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "leaderboard_reload.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=2)
                                                          + "\n", encoding="utf-8")
    return 0


class _chromium:
    """Debian's headless Chromium through playwright (never `playwright install`), or None."""

    def __init__(self, wanted: bool) -> None:
        self.wanted = wanted

    def __enter__(self):
        if not self.wanted:
            return None
        from playwright.sync_api import sync_playwright

        self._p = sync_playwright().start()
        self._browser = self._p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
        return self._browser

    def __exit__(self, *exc) -> None:
        if self.wanted:
            self._browser.close()
            self._p.stop()


if __name__ == "__main__":
    raise SystemExit(main())

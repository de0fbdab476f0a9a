"""Screenshots for the README and docs/leaderboard.md: the leaderboard with four models and with
10,000 (ordered by a header click), its forest plots, its About tab, and (given a demo run) the
report.

    python docs/images/make_screenshots.py                 # the leaderboard's three screenshots
    t2ibench demo --out out/demo --quiet
    python docs/images/make_screenshots.py out/demo        # and the report's two

The leaderboard rows are synthetic (tests/lb_synthetic.py): four valid results files with an
entry for every headline score (values at chosen fractions of each score's range, made up),
and a contents table of 10,000 models made from one of them with spread values (the table
alone, as a Hub results dataset serves it). They show the layout, not any real model.
Chromium: Debian's /usr/bin/chromium through playwright, at 1280 x 800 (the page width the
tests check); nothing is asked of any host but 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run"]
OUT = Path(__file__).resolve().parent
VIEWPORT = {"width": 1280, "height": 800}
TABLE_JS = "() => document.querySelector('#lb-table [data-testid=\"cell-0-0\"]') !== null"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(**where):
    from submissions.leaderboard.app import build_app, launch

    demo = build_app(**where)
    port = _port()
    launch(demo, port=port, prevent_thread_lock=True, quiet=True)
    return demo, f"http://127.0.0.1:{port}/"


def four_models(root: Path) -> Path:
    """Four synthetic results files with every headline score."""
    from lb_synthetic import FOUR_MODELS, all_scores_doc

    for model_id, shift in FOUR_MODELS:
        path = root / "results" / model_id.replace("/", "__") / "2025-01-01T00-00-00.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(all_scores_doc(model_id, shift * 3)), encoding="utf-8")
    return root


def ten_thousand(root: Path) -> Path:
    """A contents table of 10,000 synthetic models, alone (as a Hub results dataset serves it)."""
    import pyarrow.parquet as pq

    from lb_synthetic import synthetic_table
    from submissions.leaderboard import contents

    (root / "contents").mkdir(parents=True)
    pq.write_table(synthetic_table(10_000)[0], root / contents.CONTENTS_FILE)
    contents.download_contents = lambda repo, revision=None: root  # the "Hub dataset" is this folder
    return root


def leaderboard_shots(page) -> None:
    demo, url = _serve(results_dir=four_models(Path(tempfile.mkdtemp(prefix="t2ibench-screens-"))))
    try:
        page.goto(url)
        page.wait_for_function(TABLE_JS, timeout=60_000)
        page.wait_for_timeout(500)
        page.screenshot(path=OUT / "leaderboard.png")
        page.get_by_role("tab", name="Forest plots").click()
        page.wait_for_timeout(500)  # the tab draws its figure again when opened: wait for that one
        page.wait_for_function("() => { const i = document.querySelector('#lb-forest img'); "
                               "return i && i.complete && i.naturalWidth > 0 "
                               "&& !document.querySelector('#lb-forest').innerText.includes('processing'); }",
                               timeout=60_000)
        page.wait_for_timeout(300)
        page.screenshot(path=OUT / "leaderboard_forest.png", full_page=True)
    finally:
        demo.close()
    ten_thousand(Path(tempfile.mkdtemp(prefix="t2ibench-10k-")))
    demo, url = _serve(repo="org/results")
    try:
        page.goto(url)
        page.wait_for_function(TABLE_JS, timeout=60_000)
        header = page.locator("#lb-table [role=columnheader]").nth(6)  # the second score column
        title = header.get_attribute("title")
        header.click()  # ordered by its value, best first, over all 10,000
        page.wait_for_function("(t) => document.querySelector('#lb-page').innerText.includes(`by ${t}: value`)",
                               arg=title, timeout=60_000)
        page.wait_for_timeout(800)
        page.evaluate("document.querySelector('#lb-search').scrollIntoView()")
        page.screenshot(path=OUT / "leaderboard_10k.png")
        page.get_by_role("tab", name="About").click()
        page.wait_for_selector("#lb-about", timeout=30_000)
        page.wait_for_timeout(500)
        page.evaluate("document.querySelector('#lb-about').scrollIntoView()")
        page.screenshot(path=OUT / "leaderboard_about.png")
    finally:
        demo.close()


def report_shots(page, run_dir: str) -> None:
    from benchmark.runner.report import write_report

    page.goto(write_report(Path(run_dir)).as_uri())
    page.wait_for_load_state("load")
    page.screenshot(path=OUT / "report_first_screen.png")
    page.evaluate("document.querySelector('#images-gep_neutral').scrollIntoView()")
    page.screenshot(path=OUT / "report_images.jpg", type="jpeg", quality=80)  # noise images: JPEG is 4x smaller


def main(run_dir: str | None = None) -> None:
    import os

    os.environ["HF_HUB_OFFLINE"] = "1"  # the 10,000-model board's detail view has no file to download
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        if run_dir:
            report_shots(page, run_dir)
        leaderboard_shots(page)
        browser.close()
    names = ["leaderboard.png", "leaderboard_forest.png", "leaderboard_10k.png", "leaderboard_about.png"]
    names += ["report_first_screen.png", "report_images.jpg"] if run_dir else []
    for name in names:
        print(OUT / name)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)

"""Screenshots for the README: the report of a demo run and the leaderboard with four models.

    t2ibench demo --out out/demo --quiet
    python docs/images/make_screenshots.py out/demo

The four leaderboard rows are synthetic: the demo's results.json with other model ids and
values shifted by a fraction of each score's range (tests/lb_synthetic.py), undefined
headline scores given made-up values so that every column has numbers. They show the
layout, not any real model. Chromium: Debian's /usr/bin/chromium through playwright, at
1280 x 800 (the page width the tests check).
"""

from __future__ import annotations

import socket
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

CHROMIUM = "/usr/bin/chromium"
OUT = Path(__file__).resolve().parent
VIEWPORT = {"width": 1280, "height": 800}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(run_dir: str) -> None:
    from playwright.sync_api import sync_playwright

    from benchmark.runner.report import write_report
    from lb_synthetic import write_four_models
    from submissions.leaderboard.app import build_app, launch

    run = Path(run_dir)
    page_path = write_report(run)
    board = Path(tempfile.mkdtemp(prefix="t2ibench-screens-"))
    write_four_models(run / "results.json", board, fill_undefined=True)
    demo = build_app(results_dir=board)
    port = _port()
    launch(demo, port=port, prevent_thread_lock=True, quiet=True)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=OUT / "report_first_screen.png")
            page.evaluate("document.querySelector('#images-gep_neutral').scrollIntoView()")
            page.screenshot(path=OUT / "report_images.jpg", type="jpeg", quality=80)  # noise images: JPEG is 4x smaller
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector('#lb-table [data-testid="cell-0-0"]', timeout=60_000)
            page.wait_for_timeout(500)
            page.screenshot(path=OUT / "leaderboard.png")
            page.get_by_role("tab", name="Forest plots").click()
            page.wait_for_function("() => { const i = document.querySelector('#lb-forest img'); "
                                   "return i && i.complete && i.naturalWidth > 0; }", timeout=60_000)
            page.screenshot(path=OUT / "leaderboard_forest.png", full_page=True)
            browser.close()
    finally:
        demo.close()
    for name in ("report_first_screen.png", "report_images.jpg", "leaderboard.png", "leaderboard_forest.png"):
        print(OUT / name)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out/demo")

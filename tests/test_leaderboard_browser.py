"""The leaderboard app in a real headless browser: Debian's Chromium driven by playwright
(never `playwright install`). The app runs in-process on a free port, on the sample folder
of test_leaderboard (six models, one of them demo, one with a script tag as its name, and
two invalid files)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import NamedTuple

import pytest

from submissions.leaderboard import data
from test_leaderboard import BY_GEP, EXPECTED_ORDER, GEP, XSS, _write, make_doc, write_sample_results

CHROMIUM = "/usr/bin/chromium"

# Cells of one column in the order they are seen (the grid is virtual: sort by position).
COLUMN_JS = """(col) => [...document.querySelectorAll(`#lb-table [data-testid^="cell-"][data-col="${col}"]`)]
    .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)
    .map(e => e.innerText.trim())"""


class Server(NamedTuple):
    url: str
    root: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from submissions.leaderboard.app import build_app, launch

    root = write_sample_results(tmp_path_factory.mktemp("lb_browser"))
    demo = build_app(results_dir=root)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launch(demo, port=port, prevent_thread_lock=True, quiet=True)
    yield Server(f"http://127.0.0.1:{port}/", root)
    demo.close()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's Chromium "
                    "(apt-get install chromium); never `playwright install`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
        yield b
        b.close()


@pytest.fixture()
def page(browser, server):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.url)
    page.wait_for_selector('#lb-table [data-testid="cell-0-0"]', timeout=60_000)
    yield page
    assert not errors, errors  # no script error on the page, whatever was clicked
    page.close()


def column(page, name: str) -> list[str]:
    index = page.locator(f'#lb-table th[title="{name}"]').get_attribute("data-heading")
    return page.evaluate(COLUMN_JS, index)


def wait_for_column(page, name: str, expected: list[str], *, among: bool = False) -> None:
    """Wait until the column reads ``expected`` top to bottom (``among``: the cells that are in
    ``expected``, in that order); no sleeps, a clear failure otherwise."""
    index = page.locator(f'#lb-table th[title="{name}"]').get_attribute("data-heading")
    js = (f"(a) => {{ let got = ({COLUMN_JS})(a.col); if (a.among) got = got.filter(v => a.expected.includes(v)); "
          "return JSON.stringify(got) === JSON.stringify(a.expected); }")
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(js, arg={"col": index, "expected": expected, "among": among}, timeout=15_000)
    except PlaywrightTimeout:
        raise AssertionError(f"column {name!r} is {column(page, name)}, expected {expected}") from None


def sort_column(page, name: str, how: str) -> None:
    """Sort by a column through its header menu (``how``: ascending, descending or clear)."""
    header = page.locator(f'#lb-table th[title="{name}"]')
    header.click()
    header.locator("button.cell-menu-button").click()
    page.get_by_text("Clear sort" if how == "clear" else f"Sort {how}", exact=True).click()


def test_table_rows_in_default_order_with_demo_badge(page):
    assert column(page, "Model") == EXPECTED_ORDER
    badges = dict(zip(column(page, "Model"), column(page, "Badge")))
    assert badges["builtin:tiny-sd"] == "demo" and {b for m, b in badges.items() if m != "builtin:tiny-sd"} == {""}
    values = dict(zip(column(page, "Model"), column(page, GEP)))
    assert [values[m] for m in BY_GEP] == ["0.02", "0.05", "0.1", "0.15", "0.2"]
    assert values["delta/undefined"] == ""  # undefined: blank
    ci = dict(zip(column(page, "Model"), column(page, data.ci_column("gep_score_neutral"))))
    assert ci["acme/model-a"] == "[0.08, 0.12] CLS" and ci["delta/undefined"] == "undefined"
    link = page.locator('#lb-table [data-testid^="cell-"] a[href="https://huggingface.co/datasets/acme/model-a-images"]')
    assert link.inner_text() == "acme/model-a-images"


def test_sorting_by_column_header(page):
    # a text column (sorts of several columns combine: clear one before the next)
    sort_column(page, "Model", "descending")
    wait_for_column(page, "Model", sorted(EXPECTED_ORDER, reverse=True))
    sort_column(page, "Model", "clear")
    wait_for_column(page, "Model", EXPECTED_ORDER)
    # a score column
    sort_column(page, GEP, "descending")
    wait_for_column(page, "Model", BY_GEP[::-1], among=True)
    sort_column(page, GEP, "ascending")
    wait_for_column(page, "Model", BY_GEP, among=True)
    # numbers, not text: STS 5 (beta) before 20 (acme) ascending, though "20" < "5" as text
    sts = data.value_column("sts_occupation_paired")
    sort_column(page, GEP, "clear")
    sort_column(page, sts, "ascending")
    wait_for_column(page, "Model", ["beta/model-b", "acme/model-a"], among=True)
    sort_column(page, sts, "descending")
    wait_for_column(page, "Model", ["acme/model-a", "beta/model-b"], among=True)


def test_script_in_model_name_renders_as_text(page):
    assert XSS in column(page, "Model")
    cell = page.locator('#lb-table [data-testid^="cell-"][data-col="0"]', has_text="window.__xss").first
    assert cell.is_visible() and cell.inner_text().strip() == XSS
    assert page.evaluate("window.__xss") is None
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0
    # its detail view too
    page.locator('#lb-table [data-col="0"]', has_text="window.__xss").first.click()
    page.wait_for_selector("#lb-detail-head")
    assert XSS in page.inner_text("#lb-detail-head")
    assert page.evaluate("window.__xss") is None
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0


def test_invalid_files_are_listed_in_a_visible_warning(page):
    warning = page.locator("#lb-warnings")
    assert warning.is_visible()
    text = warning.inner_text()
    assert "2 invalid results file(s) skipped" in text
    assert "results/bad/broken.json" in text and "not valid JSON" in text
    assert "results/bad/out_of_range.json" in text and "outside its range" in text
    assert "bad/range" not in column(page, "Model")


def test_search_demo_checkbox_and_suite_filter(page):
    page.fill("#lb-search textarea, #lb-search input", "MODEL-")
    wait_for_column(page, "Model", ["beta/model-b", "acme/model-a", "gamma/model-c"])
    page.fill("#lb-search textarea, #lb-search input", "")
    wait_for_column(page, "Model", EXPECTED_ORDER)
    page.locator("#lb-show-demo input[type=checkbox]").uncheck()
    wait_for_column(page, "Model", [m for m in EXPECTED_ORDER if m != "builtin:tiny-sd"])
    page.locator("#lb-suites input").click()
    page.get_by_role("option", name="mcas_targets").click()
    wait_for_column(page, "Model", ["acme/model-a"])


def test_row_click_opens_detail_view(page):
    page.locator('#lb-table [data-col="0"]', has_text="acme/model-a").first.click()
    page.wait_for_selector("#lb-detail-head")
    head = page.inner_text("#lb-detail-head")
    assert "acme/model-a" in head and "note about acme/model-a" in head
    assert page.locator('#lb-detail-head a[href="https://huggingface.co/datasets/acme/model-a-images"]').count() == 1
    # per-suite tables, the CLS entry marked as the one in the table, the other estimator listed too
    for i in range(3):
        page.wait_for_selector(f"#lb-detail-scores-{i}")
    scores = page.inner_text("#lb-detail-scores-0")
    assert "CLS" in scores and "0.9" in scores and "yes" in scores
    # the plot is drawn after the tables: wait for it rather than count at once
    page.wait_for_selector(".js-plotly-plot, [data-testid='matplotlib'] img, .matplotlib img")


def test_reload_reads_new_and_removed_files(page, server):
    added = _write(server.root, "results/new/1.json", make_doc("new/best-model", 0.001))
    try:
        page.click("#lb-reload")
        wait_for_column(page, "Model", ["new/best-model"] + EXPECTED_ORDER)
    finally:
        added.unlink()
    page.click("#lb-reload")
    wait_for_column(page, "Model", EXPECTED_ORDER)


def test_cli_starts_the_app(browser, tmp_path):
    """`t2ibench leaderboard --results DIR --port N` serves the same table."""
    import os
    import subprocess
    import sys
    import urllib.request

    root = write_sample_results(tmp_path / "lb")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "benchmark.cli", "leaderboard", "--results", str(root),
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"})
    try:
        # the server prints its URL once it listens
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if f"127.0.0.1:{port}" in line:
                break
        assert proc.poll() is None, "".join(seen)
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).status == 200
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector('#lb-table [data-testid="cell-0-0"]', timeout=60_000)
        assert column(page, "Model") == EXPECTED_ORDER
        page.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)

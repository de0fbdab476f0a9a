"""The leaderboard app in a real headless browser: Debian's Chromium driven by playwright
(never `playwright install`), at 1280 x 800. The app runs in-process on a free port, on the
sample folder of test_leaderboard (six models, one of them demo, one with a script tag as
its name, and two invalid files), and on four synthetic models made from a real tiny audit
(one of them inside its run folder, so its images can be browsed)."""

from __future__ import annotations

import json
import re
import shutil
import socket
from pathlib import Path
from typing import NamedTuple

import pytest

from submissions.leaderboard import score_columns
from submissions.request_store import LocalRequestStore
from submissions.requests import FINISHED, RequestRecord
from lb_synthetic import FOUR_MODELS, shifted_results
from test_leaderboard import BY_GEP, EXPECTED_ORDER, GEP, XSS, _write, make_doc, write_sample_results

CHROMIUM = "/usr/bin/chromium"

# Cells of one column in the order they are seen (the grid is virtual: sort by position).
COLUMN_JS = """(col) => [...document.querySelectorAll(`#lb-table [data-testid^="cell-"][data-col="${col}"]`)]
    .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)
    .map(e => e.innerText.trim())"""


class Server(NamedTuple):
    url: str
    root: Path


VIEWPORT = {"width": 1280, "height": 800}


def _serve(root: Path, requests_dir: Path | None = None):
    from submissions.leaderboard.app import build_app, launch

    demo = build_app(results_dir=root, requests_dir=requests_dir)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launch(demo, port=port, prevent_thread_lock=True, quiet=True)
    return demo, Server(f"http://127.0.0.1:{port}/", root)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    demo, srv = _serve(write_sample_results(tmp_path_factory.mktemp("lb_browser")))
    yield srv
    demo.close()


@pytest.fixture(scope="module")
def four_models(tmp_path_factory, tiny_audit):
    """Four synthetic models from the real tiny audit's results.json; the first lives in a copy
    of the run folder (its images), the others are submitted files."""
    root = tmp_path_factory.mktemp("lb_four")
    doc = json.loads((tiny_audit / "results.json").read_text())
    (first, shift), *others = FOUR_MODELS
    run = root / "runs" / "first"
    shutil.copytree(tiny_audit, run)
    (run / "results.json").write_text(json.dumps(shifted_results(doc, first, shift)))
    for model_id, shift in others:
        _write(root, f"results/{model_id.replace('/', '__')}/1.json", shifted_results(doc, model_id, shift))
    demo, srv = _serve(root)
    yield srv
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


def _open(browser, url: str):
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    page.wait_for_selector('#lb-table [data-testid="cell-0-0"]', timeout=60_000)
    return page, errors


@pytest.fixture()
def page(browser, server):
    page, errors = _open(browser, server.url)
    yield page
    assert not errors, errors  # no script error on the page, whatever was clicked
    page.close()


@pytest.fixture()
def page4(browser, four_models):
    page, errors = _open(browser, four_models.url)
    yield page
    assert not errors, errors
    page.close()


PAGE_WIDTH_JS = "document.documentElement.scrollWidth"
# The table's own scroll area: wider content would scroll sideways inside it.
TABLE_OVERFLOW_JS = """() => { const v = document.querySelector('#lb-table .virtual-table-viewport')
    || document.querySelector('#lb-table table').parentElement; return [v.scrollWidth, v.clientWidth]; }"""


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()


def wait_for_plot(page, elem_id: str):
    """The plot's image once it has loaded (Gradio draws matplotlib figures as images)."""
    page.wait_for_function(f"() => {{ const i = document.querySelector('#{elem_id} img'); "
                           "return i && i.complete && i.naturalWidth > 0; }", timeout=30_000)
    return page.evaluate(f"[document.querySelector('#{elem_id} img').naturalWidth, "
                         f"document.querySelector('#{elem_id} img').getBoundingClientRect().width]")


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


def choose(page, elem_id: str, option: str) -> None:
    """Pick ``option`` in the dropdown ``elem_id``."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def page_line(page) -> str:
    return page.inner_text("#lb-page").strip()


def click_row(page, model: str) -> None:
    """Click the row of ``model`` beside its name (its Rank cell): the name itself is a link."""
    cell = page.locator('#lb-table [data-testid^="cell-"][data-col="0"]', has_text=model).first
    row = cell.get_attribute("data-testid").split("-")[1]
    page.locator(f'#lb-table [data-testid="cell-{row}-1"]').first.click()


def test_table_rows_in_default_order_with_demo_badge(page):
    assert column(page, "Model") == EXPECTED_ORDER
    badges = dict(zip(column(page, "Model"), column(page, "Badge")))
    assert badges["builtin:tiny-sd"] == "demo" and {b for m, b in badges.items() if m != "builtin:tiny-sd"} == {""}
    badge = page.locator("#lb-table .lb-badge-demo:visible")  # (the grid also keeps a hidden copy to measure)
    assert badge.count() == 1 and badge.evaluate("e => getComputedStyle(e).borderRadius") != "0px"
    # value and interval in one cell
    values = dict(zip(column(page, "Model"), column(page, GEP)))
    assert [values[m] for m in BY_GEP] == ["0.02 [0, 0.04]", "0.05 [0.03, 0.07]", "0.1 [0.08, 0.12]",
                                           "0.15 [0.13, 0.17]", "0.2 [0.18, 0.22]"]
    assert values["delta/undefined"] == "undefined"
    # suites: a count, the list on hover
    counts = dict(zip(column(page, "Model"), column(page, "Suites")))
    assert counts["acme/model-a"] == "3" and counts["beta/model-b"] == "3" and counts["gamma/model-c"] == "1"
    hover = page.locator("#lb-table .lb-suites:visible", has_text="3").first.get_attribute("title")
    assert hover in ("gep_neutral, mcas_targets, pst_paired_occupation", "gep_neutral, dalleval_bias, "
                     "pst_paired_occupation")


def test_no_sideways_scroll_at_1280(page):
    assert page.evaluate(PAGE_WIDTH_JS) <= 1280
    scroll, client = page.evaluate(TABLE_OVERFLOW_JS)
    assert scroll <= client + 1, (scroll, client)  # the headline view fits: the table does not scroll sideways
    for tab in ("Forest plots", "Compare models", "Model details", "Images"):
        open_tab(page, tab)
        page.wait_for_timeout(300)
        assert page.evaluate(PAGE_WIDTH_JS) <= 1280, tab


def test_every_order_is_the_servers(page):
    """The table's header menus (a sort of the page shown only) are gone; a header click orders
    every row on the server (a score by its value, best first; again, worst first; the Model
    column by name), as do "Order" and "Rank and order by", and the line above the table says which
    order is shown."""
    assert page.locator("#lb-table .cell-menu-button:visible").count() == 0
    assert "by GEP (neutral) ↓: value, best first" in page_line(page)
    page.locator(f'#lb-table th[title="{GEP}"]').click()  # the score shown: clicked again, worst first
    wait_for_column(page, "Model", ["gamma/model-c", XSS, "acme/model-a", "beta/model-b", "delta/undefined",
                                    "builtin:tiny-sd"])  # undefined and demo rows still last
    assert "by GEP (neutral) ↓: value, worst first" in page_line(page)
    assert page.input_value("#lb-order input") == "value, worst first"  # the dropdown follows the click
    page.locator('#lb-table th[title="Model"]').click()
    wait_for_column(page, "Model", sorted(EXPECTED_ORDER, key=str.lower))
    assert "by model A–Z" in page_line(page)
    choose(page, "lb-order", "model Z–A")
    wait_for_column(page, "Model", sorted(EXPECTED_ORDER, key=str.lower, reverse=True))
    # by another score, as numbers: STS 5 (beta) is closer to 0 than 20 (acme), though "20" < "5" as text
    choose(page, "lb-order", "conservative (interval's worse end), best first")
    choose(page, "lb-sort", score_columns.value_column("sts_occupation_paired"))
    wait_for_column(page, "Model", ["beta/model-b", "acme/model-a"], among=True)
    assert column(page, "Model")[:2] == ["beta/model-b", "acme/model-a"]
    sts = score_columns.value_column("sts_occupation_paired")
    page.locator(f'#lb-table th[title="{sts}"]').click()  # conservative stays conservative, the other way
    wait_for_column(page, "Model", ["acme/model-a", "beta/model-b"], among=True)
    assert "conservative (interval's worse end), worst first" in page_line(page)


def test_headers_explain_themselves_and_names_link_to_their_model(page):
    """Every header's hover text comes from the scores' metadata (about.header_help); a name links to
    its Hub page (a local folder model: to its results file, served by the app) without opening
    the details."""
    from submissions.leaderboard import about

    help_text = about.header_help()
    page.wait_for_function("() => document.querySelector('#lb-table [role=columnheader] .header[title]')")
    got = page.evaluate("""[...document.querySelectorAll('#lb-table [role=columnheader]')]
        .map(th => [th.getAttribute('title'), (th.querySelector('.header') || th).getAttribute('title')])""")
    assert got and all(tip == help_text[name] for name, tip in got), got
    assert "Lower is better" in dict(got)[GEP] and "Paper: GEP" in dict(got)[GEP]
    link = page.locator('#lb-table a.lb-model-link', has_text="acme/model-a").first
    assert link.get_attribute("href") == "https://huggingface.co/acme/model-a"
    local = page.locator('#lb-table a.lb-model-link', has_text="window.__xss").first.get_attribute("href")
    assert local.startswith("gradio_api/file=") and local.endswith("results/xss/1.json")
    doc = page.evaluate("(u) => fetch(u).then(r => r.json())", local)  # served from the folder
    assert doc["model"]["id"] == XSS
    # the About tab: every headline score with its direction and paper
    open_tab(page, "About")
    about_text = page.inner_text("#lb-about")
    assert GEP in about_text and "How an audit is made" in about_text and "@software" in about_text


def test_script_in_model_name_renders_as_text(page):
    assert XSS in column(page, "Model")
    cell = page.locator('#lb-table [data-testid^="cell-"][data-col="0"]', has_text="window.__xss").first
    assert cell.is_visible() and cell.inner_text().strip() == XSS
    assert page.evaluate("window.__xss") is None
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0
    # its detail view too
    click_row(page, "window.__xss")
    page.wait_for_function("(x) => document.querySelector('#lb-detail-head') && "
                           "document.querySelector('#lb-detail-head').innerText.includes(x)", arg=XSS)
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
    page.locator("#lb-filters").get_by_text("Filters (suite, family").click()
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
    click_row(page, "acme/model-a")
    page.wait_for_function("() => document.querySelector('#lb-detail-head') && "
                           "document.querySelector('#lb-detail-head').innerText.includes('acme/model-a')")
    head = page.inner_text("#lb-detail-head")
    assert "acme/model-a" in head and "note about acme/model-a" in head
    assert page.locator('#lb-detail-head a[href="https://huggingface.co/datasets/acme/model-a-images"]').count() == 1
    # one table of every entry, the CLS entry marked as the one in the leaderboard, the C entry listed too
    page.wait_for_selector("#lb-detail-scores")
    scores = page.inner_text("#lb-detail-scores")
    assert "GEP (neutral) *" in scores and "0.9 [0.85, 0.95]" in scores and "mcas_targets" in scores
    wait_for_plot(page, "lb-detail-plot")


def test_details_tab_opens_on_the_first_model(page):
    open_tab(page, "Model details")
    page.wait_for_selector("#lb-detail-head", timeout=30_000)
    assert page.inner_text("#lb-detail-head").splitlines()[0].strip() == "beta/model-b"  # the leaderboard's first row
    notes = page.locator("#lb-detail-notes")
    assert notes.count() == 0 or notes.is_visible()


def test_reload_reads_new_and_removed_files(browser, page, server):
    added = _write(server.root, "results/new/1.json", make_doc("new/best-model", 0.001))
    try:
        page.click("#lb-reload")
        wait_for_column(page, "Model", ["new/best-model"] + EXPECTED_ORDER)
        assert "1 added" in page.inner_text("#lb-source")
        # a page opened after the reload shows the board as it is now, not as the page was built
        other, errors = _open(browser, server.url)
        wait_for_column(other, "Model", ["new/best-model"] + EXPECTED_ORDER)
        assert not errors, errors
        other.close()
    finally:
        added.unlink()
    page.click("#lb-reload")
    wait_for_column(page, "Model", EXPECTED_ORDER)
    page.click("#lb-reload")  # nothing changed since: nothing read, nothing sent
    page.wait_for_function("() => document.querySelector('#lb-source').innerText.includes('nothing changed')")
    assert column(page, "Model") == EXPECTED_ORDER


def test_cli_starts_the_app(browser, tmp_path):
    """`t2ibench leaderboard --results DIR --requests-folder Q --port N` serves the same table, read
    through the contents table, and the Submit tab of the queue."""
    import os
    import subprocess
    import sys
    import urllib.request

    root = write_sample_results(tmp_path / "lb")
    from submissions.leaderboard.contents import build_contents

    build_contents(root)
    (tmp_path / "queue").mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "benchmark.cli", "leaderboard", "--results", str(root),
                             "--port", str(port), "--requests-folder", str(tmp_path / "queue")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
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
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector('#lb-table [data-testid="cell-0-0"]', timeout=60_000)
        assert column(page, "Model") == EXPECTED_ORDER
        assert page.get_by_role("tab", name="Submit a model").count() == 1
        page.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# --------------------------------------------------------------------------- four models


def test_four_models_and_their_intervals_on_one_screen(page4):
    models = column(page4, "Model")
    assert sorted(models) == sorted(m for m, _ in FOUR_MODELS)
    assert page4.evaluate(PAGE_WIDTH_JS) <= 1280
    scroll, client = page4.evaluate(TABLE_OVERFLOW_JS)
    assert scroll <= client + 1, (scroll, client)
    # every row is inside the 800 px viewport, with its value and interval
    bottoms = page4.evaluate("""[...document.querySelectorAll('#lb-table [data-testid^="cell-"][data-col="0"]')]
        .map(e => e.getBoundingClientRect().bottom)""")
    assert len(bottoms) == 4 and max(bottoms) <= 800, bottoms
    gep = column(page4, GEP)
    assert all(re.fullmatch(r"[-0-9.e]+ \[[-0-9.e]+, [-0-9.e]+\]", c) for c in gep), gep
    # best first: the smallest shift has the smallest GEP
    assert models[0] == min(FOUR_MODELS, key=lambda m: m[1])[0]


def test_forest_plot_for_several_models(page4):
    open_tab(page4, "Forest plots")
    natural, shown = wait_for_plot(page4, "lb-forest")
    assert natural > 600 and 0 < shown <= 1280
    assert page4.evaluate(PAGE_WIDTH_JS) <= 1280


def test_compare_view(page4):
    open_tab(page4, "Compare models")
    page4.wait_for_selector("#lb-compare-table")
    table = page4.inner_text("#lb-compare-table")
    assert all(m in table for m, _ in FOUR_MODELS) and "GEP (neutral)" in table
    wait_for_plot(page4, "lb-compare-plot")
    # fewer than two models: a message instead
    for _ in range(3):
        page4.locator("#lb-compare-models button.token-remove, #lb-compare-models .token-remove").first.click()
    page4.wait_for_function("() => document.querySelector('#lb-compare-msg').innerText.includes('two or more')")


def test_image_browser_shows_the_run_folder_images(page4):
    open_tab(page4, "Images")
    page4.wait_for_function("() => document.querySelectorAll('#lb-gallery img').length > 0", timeout=30_000)
    assert page4.input_value("#lb-images-model input").startswith(FOUR_MODELS[0][0])
    assert "from the run folder" in page4.inner_text("#lb-images-status")
    page4.wait_for_function("() => [...document.querySelectorAll('#lb-gallery img')].every(i => i.complete && "
                            "i.naturalWidth > 0)", timeout=30_000)
    assert page4.evaluate(PAGE_WIDTH_JS) <= 1280


def test_three_badges_fit_their_cell(browser, tmp_path):
    """A row with every badge (demo, evaluated, mcas-ref): each badge lies inside its cell, unclipped."""
    from submissions.requests import WORKER_PREFIX

    doc = make_doc("builtin:tiny-sd", 0.1, builtin=True, family="tiny")
    doc.update(evaluated_by=f"{WORKER_PREFIX}gpu-1", request_id="builtin__tiny-sd@builtin-v1")
    doc["references"] = {"mcas": {"source": "org/ref", "revision": "1" * 40, "fingerprint": "a" * 64}}
    _write(tmp_path, "results/a/1.json", doc)
    _write(tmp_path, "results/b/1.json", make_doc("acme/plain", 0.2))
    # "evaluated" needs the queue's FINISHED request naming the file (issue 23)
    requests = tmp_path.parent / f"{tmp_path.name}-requests"
    record = RequestRecord(model_id="builtin:tiny-sd", revision="builtin", commit="builtin-v1", submitter="ann", demo=True,
                           submitted_at="2026-11-24T09:00:00.000Z", status=FINISHED, worker_id="gpu-1",
                           finished_at="2026-11-24T12:00:00.000Z", results_path="/srv/results/a/1.json")
    LocalRequestStore(requests).write(record.path, record, expected=None, message="test")
    demo, srv = _serve(tmp_path, requests)
    try:
        page, errors = _open(browser, srv.url)
        boxes = page.evaluate("""() => [...document.querySelectorAll('#lb-table .lb-badge')]
            .filter(b => b.offsetParent !== null && b.innerText.trim())  // not the grid's hidden measuring copy
            .map(b => { const cell = (b.closest('td') || b.closest('[role="gridcell"]')).getBoundingClientRect();
                        const r = b.getBoundingClientRect();
                        return [b.innerText.trim(), r.left >= cell.left - 0.5 && r.right <= cell.right + 0.5
                                && r.top >= cell.top - 0.5 && r.bottom <= cell.bottom + 0.5]; })""")
        assert sorted(name for name, _ in boxes) == ["demo", "evaluated", "mcas-ref"], boxes
        assert all(inside for _, inside in boxes), boxes
        assert not errors, errors
        page.close()
    finally:
        demo.close()

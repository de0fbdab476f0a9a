"""The leaderboard's Compare tab runs the paired test of two submitted models from their results
files alone (as a board read from the Hub has them), clicked in a real headless browser
(Debian's Chromium driven by playwright, never `playwright install`; the app on 127.0.0.1): the
table of differences with Holm-corrected p-values and MDDs, the planted change found worse; a
model whose results carry no per-probe labels gets one line saying why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmark.runner.score import score_run
from test_compare import _suites, make_run
from test_leaderboard_browser import _serve, browser  # noqa: F401 (the browser fixture: Debian's Chromium)


def _results(run: Path, model_id: str, *, pairing: bool = True) -> dict:
    doc = json.loads((run / "results.json").read_text())
    doc["model"] = {**doc["model"], "id": model_id, "spec": model_id, "revision": "main"}
    if not pairing:
        doc.pop("pairing")
    return doc


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A board of three results files, no run folder: a release, a more biased candidate (both
    with paired resamples) and an older submission scored before they were recorded."""
    root = tmp_path_factory.mktemp("paired_board")
    suites = _suites()
    runs = {}
    for name, seed, worse in (("release", 1, False), ("candidate", 2, True)):
        run = make_run(root / "runs" / name, suites, seed, worse=worse, skin_tone="ita-mst[haar]")
        config = json.loads((run / "run_config.json").read_text())
        config["probes"] = {"kind": "builtin", "source": "builtin"}  # the built-in probe set, any revision
        (run / "run_config.json").write_text(json.dumps(config))
        score_run(run, n_resamples=200)
        runs[name] = run
    results = root / "board"
    for model_id, run, pairing in (("org/release", runs["release"], True), ("org/candidate", runs["candidate"], True),
                                   ("org/old", runs["candidate"], False)):
        path = results / model_id.replace("/", "__") / "1.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(_results(run, model_id, pairing=pairing)))
    shutil.rmtree(root / "runs")  # the board has the results files only
    demo, server = _serve(results)  # in this process, on 127.0.0.1
    yield server.url
    demo.close()


@pytest.fixture()
def page(browser, board):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(board)
    page.wait_for_selector('#lb-table [data-testid="cell-0-0"]', timeout=60_000)
    page.get_by_role("tab", name="Compare models").click()
    page.wait_for_selector("#lb-compare-paired-button")
    yield page
    assert not errors, errors
    page.close()


def _keep_only(page, drop: str) -> None:
    """Remove model ``drop`` from the Compare tab's picker."""
    page.locator("#lb-compare-models .token", has_text=drop).locator(".token-remove").click()
    page.wait_for_function(f"() => !document.querySelector('#lb-compare-models').innerText.includes('{drop}')")


PAIRED_TEXT = "() => document.querySelector('#lb-compare-paired').innerText"


def _paired(page, expect: str) -> str:
    """Click the paired test's button and wait for its answer, which starts ``expect``. The answer
    simulates the MDD (tens of CPU seconds here): 60 s timed out on a fresh clone whose 2 cores
    were shared with a bench (2026-11-30), so the wait allows 240."""
    page.click("#lb-compare-paired-button")
    page.wait_for_function(f"(expect) => {{ const t = ({PAIRED_TEXT})(); return t.includes(expect) "
                           "&& !/processing|\\d\\.\\ds/.test(t); }", arg=expect, timeout=240_000)
    return page.inner_text("#lb-compare-paired")


def test_the_paired_test_of_two_submitted_results_runs_in_the_browser(page):
    assert "exactly two" in _paired(page, "exactly two")  # three models picked
    _keep_only(page, "org/old")
    text = _paired(page, "Did the change reduce bias?")
    assert "Did the change reduce bias?" in text and "the paired randomization test" in text
    table = page.locator("#lb-compare-paired table")
    assert table.count() == 1
    head = table.locator("th").all_inner_texts()
    assert {"MDD", "p (Holm)", "verdict"} <= {h.strip() for h in head}, head
    verdicts = [v.strip() for v in table.locator("tr td:last-child").all_inner_texts()]
    assert "worse" in verdicts and len(verdicts) >= 10, verdicts  # the planted changes, found
    assert "Holm's first step" in text


def test_results_without_paired_resamples_say_why(page):
    _keep_only(page, "org/release")
    text = _paired(page, "No paired test").strip()
    assert text.startswith("No paired test:") and "cannot be compared without its run folder" in text
    assert "it has no pairing section" in text
    assert page.locator("#lb-compare-paired table").count() == 0

"""The leaderboard with 1,000 models in Debian's headless Chromium (playwright, never
`playwright install`): one page of rows, pages turned on the server, a search that reaches any
model, ranks and tiers, ten models selected and their forest plot."""

from __future__ import annotations

import re

import pytest

from submissions.leaderboard import board_table, contents
from test_leaderboard import _write, make_doc
from test_leaderboard_browser import _open, _serve, browser, column, open_tab, wait_for_plot  # noqa: F401

N_MODELS = 1000


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = tmp_path_factory.mktemp("lb_browser_1000")
    for i in range(N_MODELS):
        _write(root, f"results/org{i:04d}--model/1.json", make_doc(f"org{i:04d}/model", (i % 97) / 100))
    contents.build_contents(root)
    ranked = [r.latest.model_id for r in board_table.sort_rows(contents.load_board(root).rows(), "gep_score_neutral")]
    demo, srv = _serve(root)
    yield srv, ranked
    demo.close()


@pytest.fixture()
def page(browser, big):  # noqa: F811
    page, errors = _open(browser, big[0].url)
    yield page
    assert not errors, errors
    page.close()


def _page_line(page, expected: str) -> None:
    page.wait_for_function("(t) => document.querySelector('#lb-page').innerText.trim().startsWith(t)", arg=expected,
                           timeout=30_000)


def test_pages_of_fifty_turned_on_the_server(page, big):
    _, ranked = big
    _page_line(page, "Models 1–50 of 1,000 (page 1 of 20)")
    assert column(page, "Model")[0] == ranked[0]
    assert ranked[-1] not in page.content()  # the last model is not on the page
    page.locator("#lb-next").click()
    _page_line(page, "Models 51–100 of 1,000 (page 2 of 20)")
    page.wait_for_function("(m) => document.querySelector('#lb-table').innerText.includes(m)", arg=ranked[50])
    assert column(page, "Model")[0] == ranked[50]
    page.locator("#lb-prev").click()
    _page_line(page, "Models 1–50 of 1,000 (page 1 of 20)")
    # ranks and tiers: the best model ranks 1, in tier 1 with the models its interval cannot tell from it
    assert column(page, "Rank")[0] == "1" and column(page, "Tier")[0] == "1"
    assert re.search(r"tier 1, tied with the leader: \d+ of 1,000 ranked models", page.inner_text("#lb-page"))


def test_search_reaches_any_model(page, big):
    _, ranked = big
    page.locator("#lb-search textarea, #lb-search input").first.fill(ranked[-1])
    _page_line(page, "Models 1–1 of 1 (page 1 of 1)")
    assert column(page, "Model") == [ranked[-1]]


FOREST_HEIGHT_JS = "() => { const i = document.querySelector('#lb-forest img'); return i ? i.naturalHeight : 0; }"


def test_ten_selected_models_in_the_forest_plot(page):
    open_tab(page, "Forest plots")
    wait_for_plot(page, "lb-forest")
    first_twenty = page.evaluate(FOREST_HEIGHT_JS)  # nothing selected: the table's first 20
    open_tab(page, "Leaderboard")
    page.locator("#lb-search textarea, #lb-search input").first.fill("org000")  # org0000 ... org0009
    _page_line(page, "Models 1–10 of 10 (page 1 of 1)")
    picker = page.locator("#lb-selected input")
    for model in sorted(column(page, "Model")):
        picker.click()
        picker.fill(model)
        page.get_by_role("option", name=model, exact=True).click()
    page.wait_for_function("() => document.querySelectorAll('#lb-selected .token').length === 10", timeout=15_000)
    open_tab(page, "Forest plots")
    # the plot of the ten: a figure with half the rows is shorter
    page.wait_for_function(f"(h) => {{ const got = ({FOREST_HEIGHT_JS})(); return got > 0 && got < h; }}",
                           arg=first_twenty, timeout=30_000)
    assert wait_for_plot(page, "lb-forest")[0] > 0
    open_tab(page, "Compare models")  # two or more selected: Compare takes them
    page.wait_for_function("() => document.querySelectorAll('#lb-compare-models .token').length === 10",
                           timeout=15_000)

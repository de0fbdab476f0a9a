"""The report in a real headless browser (Debian's Chromium through playwright, never
`playwright install`), at 1280 x 800: no sideways scrolling, what the first screen shows,
loaded plots for every scored family, loaded image grids, and run text shown as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_report import EVIL, reported_source

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def report_url(tmp_path_factory):
    run, _ = reported_source(tmp_path_factory)  # the shared folder, read only
    return (run / "report" / "report.html").as_uri()


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
def page(browser, report_url):
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(report_url)
    page.wait_for_load_state("load")
    yield page
    assert not errors, errors
    page.close()


ALL_LOADED_JS = """(sel) => { const imgs = [...document.querySelectorAll(sel)];
    return [imgs.length, imgs.filter(i => i.complete && i.naturalWidth > 0).length]; }"""


def test_no_sideways_scroll_at_1280(page):
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # every table and image stays inside the page (wide tables scroll inside their own box)
    wide = page.evaluate("""[...document.querySelectorAll('table, img, figure, .group')]
        .filter(e => e.getBoundingClientRect().right > 1280 && !e.closest('.scroll')).length""")
    assert wide == 0


def test_first_screen_shows_the_audit_its_headline_scores_and_the_way_to_the_images(page):
    first_screen = page.evaluate("""() => {
        const top = e => e.getBoundingClientRect().top, bottom = e => e.getBoundingClientRect().bottom;
        const rows = [...document.querySelectorAll('#summary table.summary tbody tr')];
        return {warning: bottom(document.querySelector('#warning')), model: bottom(document.querySelector('dl.facts')),
                summary_head: top(document.querySelector('#summary table.summary')), rows: rows.length,
                visible_rows: rows.filter(r => bottom(r) <= 800).length,
                images_link: bottom(document.querySelector('nav.toc a[href="#images"]'))};
    }""")
    assert first_screen["warning"] < 100 and first_screen["model"] < 800 and first_screen["images_link"] < 800
    assert first_screen["summary_head"] < 800 and first_screen["visible_rows"] >= min(first_screen["rows"], 5)
    page.click('nav.toc a[href="#images"]')
    page.wait_for_function("() => document.querySelector('#images').getBoundingClientRect().top < 50")


def test_one_loaded_plot_per_scored_family(page):
    for family in ("gep", "dalleval", "pst", "mcas"):
        total, loaded = page.evaluate(ALL_LOADED_JS, f"#section-{family} figure.plot img")
        assert total >= 1 and loaded == total, (family, total, loaded)
    total, loaded = page.evaluate(ALL_LOADED_JS, "#summary figure.plot img")
    assert total == 1 and loaded == 1


def test_image_grids_are_loaded_with_labels_under_each_image(page):
    total, loaded = page.evaluate(ALL_LOADED_JS, "#images figure.thumb img")
    assert total >= 8 and loaded == total
    grids = page.locator("#images .grid")
    assert grids.count() >= 5
    pair = page.locator('#images-gep_neutral + .grid .group').first
    assert pair.locator("figure.thumb").count() == 2 and "woman" in pair.inner_text() and "man" in pair.inner_text()
    # a thumbnail is shown small
    width = page.evaluate("document.querySelector('#images figure.thumb img').getBoundingClientRect().width")
    assert 60 <= width <= 160


def test_run_text_is_shown_as_text(page):
    assert page.evaluate("window.__xss") is None
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0
    assert page.inner_text("h1") == f"Bias audit of {EVIL}"
    assert page.locator("script").count() == 0

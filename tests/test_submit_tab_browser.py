"""The leaderboard's "Submit a model" tab in Debian's Chromium (playwright, never
`playwright install`): a local requests folder and a configured submitter. Submitting
writes the request file and the queue view shows it; text from requests (a failure reason,
a typed model id) with HTML in it is shown as text, never run."""

import json
import socket
from pathlib import Path

import pytest

from submissions.request_store import LocalRequestStore
from submissions.requests import FAILED, RequestRecord
from benchmark.contract.times import utc_iso_ms

CHROMIUM = "/usr/bin/chromium"
XSS = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">"
SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from submissions.leaderboard.app import build_app, launch

    root = tmp_path_factory.mktemp("submit_tab")
    (root / "results").mkdir()
    queue = root / "q"
    failed = RequestRecord(model_id="acme/broken", revision="main", commit=SHA, submitter="mallory",
                           submitted_at=utc_iso_ms(), status=FAILED, finished_at=utc_iso_ms(),
                           failure_reason=f"RuntimeError: {XSS}")
    LocalRequestStore(queue).write(failed.path, failed, expected=None, message="test")
    mp = pytest.MonkeyPatch()
    mp.setenv("REQUESTS_SUBMITTER", "alice")
    mp.setenv("REQUESTS_DEMO", "1")
    mp.delenv("SPACE_ID", raising=False)
    demo = build_app(results_dir=root / "results", requests_dir=queue)
    mp.undo()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launch(demo, port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/", queue
    demo.close()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's Chromium; never `playwright install`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
        yield b
        b.close()


@pytest.fixture()
def page(browser, server):
    url, _ = server
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    page.goto(url)
    page.get_by_role("tab", name="Submit a model").click()
    page.wait_for_selector("#rq-submit", timeout=60_000)
    yield page
    assert not errors, errors
    assert page.evaluate("window.__pwned") is None
    page.close()


def _no_injected_html(page):
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0
    assert page.evaluate("[...document.scripts].filter(s => s.textContent.includes('__pwned')).length") == 0


def _submit(page, model_id):
    page.fill("#rq-model textarea, #rq-model input", model_id)
    page.click("#rq-submit")


def test_queue_view_shows_html_from_requests_as_text(page):
    page.wait_for_function("document.querySelector('#rq-heading-failed').innerText.includes('(1)')", timeout=30_000)
    table = page.locator("#rq-queue-failed")
    page.wait_for_function("document.querySelector('#rq-queue-failed').innerText.includes('window.__pwned')",
                           timeout=30_000)
    text = table.inner_text()
    assert "acme/broken" in text
    # a submitter with HTML is refused when a record is read (requests.check_submitter, tested in
    # test_requests); the failure reason is free text and must show as text
    assert f"RuntimeError: {XSS}" in text and "mallory" in text
    _no_injected_html(page)


def test_submitting_writes_the_request_and_the_queue_shows_it(page, server):
    _, queue = server
    _submit(page, "builtin:tiny-sd")
    page.wait_for_function("document.querySelector('#rq-message').innerText.includes('Queued')", timeout=60_000)
    assert "builtin:tiny-sd at commit builtin-v1 as PENDING" in page.inner_text("#rq-message")
    written = json.loads((queue / "requests/_builtin--tiny-sd/builtin-v1.json").read_text())
    assert (written["model_id"], written["submitter"], written["status"], written["demo"]) == \
        ("builtin:tiny-sd", "alice", "PENDING", True)
    page.wait_for_function("document.querySelector('#rq-heading-pending').innerText.includes('(1)')")
    pending = page.inner_text("#rq-queue-pending")
    assert "builtin:tiny-sd [demo]" in pending and "alice" in pending and "builtin-v1" in pending
    # The same again is a duplicate, said on the page.
    _submit(page, "builtin:tiny-sd")
    page.wait_for_function("document.querySelector('#rq-message').innerText.includes('already queued')")
    assert page.inner_text("#rq-message").startswith("Not queued: builtin:tiny-sd at commit builtin-v1 is already")


def test_typed_model_id_with_a_script_is_refused_and_shown_as_text(page, server):
    _, queue = server
    before = sorted(p.name for p in (queue / "requests").iterdir())
    _submit(page, XSS)
    page.wait_for_function("document.querySelector('#rq-message').innerText.includes('is not a Hub model id')",
                           timeout=60_000)
    assert f"'{XSS}' is not a Hub model id" in page.inner_text("#rq-message")
    _no_injected_html(page)
    assert sorted(p.name for p in (queue / "requests").iterdir()) == before

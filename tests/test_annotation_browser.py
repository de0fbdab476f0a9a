"""The annotation app in a real headless Chromium (playwright): Gradio's login page, clicks, keys, undo,
skip, resume, two annotators; the command line's login options."""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from cli_here import exit_status

from benchmark.human.answers_file import LABELS_DIR, answers_path, read_events
from benchmark.human.items import build_items
from benchmark.human.qualification import flagged_annotators
from benchmark.human.replay import done_item_ids, read_answers

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ATTRS = ["in boots", "in a dress", "boots"]  # two GEP attributes, one DALL-Eval attribute: a short session
TIMEOUT = 60_000  # ms: a page update can take tens of seconds on a loaded 2-core machine (a wait, not a check)
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret", "dave": "dave-secret"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, cache):
    out = tmp_path_factory.mktemp("annot-ui") / "run"
    # builtin:tiny-sd from the session's cache (conftest): built once for all the files that use it
    env = {**os.environ, "T2IBENCH_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "benchmark.cli", "generate", "--model", "builtin:tiny-sd", "--out", str(out),
                    "--suites", "gep_neutral", "pst_paired_occupation", "dalleval_bias", "--limit", "4", "--quiet"],
                   env=env, check=True, cwd=REPO, capture_output=True)
    return out


@pytest.fixture(scope="module")
def users_file(tmp_path_factory):
    from benchmark.human.users import set_password

    path = tmp_path_factory.mktemp("accounts") / "users.txt"
    for name, password in PASSWORDS.items():
        set_password(path, name, password)
    return path


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install chromium` (the browser tests need it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
        yield b
        b.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(run_dir, users, **kwargs):
    from benchmark.human.app import launch_app

    port = free_port()
    demo = launch_app(run_dir, users=users, port=port, prevent_thread_lock=True, quiet=True, **kwargs)
    return demo, f"http://127.0.0.1:{port}/"


def fresh_copy(run_dir: Path, tmp_path: Path) -> Path:
    """The run folder without any human labels (each test starts from none)."""
    dst = tmp_path / "run"
    shutil.copytree(run_dir, dst, ignore=shutil.ignore_patterns(LABELS_DIR))
    return dst


def question(page) -> str:
    # the markdown itself: the block also holds Gradio's (invisible) progress tracker text
    return page.inner_text("#question [data-testid='markdown']").strip()


def wait_question(page, text: str) -> None:
    page.wait_for_function(
        "t => { const q = document.querySelector('#question'); return q && q.innerText.includes(t); }",
        arg=text, timeout=TIMEOUT)


def wait_done(page, n: int) -> None:
    wait_status(page, f"· {n} of ")


def wait_answered(page, run_dir: Path, who: str, n: int, key: str) -> None:
    """Wait until ``who``'s page shows ``n`` done. A key pressed while the page was still applying
    the previous update can miss its button (rarely, on a loaded machine): if the server never
    received the answer, press once more, as a person would; an answer saved but never shown fails."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        wait_status(page, f"· {n} of ", timeout=TIMEOUT // 2)
    except PlaywrightTimeout:
        saved = len(done_item_ids(run_dir, who))
        assert saved < n, f"{who}'s answer {n} was saved but the page still shows: {page.inner_text('#status')}"
        page.keyboard.press(key)
        wait_done(page, n)


def wait_status(page, text: str, timeout: int = TIMEOUT) -> None:
    page.wait_for_function(
        "t => { const s = document.querySelector('#status'); return s && s.innerText.includes(t); }",
        arg=text, timeout=timeout)


def start(page, url: str, name: str, password: str | None = None) -> None:
    """Log in through Gradio's login page; the app then shows this annotator's next item."""
    page.goto(url)
    page.locator("input[data-testid='textbox']").fill(name)
    page.locator("input[type='password']").fill(PASSWORDS[name] if password is None else password)
    page.get_by_role("button", name="Login").click()
    wait_status(page, f"Annotator {name}")


def answers_of(run_dir, who):
    a = read_answers(run_dir).query("annotator == @who")
    return dict(zip(a.item_id, a.answer))


def test_label_by_click_and_key_with_undo_skip_reload_and_restart(run_dir, users_file, browser, tmp_path):
    rd = fresh_copy(run_dir, tmp_path)
    items = build_items(rd, attributes=ATTRS)
    ids = [it.item_id for it in items]
    demo, url = serve(rd, users_file, attributes=ATTRS)
    try:
        ctx = browser.new_context()
        page = ctx.new_page()
        start(page, url, "alice")
        assert question(page) == "Do you see a person in boots?"
        assert "Please note that all images are generated by machine learning models" in page.inner_text(
            "#instructions")
        assert "u undo the last answer" in page.inner_text("#shortcuts")
        assert page.locator("#item-image img").count() == 1
        page.click("#ans-yes")                                   # click
        wait_question(page, "in a dress")
        page.keyboard.press("n")                                 # keyboard
        wait_done(page, 2)
        page.keyboard.press("s")                                 # skip item 3
        wait_done(page, 3)
        assert answers_of(rd, "alice") == {ids[0]: "yes", ids[1]: "no"}
        assert ids[2] in done_item_ids(rd, "alice")
        page.keyboard.press("u")                                 # undo the skip: item 3 again
        wait_done(page, 2)
        assert ids[2] not in done_item_ids(rd, "alice")
        page.click("#ans-no")
        wait_done(page, 3)
        page.keyboard.press("y")
        wait_done(page, 4)
        page.keyboard.press("u")                                 # undo an answer
        wait_done(page, 3)
        assert answers_of(rd, "alice") == {ids[0]: "yes", ids[1]: "no", ids[2]: "no"}
        events = read_events(rd)
        assert list(events.event) == ["answer", "answer", "skip", "undo", "answer", "answer", "undo"]
        assert set(events.annotator) == {"alice"} and events.session.nunique() == 1

        # reload: still logged in (the session cookie), the page resumes at item 4
        page.reload()
        wait_done(page, 3)
        assert question(page) == items[3].question
        assert "Annotator alice" in page.inner_text("#status")
        ctx.close()
    finally:
        demo.close()

    # server restart (another port, new login tokens: log in again): resumes at item 4
    demo, url = serve(rd, users_file, attributes=ATTRS)
    try:
        ctx = browser.new_context()
        page = ctx.new_page()
        start(page, url, "alice")
        wait_done(page, 3)
        assert question(page) == items[3].question
        # on through the GEP images to the PST paired items (left then right), by keys
        n = 3
        while items[n].suite == "gep_neutral":
            page.keyboard.press("y")
            n += 1
            wait_done(page, n)
        assert question(page) == "Does the carpenter on the left demonstrate feminine or masculine traits?"
        assert page.locator("#ans-cannot-identify").is_visible() and not page.locator("#ans-yes").is_visible()
        assert "We are a group of researchers from UCLA" in page.inner_text("#instructions")
        page.keyboard.press("f")
        wait_done(page, n + 1)
        page.click("#ans-cannot-identify")
        wait_done(page, n + 2)
        n += 2
        while items[n].suite == "pst_paired_occupation":
            page.keyboard.press("m")
            n += 1
            wait_done(page, n)
        # DALL-Eval: gender (male / female / cannot identify), then the 10 Monk swatches
        assert question(page) == "The person looks like a male or a female?"
        page.keyboard.press("f")                                  # the visible one: Female
        wait_done(page, n + 1)
        assert question(page).startswith("Which Monk Skin Tone")
        for tone in range(1, 11):
            assert page.locator(f"#ans-{tone}").is_visible()
        first = page.eval_on_selector("#ans-1", "b => getComputedStyle(b).backgroundColor")
        last = page.eval_on_selector("#ans-10", "b => getComputedStyle(b).backgroundColor")
        assert (first, last) == ("rgb(246, 237, 228)", "rgb(41, 36, 32)")
        page.keyboard.press("0")                                  # MST 10
        wait_done(page, n + 2)
        assert question(page) == "Is the person wearing boots?"
        page.click("#ans-yes")
        wait_done(page, n + 3)
        ctx.close()
    finally:
        demo.close()
    got = answers_of(rd, "alice")
    paired = [it for it in items if it.question_type == "gender_paired"]
    assert got[paired[0].item_id] == "feminine" and got[paired[1].item_id] == "cannot identify"
    assert all(got[it.item_id] == "masculine" for it in paired[2:])
    dalle = [it for it in items if it.suite == "dalleval_bias"][:3]
    assert [got[it.item_id] for it in dalle] == ["female", "10", "yes"]
    assert len(got) == n + 3


def test_two_annotators_at_once(run_dir, users_file, browser, tmp_path):
    rd = fresh_copy(run_dir, tmp_path)
    items = build_items(rd, attributes=ATTRS)
    demo, url = serve(rd, users_file, attributes=ATTRS)
    try:
        pages = {}
        for who in ("bob", "carol"):
            pages[who] = browser.new_context().new_page()  # separate contexts: separate browsers' storage
            start(pages[who], url, who)
        keys = {"bob": "y", "carol": "n"}
        for k in range(6):
            for who, key in keys.items():       # both sent before either is answered
                pages[who].keyboard.press(key)
            for who, key in keys.items():
                wait_answered(pages[who], rd, who, k + 1, key)
        for page in pages.values():
            page.context.close()
    finally:
        demo.close()
    ids = [it.item_id for it in items[:6]]
    assert answers_of(rd, "bob") == dict.fromkeys(ids, "yes")
    assert answers_of(rd, "carol") == dict.fromkeys(ids, "no")
    assert len(read_events(rd)) == 12 and read_events(rd).attrs["ignored_lines"] == 0


def test_qualification_first_and_failure_flagged(run_dir, users_file, browser, tmp_path):
    rd = fresh_copy(run_dir, tmp_path)
    qual = tmp_path / "qual.yaml"
    qual.write_text(
        "items:\n"
        "  - {id: q1, probe_id: 'gep_neutral/woman/sitting-at-a-table/00', question_type: attribute,\n"
        "     question_key: in a dress, expected: 'yes'}\n"
        "  - {id: q2, probe_id: 'dalleval_bias/man/accountant/00', question_type: skin_tone, expected: 4}\n")
    demo, url = serve(rd, users_file, attributes=ATTRS, qualification=qual)
    try:
        page = browser.new_context().new_page()
        start(page, url, "dave")
        assert "qualification question 1 of 2" in page.inner_text("#status")
        assert question(page) == "Do you see a person in a dress?"
        assert not page.locator("#skip").is_visible()      # the test cannot be skipped
        page.keyboard.press("n")                           # wrong
        wait_done(page, 1)
        assert "qualification question 2 of 2" in page.inner_text("#status")
        assert "Qualification not passed" in page.inner_text("#qual-flag")
        page.keyboard.press("4")
        wait_done(page, 2)
        assert question(page) == "Do you see a person in boots?"   # then the run's own items
        assert "Qualification not passed" in page.inner_text("#qual-flag")
        page.context.close()
    finally:
        demo.close()
    assert flagged_annotators(rd) == {"dave"}
    assert read_answers(rd).empty and len(read_answers(rd, include_qualification=True)) == 2


def test_cli_refuses_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert exit_status(["annotate-ui", str(tmp_path)]) == 2  # in this process, as the refusals below
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("t2ibench: error: ") and "not a run folder" in err


def test_wrong_password_stays_on_the_login_page(run_dir, users_file, browser, tmp_path):
    rd = fresh_copy(run_dir, tmp_path)
    demo, url = serve(rd, users_file, attributes=ATTRS)
    try:
        page = browser.new_context().new_page()
        page.goto(url)
        page.locator("input[data-testid='textbox']").fill("alice")
        page.locator("input[type='password']").fill("bob-secret")       # bob's password, not alice's
        page.get_by_role("button", name="Login").click()
        page.wait_for_function("() => document.body.innerText.includes('Incorrect Credentials')", timeout=TIMEOUT)
        assert page.locator("#status").count() == 0 and page.locator("#item-image").count() == 0
        page.context.close()
    finally:
        demo.close()
    assert not answers_path(rd).exists()


def wait_for_server(proc, url: str, deadline_s: float = 90) -> None:
    deadline = time.time() + deadline_s
    while time.time() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answers (401 before login)
        except OSError:
            time.sleep(0.5)
    raise AssertionError(proc.stdout.read() if proc.poll() is not None else "no answer")


def test_cli_serves_the_app_behind_a_login(run_dir, users_file):
    import httpx

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchmark.cli", "annotate-ui", str(run_dir), "--port", str(port),
                             "--questions", "skin_tone", "--users", str(users_file)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for_server(proc, url + "config")
        with httpx.Client(base_url=url) as client:
            assert client.get("config").status_code == 401                 # nothing before the login
            assert client.post("login", data={"username": "bob", "password": "wrong"}).status_code == 400
            assert client.post("login", data={"username": "bob", "password": PASSWORDS["bob"]}).status_code == 200
            assert "Label images of" in client.get("config").text
    finally:
        proc.terminate()
        proc.wait(30)


def test_cli_no_auth_serves_one_local_annotator(run_dir):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchmark.cli", "annotate-ui", str(run_dir), "--port", str(port),
                             "--questions", "skin_tone", "--no-auth", "--annotator", "me"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_server(proc, f"http://127.0.0.1:{port}/config")
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=5).read().decode()
        assert "Label images of" in body
    finally:
        proc.terminate()
        out = proc.communicate(timeout=30)[0]
    assert "No login: every answer is recorded as annotator 'me'; listening on 127.0.0.1 only." in out


@pytest.mark.parametrize("extra, message", [
    ([], "annotate-ui needs a login: --users USERS_FILE"),
    (["--no-auth", "--host", "0.0.0.0"], "--no-auth serves on 127.0.0.1 only"),
    (["--oauth"], "--oauth works only on a Hugging Face Space"),
    (["--no-auth", "--oauth"], "choose one login"),
    (["--annotator", "x"], "--annotator names the single annotator of --no-auth"),
    (["--users", "missing-users.txt"], "does not exist"),
])
def test_cli_refuses_to_serve_without_a_safe_login(run_dir, extra, message, monkeypatch, capsys):
    # the command's own main() in this process (a fresh Python per case cost ~3 s of imports each;
    # the tests above start the real `python -m benchmark.cli annotate-ui`)
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.chdir(REPO)
    assert exit_status(["annotate-ui", str(run_dir), *extra]) == 2
    last = capsys.readouterr().err.strip().splitlines()
    assert len(last) == 1 and last[0].startswith("t2ibench: error: ") and message in last[0]


def test_annotate_user_command_adds_changes_and_removes(tmp_path, monkeypatch, capsys):
    from benchmark.human import users as U

    path = tmp_path / "users.txt"

    def run(*args, stdin=""):
        """`t2ibench annotate-user` through the command's main() in this process (eight fresh Pythons
        cost ~15 s of imports); the first call below is the real command, in its own process."""
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = exit_status(["annotate-user", str(path), *args])
        return subprocess.CompletedProcess(args, code, *capsys.readouterr())

    first = subprocess.run([sys.executable, "-m", "benchmark.cli", "annotate-user", str(path), "erin",
                            "--password-stdin"], cwd=REPO, input="correct horse\n", capture_output=True, text=True,
                           check=False, timeout=120)
    assert first.returncode == 0, first.stderr
    assert run("frank", "--password-stdin", stdin="battery staple\n").returncode == 0
    accounts = U.read_users(path)
    assert set(accounts) == {"erin", "frank"} and "correct horse" not in path.read_text()
    assert (path.stat().st_mode & 0o777) == 0o600
    assert U.verify_password(accounts, "erin", "correct horse") and not U.verify_password(accounts, "erin", "x" * 9)
    assert run("erin", "--password-stdin", stdin="new password\n").returncode == 0       # change
    accounts = U.read_users(path)
    assert U.verify_password(accounts, "erin", "new password")
    assert not U.verify_password(accounts, "erin", "correct horse")
    short = run("gus", "--password-stdin", stdin="short\n")
    assert short.returncode == 2 and "8 to 1024 characters" in short.stderr
    bad = run("a:b", "--password-stdin", stdin="long enough\n")
    assert bad.returncode == 2 and "must not contain ':'" in bad.stderr
    assert run("frank", "--remove").returncode == 0 and set(U.read_users(path)) == {"erin"}

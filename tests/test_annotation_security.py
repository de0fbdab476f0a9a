"""The annotation app as an attacker meets it on the open internet: a launched app with two
accounts (alice, bob), called the way the page calls it (Gradio's queue protocol over HTTP)
and through ``gradio_client``. Nobody acts as another annotator, no run file can be
downloaded, a crafted image path is refused, unknown items and invalid answers change
nothing, and malformed lines of answers.jsonl are skipped and counted."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import gradio as gr
import httpx
import pandas as pd
import pytest
from PIL import Image

from benchmark.human.answers_file import LABELS_DIR, answers_path, append_event, read_events
from benchmark.human.events import MAX_LINE_BYTES
from benchmark.human.items import Item, event_for
from benchmark.human.replay import read_answers

REPO = Path(__file__).resolve().parents[1]
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret"}
ATTRS = ["in boots", "in a dress", "boots"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("annot-sec")
    out = root / "run"
    env = {**os.environ, "T2IBENCH_CACHE": str(root / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "benchmark.cli", "generate", "--model", "builtin:tiny-sd", "--out", str(out),
                    "--suites", "gep_neutral", "dalleval_bias", "--limit", "2", "--quiet"],
                   env=env, check=True, cwd=REPO, capture_output=True)
    return out


@pytest.fixture(scope="module")
def users_file(tmp_path_factory):
    from benchmark.human.users import set_password

    path = tmp_path_factory.mktemp("accounts") / "users.txt"
    for name, password in PASSWORDS.items():
        set_password(path, name, password)
    return path


@pytest.fixture
def rd(run_dir, tmp_path):
    """A copy of the run with the files an attacker wants: answers, results, a hidden file."""
    dst = tmp_path / "run"
    shutil.copytree(run_dir, dst, ignore=shutil.ignore_patterns(LABELS_DIR))
    (dst / "results.json").write_text('{"secret": "results"}')
    (dst / ".hidden").write_text("TOKEN=do-not-serve-0123456789")
    (dst / "images" / ".hidden.png").write_bytes((dst / "results.json").read_bytes())
    return dst


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def serve(users_file):
    demos = []

    def start(run, **kwargs):
        from benchmark.human.app import launch_app

        port = free_port()
        demo = launch_app(run, users=users_file, port=port, prevent_thread_lock=True, quiet=True,
                          attributes=ATTRS, **kwargs)
        demos.append(demo)
        return demo, f"http://127.0.0.1:{port}/"

    yield start
    for demo in demos:
        demo.close()


class Page:
    """One browser page of the app, calling it exactly as Gradio's front end does: POST
    ``queue/join`` with a function index and the page's session hash, then read the result
    from the ``queue/data`` event stream. ``data`` may carry anything an attacker likes."""

    def __init__(self, url: str, user: str | None = None, password: str | None = None,
                 session_hash: str | None = None):
        self.http = httpx.Client(base_url=url, timeout=60)
        if user is not None:
            r = self.http.post("login", data={"username": user, "password": password or PASSWORDS[user]})
            assert r.status_code == 200, r.text
        self.session_hash = session_hash or uuid.uuid4().hex[:11]
        config = self.http.get("config").json()
        elem = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
        self.fns: dict[str, int] = {}
        self.api_names = [d["api_name"] for d in config["dependencies"] if isinstance(d.get("api_name"), str)]
        for dep in config["dependencies"]:
            for target, event in dep["targets"]:
                self.fns["load" if event == "load" else elem.get(target)] = dep["id"]

    def call(self, name: str, data=None) -> dict:
        body = {"data": [None] if data is None else data, "fn_index": self.fns[name], "session_hash": self.session_hash,
                "event_data": None, "trigger_id": None}
        r = self.http.post("gradio_api/queue/join", json=body)
        r.raise_for_status()
        with self.http.stream("GET", "gradio_api/queue/data", params={"session_hash": self.session_hash}) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    msg = json.loads(line[5:])
                    if msg.get("msg") == "process_completed":
                        return msg
        raise AssertionError("no process_completed message")

    def status(self, msg: dict) -> str:
        return str(msg["output"]["data"][1])


def answers_of(run, who):
    a = read_answers(run).query("annotator == @who")
    return dict(zip(a.item_id, a.answer))


# ----------------------------------------------------------------------------- identity


def test_a_logged_in_user_cannot_answer_or_undo_as_another(rd, serve):
    demo, url = serve(rd)
    alice = Page(url, "alice")
    assert "Annotator **alice**" in alice.status(alice.call("load"))
    for _ in range(3):
        alice.call("ans-yes")
    alice_before = answers_of(rd, "alice")
    assert len(alice_before) == 3

    forged = [{"annotator": "alice", "session": "x", "item_id": next(iter(alice_before))}]
    bob = Page(url, "bob")
    bob.call("load", forged)
    msg = bob.call("ans-no", forged)                # the client's name and item are not read
    assert msg["success"] and "Annotator **bob**" in bob.status(msg)
    for _ in range(5):
        bob.call("undo", forged)                    # undo only ever pops bob's own events
    # bob on alice's own page session (he learnt her session hash): still bob
    hijack = Page(url, "bob", session_hash=alice.session_hash)
    hijack.call("ans-no", forged)
    hijack.call("undo", forged)
    hijack.call("undo", forged)

    assert answers_of(rd, "alice") == alice_before
    events = read_events(rd)
    assert set(events.loc[events.annotator == "alice", "event"]) == {"answer"}  # alice never undid anything
    assert (events.annotator == "alice").sum() == 3
    assert set(events.annotator) == {"alice", "bob"}


def test_every_route_needs_a_login(rd, serve):
    demo, url = serve(rd)
    anon = httpx.Client(base_url=url, timeout=30)
    for path in ("config", "gradio_api/info", f"gradio_api/file={rd / 'images'}", "gradio_api/queue/data"):
        assert anon.get(path).status_code == 401, path
    body = {"data": [None], "fn_index": 0, "session_hash": "abc"}
    assert anon.post("gradio_api/queue/join", json=body).status_code == 401
    # An event stream Gradio leaves without a login check: refused at once, not held open (issue 23).
    start = time.monotonic()
    with anon.stream("GET", "gradio_api/heartbeat/abc", timeout=10) as response:
        assert response.status_code == 401
    assert time.monotonic() - start < 5
    alice = Page(url, "alice")
    with alice.http.stream("GET", f"gradio_api/heartbeat/{alice.session_hash}", timeout=10) as response:
        assert response.status_code == 200  # a logged-in page keeps its heartbeat
    assert anon.post("login", data={"username": "alice", "password": "bob-secret"}).status_code == 400
    assert anon.post("login", data={"username": "mallory", "password": "alice-secret"}).status_code == 400
    assert not answers_path(rd).exists()


def test_gradio_client_sees_and_calls_no_endpoint(rd, serve):
    from gradio_client import Client

    demo, url = serve(rd)
    client = Client(url, auth=("bob", PASSWORDS["bob"]), verbose=False)
    assert client.view_api(print_info=False, return_format="dict") == {"named_endpoints": {}, "unnamed_endpoints": {}}
    page = Page(url, "bob")
    assert page.fns and page.api_names
    for fn_index in page.fns.values():
        with pytest.raises(ValueError):
            client.predict(fn_index=fn_index)
    for api_name in page.api_names:
        with pytest.raises(ValueError):
            client.predict(api_name=f"/{api_name}")
    assert not answers_path(rd).exists()


def test_the_http_call_route_cannot_name_another_annotator(rd, serve):
    """Gradio's ``/gradio_api/call/NAME`` route still reaches private events: it runs as the caller."""
    demo, url = serve(rd)
    alice = Page(url, "alice")
    alice.call("load")
    alice.call("ans-yes")
    before = answers_of(rd, "alice")
    bob = Page(url, "bob")
    forged = {"data": [{"annotator": "alice", "session": "s", "item_id": next(iter(before))}]}
    for api_name in bob.api_names:
        r = bob.http.post(f"gradio_api/call/{api_name}", json=forged)
        if r.status_code == 200:
            event_id = r.json()["event_id"]
            bob.http.get(f"gradio_api/call/{api_name}/{event_id}")  # let it finish
    assert answers_of(rd, "alice") == before
    assert set(read_events(rd).annotator) <= {"alice", "bob"}


@pytest.mark.parametrize("text, message", [
    ("alice\n", "line 1: expected NAME:HASH"),
    ("# accounts\n\nalice:plain-password\n", "line 3: a password hash must look like"),
    ("alice:scrypt$1048577$8$1$AAAAAAAAAAA=$" + "A" * 43 + "=\n", "unsupported scrypt cost"),
    ("alice:scrypt$16384$8$1$%%%$AAAA\n", "invalid base64"),
    ("", "has no users"),
])
def test_a_malformed_users_file_is_refused_with_one_line(tmp_path, users_file, text, message):
    from benchmark.human.users import read_users

    bad = tmp_path / "users.txt"
    bad.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        read_users(bad)
    assert "\n" not in str(info.value)
    twice = tmp_path / "twice.txt"
    twice.write_text(users_file.read_text() + users_file.read_text().splitlines()[0] + "\n")
    with pytest.raises(ValueError, match="appears twice"):
        read_users(twice)


def test_passwords_are_stored_as_scrypt_hashes_only(users_file):
    from benchmark.human.users import read_users, verify_password

    accounts = read_users(users_file)
    text = users_file.read_text()
    assert all(p not in text for p in PASSWORDS.values())
    assert all(h.startswith("scrypt$32768$8$1$") for h in accounts.values())
    assert verify_password(accounts, "alice", PASSWORDS["alice"])
    assert not verify_password(accounts, "alice", PASSWORDS["bob"])
    assert not verify_password(accounts, "mallory", PASSWORDS["alice"])     # unknown name: False, same work
    assert not verify_password(accounts, "alice", "x" * 5000)


# ----------------------------------------------------------------------------- files


def path_routes(demo) -> list[str]:
    """Every GET route of the app that takes a path (files, static assets, proxy), included routers too."""
    found = set()

    def walk(routes):
        for r in routes:
            if hasattr(r, "original_router"):  # FastAPI's included router
                walk(r.original_router.routes)
            elif "GET" in (getattr(r, "methods", None) or set()) and ":path}" in getattr(r, "path", ""):
                found.add(r.path)

    walk(demo.server_app.routes)
    return sorted(found)


def test_no_run_file_is_downloadable(rd, serve):
    demo, url = serve(rd)
    alice = Page(url, "alice")
    shown = alice.call("load")["output"]["data"][3]                 # the picture the page shows
    alice.call("ans-yes")                                           # answers.jsonl now exists
    assert answers_path(rd).is_file()
    picture = alice.http.get(shown["url"])
    assert picture.status_code == 200 and picture.content[:8] == b"\x89PNG\r\n\x1a\n"
    cache = Path(demo.annotation_cache)
    assert Path(shown["path"]).resolve().is_relative_to(cache)
    # the app's file folder holds the shown pictures only
    assert {p.suffix for p in cache.rglob("*") if p.is_file()} == {".png"}

    png = next((rd / "images").glob("*/*.png"))
    secrets = [answers_path(rd), rd / "results.json", rd / "manifest.parquet", rd / "run_config.json",
               rd / ".hidden", rd / "images" / ".hidden.png", png, rd / "images"]
    routes = path_routes(demo)
    assert {"/gradio_api/file={path_or_url:path}", "/gradio_api/file/{path:path}"} <= set(routes)

    def through_cache(target: Path) -> str:
        # from the app's own file folder up with '..', sent as %2E%2E so that the HTTP client
        # does not resolve it before the server sees it
        return f"{cache}/{'/'.join(['..'] * len(cache.parts[1:]))}{target}".replace("..", "%2E%2E")

    # control: such a spelling does reach the server intact (the shown picture is served through it)
    assert alice.http.get("gradio_api/file=" + through_cache(Path(shown["path"]).resolve())).status_code == 200
    for secret in secrets:
        for spelled in (str(secret), str(secret.relative_to(rd.parent)), through_cache(secret)):
            for route in routes:
                path = route.split("{")[0].lstrip("/") + spelled
                r = alice.http.get(path)
                assert r.status_code in (400, 403, 404), (path, r.status_code)
                assert secret.is_dir() or secret.read_bytes() not in r.content
    upload = alice.http.post("gradio_api/upload", files={"files": ("x.html", b"<script>1</script>")})
    assert upload.status_code in (400, 413)                         # uploads are refused


def write_manifest(run: Path, edit) -> None:
    manifest = pd.read_parquet(run / "manifest.parquet")
    edit(manifest)
    manifest.to_parquet(run / "manifest.parquet", index=False)


def test_a_crafted_image_path_is_refused_and_never_served(rd, serve, tmp_path):
    outside = tmp_path / "outside.png"
    Image.new("RGB", (8, 8), (255, 0, 0)).save(outside)
    link = next((rd / "images").glob("*/")) / "link.png"
    link.symlink_to(rd / "results.json")
    manifest = pd.read_parquet(rd / "manifest.parquet")
    gep = manifest.index[manifest["suite"] == "gep_neutral"].tolist()
    crafted = {gep[0]: "../outside.png", gep[1]: str(outside), len(manifest) - 1: str(link.relative_to(rd))}

    def edit(m):
        for row, path in crafted.items():
            m.loc[row, "image_path"] = path

    write_manifest(rd, edit)
    refused_probes = {manifest.loc[row, "probe_id"] for row in crafted}
    log: list[str] = []
    demo, url = serve(rd, log=log.append)
    app = demo.annotation_app
    assert {it.probe_id for it in app.refused} == refused_probes
    assert not {it.probe_id for it in app.items} & refused_probes
    assert len(log) == 1 and log[0].startswith(f"refused {len(app.refused)} item(s) whose image is not a file inside")

    alice = Page(url, "alice")
    msg = alice.call("load")
    seen = set()
    while msg["output"]["data"][3] is not None:                     # answer everything that is shown
        seen.add(hashlib_of(alice.http.get(msg["output"]["data"][3]["url"]).content))
        msg = alice.call("skip")
    assert "all items done" in alice.status(msg)
    assert hashlib_of(outside.read_bytes()) not in seen
    done = read_events(rd)
    assert not set(done.probe_id) & refused_probes and len(done) == len(app.items)
    for secret in (outside, link, rd / "results.json"):
        assert alice.http.get(f"gradio_api/file={secret}").status_code == 403


def hashlib_of(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def test_an_image_swapped_after_start_is_not_shown(rd, serve, tmp_path):
    demo, url = serve(rd)
    app = demo.annotation_app
    first = app.items[0]
    outside = tmp_path / "elsewhere.png"
    Image.new("RGB", (8, 8), (0, 255, 0)).save(outside)
    target = Path(first.image_path)
    target.unlink()
    target.symlink_to(outside)                                      # swapped for a file outside while serving
    log: list[str] = []
    app.log = log.append
    alice = Page(url, "alice")
    status = alice.status(alice.call("load"))
    assert "Annotator **alice**" in status and first.item_id in app._refused_ids
    assert any(first.item_id in line for line in log)


# ----------------------------------------------------------------------------- inputs


def test_handlers_reject_unknown_items_and_invalid_answers(rd):
    from benchmark.human.app import AnnotationApp

    app = AnnotationApp(rd, attributes=ATTRS, log=lambda _: None)
    view = app.on_load(None, "alice")
    state = view[0]
    item = app.by_id[state["item_id"]]
    assert item.question_type == "attribute"
    with pytest.raises(gr.Error, match="is not an answer to this question"):
        app.on_answer("feminine", state, "alice")                  # an answer of another question type
    with pytest.raises(gr.Error):
        app.on_answer("yes; DROP", state, "alice")
    # an item id the run does not have, or another annotator's page state: nothing written
    app.on_answer("yes", {**state, "item_id": "nope|attribute|in boots"}, "alice")
    app.on_answer("yes", state, "bob")
    app.on_skip({**state, "item_id": "nope|attribute|in boots"}, "alice")
    # a name the login cannot produce is no annotator
    for who in (None, "", "a\nb", "x" * 500, 7):
        assert app.on_answer("yes", state, who)[0]["annotator"] is None
    assert not answers_path(rd).exists()
    app.on_answer("yes", state, "alice")
    assert answers_of(rd, "alice") == {item.item_id: "yes"}


def test_oauth_handlers_take_the_annotator_from_the_hugging_face_profile(rd):
    """The profile Gradio injects from the signed session cookie (no network: the session is built here;
    the handlers are the ones the OAuth page registers)."""
    import time

    from gradio.helpers import special_args
    from starlette.requests import Request

    from benchmark.human.app import AnnotationApp

    app = AnnotationApp(rd, attributes=ATTRS, auth="oauth", log=lambda _: None)
    load = app._from_login(app.on_load)
    answer_yes = app._from_login(lambda st, who: app.on_answer("yes", st, who))

    def run(fn, session: dict, state):
        scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "query_string": b"",
                 "session": session}
        args, *_ = special_args(fn, inputs=[state], request=Request(scope))
        return fn(*args)

    userinfo = {"preferred_username": "carol", "name": "Carol", "profile": "https://huggingface.co/carol",
                "picture": ""}
    signed_in = {"oauth_info": {"userinfo": userinfo, "expires_at": time.time() + 3600}}
    view = run(load, signed_in, None)
    assert "Annotator **carol**" in view[1]
    run(answer_yes, signed_in, view[0])
    assert answers_of(rd, "carol") == {view[0]["item_id"]: "yes"}
    signed_out = run(answer_yes, {}, view[0])                       # no profile: nothing written
    assert signed_out[0]["annotator"] is None and "Sign in with Hugging Face" in signed_out[1]
    expired = {"oauth_info": {**signed_in["oauth_info"], "expires_at": time.time() - 1}}
    run(answer_yes, expired, view[0])
    assert len(read_events(rd)) == 1


def test_oauth_is_chosen_on_a_space_and_needs_its_libraries(monkeypatch):
    import importlib.util

    from benchmark.human.app import login_settings

    monkeypatch.setenv("SPACE_ID", "org/annotate")
    has_libraries = all(importlib.util.find_spec(m) for m in ("authlib", "itsdangerous"))
    if has_libraries:
        assert login_settings()[0] == "oauth" and login_settings(oauth=True)[0] == "oauth"
    else:
        with pytest.raises(ValueError, match=r"gradio\[oauth\]"):
            login_settings()
    # an explicit login wins over the Space's default
    assert login_settings(no_auth=True)[0] == "local"


# ----------------------------------------------------------------------------- malformed answers file


def bad_lines() -> list[bytes]:
    event = event_for(Item("p|attribute|in boots", "p", "gep_neutral", "attribute", "in boots", "q", "/x",
                           ("yes", "no")), "answer", "alice", "yes")
    return [b"[" * 20_000 + b"]" * 20_000,                          # nested too deeply
            b"{" + b" " * (MAX_LINE_BYTES + 10) + b"}",           # too long
            b'{"event": "answer", "item_id": 1',                      # not JSON (a torn line)
            b"9" * 5000,                                            # an integer over Python's digit limit
            json.dumps({**event, "answer": {"nested": ["x"]}}).encode(),  # wrong type
            json.dumps({**event, "annotator": 5}).encode(),
            b"\xff\xfe\xfa"]                                        # not UTF-8


def test_the_app_and_agreement_survive_malformed_lines(rd, serve):
    from benchmark.human.agreement_cli import agreement_tables, format_markdown

    answers_path(rd).parent.mkdir(parents=True)
    answers_path(rd).write_bytes(b"\n".join(bad_lines()) + b"\n")
    log: list[str] = []
    demo, url = serve(rd, log=log.append)
    assert log == ["7 lines of answers.jsonl skipped (2 not JSON, 2 not an event, 1 nested too deeply, "
                   "1 not UTF-8, 1 too long)"]
    alice, bob = Page(url, "alice"), Page(url, "bob")
    for page, answer in ((alice, "ans-yes"), (bob, "ans-no")):
        page.call("load")
        page.call(answer)
        page.call(answer)
    # an answer about an item this run does not have (written by another tool, or by hand)
    item = Item("gep_neutral/nobody/nowhere/00|attribute|in boots", "gep_neutral/nobody/nowhere/00",
                "gep_neutral", "attribute", "in boots", "q", "/x", ("yes", "no"))
    append_event(rd, event_for(item, "answer", "bob", "yes"))
    t = agreement_tables(rd, artificial=False)
    assert t["summary"]["n_answers"] == 4
    assert t["summary"]["skipped_lines"] == {"nested too deeply": 1, "too long": 1, "not JSON": 2, "not an event": 2,
                                             "not UTF-8": 1, "unknown item": 1}
    assert ("8 lines of answers.jsonl skipped (2 not JSON, 2 not an event, 1 nested too deeply, 1 not UTF-8, "
            "1 too long, 1 unknown item).") in format_markdown(t)

    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "agreement", str(rd), "--no-artificial"], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "8 lines of answers.jsonl skipped" in proc.stdout
    doc = json.loads((rd / "report" / "agreement.json").read_text())
    assert doc["summary"]["skipped_lines"]["unknown item"] == 1

    from benchmark.runner.report import build_context

    section = build_context(rd, {"scores": [], "suites": []}, rd / "report")["agreement"]
    assert "8 lines of answers.jsonl skipped" in section["text"]


def test_agreement_says_why_when_every_line_is_skipped(rd):
    from benchmark.human.agreement_cli import agreement_tables

    answers_path(rd).parent.mkdir(parents=True)
    answers_path(rd).write_bytes(b"\n".join(bad_lines()) + b"\n")
    with pytest.raises(ValueError, match=r"has no human answers; 7 lines of answers.jsonl skipped") as info:
        agreement_tables(rd, artificial=False)
    assert "\n" not in str(info.value)

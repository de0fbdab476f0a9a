"""The Submit tab's functions without a browser: the form, the queue tables, the app's
configuration from the environment, and the provenance helpers the leaderboard filters with."""

import typing
from types import SimpleNamespace

import gradio as gr
import pytest

from submissions.leaderboard import submit_tab
from submissions.leaderboard.submit_tab import (
    PROVENANCE_SELF,
    PROVENANCE_WORKER,
    filter_by_provenance,
    finished_requests,
    options_from_env,
    provenance,
    queue_tables,
    submit_from_form,
)
from submissions.request_checks import RateLimit
from submissions.request_store import LocalRequestStore
from submissions.requests import FAILED, FINISHED, PENDING, RUNNING, RequestRecord

SHA = "0123456789abcdef0123456789abcdef01234567"


def _rec(model="acme/a", submitted="2026-11-24T09:00:00.000Z", **kw):
    return RequestRecord(model_id=model, revision="main", commit=SHA, submitter=kw.pop("submitter", "ann"),
                         submitted_at=submitted, **kw)


def _store(tmp_path, *records):
    store = LocalRequestStore(tmp_path)
    for r in records:
        store.write(r.path, r, expected=None, message="test")
    return store


def test_form_checks_and_messages(tmp_path):
    store = _store(tmp_path)
    kw = {"allow_demo": False, "rate_limit": RateLimit()}
    assert submit_from_form(store, None, "acme/a", "main", "", {}, **kw) == \
        "**Not queued**: log in with Hugging Face first."
    assert "built-in tiny models are for trying the queue locally" in \
        submit_from_form(store, "ann", "builtin:tiny-sd", "main", "", {}, **kw)
    message = submit_from_form(store, "ann", "builtin:tiny-sd", "main", "", {"num_inference_steps": "abc"},
                               allow_demo=True, rate_limit=RateLimit())
    assert message == "**Not queued**: num\\_inference\\_steps: 'abc' is not a number"
    message = submit_from_form(store, "ann", "builtin:tiny-sd", "main", "float16",
                               {"num_inference_steps": "12", "guidance_scale": "0", "height": " ", "width": None},
                               allow_demo=True, rate_limit=RateLimit())
    assert message.startswith("**Queued** builtin:tiny-sd at commit `builtin-v1` as PENDING (demo")
    [stored] = store.snapshot().records
    assert stored.record.settings == {"num_inference_steps": 12, "guidance_scale": 0.0}
    assert stored.record.dtype == "float16" and stored.record.submitter == "ann"


def test_queue_tables_order_and_text(tmp_path):
    store = _store(tmp_path,
                   _rec("acme/late", "2026-11-24T10:00:00.000Z"), _rec("acme/early", "2026-11-24T08:00:00.000Z"),
                   _rec("acme/run", status=RUNNING, worker_id="gpu-1", heartbeat_at="2026-11-24T11:00:00.000Z"),
                   _rec("acme/old", status=FINISHED, finished_at="2026-11-24T09:00:00.000Z", results_path="r/a.json"),
                   _rec("acme/new", status=FINISHED, finished_at="2026-11-24T12:00:00.000Z",
                        results_url="https://hf.co/pr/2"),
                   _rec("acme/bad", status=FAILED, finished_at="2026-11-24T12:00:00.000Z", failure_reason="OOM"))
    tables = queue_tables(store.snapshot())
    assert list(tables[PENDING]["Model"]) == ["acme/early", "acme/late"]  # the order workers take them
    assert list(tables[FINISHED]["Model"]) == ["acme/new", "acme/old"]  # newest first
    assert list(tables[FINISHED]["Results or reason"]) == ["https://hf.co/pr/2", "r/a.json"]
    assert tables[RUNNING].iloc[0][["Worker", "Last update (UTC)"]].tolist() == ["gpu-1", "2026-11-24 11:00:00"]
    assert tables[FAILED].iloc[0]["Results or reason"] == "OOM"
    # runs started: none yet for a pending request, the finished or failed run counts
    assert list(tables[PENDING]["Attempts"]) == [0, 0] and list(tables[FINISHED]["Attempts"]) == [1, 1]
    assert list(tables[RUNNING]["Attempts"]) == [1] and list(tables[FAILED]["Attempts"]) == [1]
    abandoned = _rec("acme/gone", status=FAILED, attempts=3, failure_reason="abandoned 3 times (...)")
    assert submit_tab.runs_started(abandoned) == 3


def test_options_from_env():
    env = {"SPACE_ID": "org/board", "REQUESTS_MAX_OPEN": "5"}.get
    opts = options_from_env(env)
    assert opts == {"oauth": True, "submitter": None, "allow_demo": False,
                    "rate_limit": RateLimit(max_open=5, max_per_day=10)}
    opts = options_from_env({"REQUESTS_SUBMITTER": "lab", "REQUESTS_DEMO": "1"}.get)
    assert (opts["oauth"], opts["submitter"], opts["allow_demo"]) == (False, "lab", True)
    with pytest.raises(ValueError, match="REQUESTS_MAX_PER_DAY must be a whole number"):
        options_from_env({"REQUESTS_MAX_PER_DAY": "many"}.get)


def test_oauth_submitter_is_the_logged_in_user(tmp_path):
    # (gr.LoginButton itself needs gradio[oauth], which a Space installs; not here.)
    store = _store(tmp_path)
    handler = submit_tab.submit_handler(store, oauth=True, submitter=None, allow_demo=True, rate_limit=RateLimit(),
                                        after=lambda: ["queue"])
    assert typing.get_type_hints(handler)["profile"] == typing.Optional[gr.OAuthProfile]  # Gradio fills it in
    assert handler("builtin:tiny-sd", "main", "", "", "", "", "", None) == \
        ["**Not queued**: log in with Hugging Face first.", "queue"]
    assert store.snapshot().records == []
    profile = gr.OAuthProfile({"name": "Bo", "preferred_username": "bo", "profile": "", "picture": ""})
    message, _ = handler("builtin:tiny-sd", "main", "", "", "", "", "", profile)
    assert message.startswith("**Queued**")
    assert [s.record.submitter for s in store.snapshot().records] == ["bo"]
    local = submit_tab.submit_handler(store, oauth=False, submitter="lab", allow_demo=False, rate_limit=RateLimit())
    assert "profile" not in typing.get_type_hints(local)


# --------------------------------------------------------------------------- provenance


def _results(model="acme/a", by=None, rid=None):
    doc = {"model": {"id": model}}
    if by:
        doc["evaluated_by"], doc["request_id"] = by, rid
    return doc


def test_provenance_and_filter(tmp_path):
    rid = f"acme__a@{SHA}"
    worker = _results(by="maintainers' worker gpu-1", rid=rid)
    forged = _results(model="acme/b", by="maintainers' worker gpu-1", rid=rid)  # someone else's request
    wrong_worker = _results(by="maintainers' worker gpu-9", rid=rid)
    own = _results()
    assert provenance(own) == PROVENANCE_SELF
    # Without the queue nothing can be checked: the fields alone prove nothing (issue 23).
    assert provenance(worker) == provenance(forged) == PROVENANCE_SELF
    store = _store(tmp_path, _rec(status=FINISHED, worker_id="gpu-1", finished_at="2026-11-24T12:00:00.000Z",
                                  results_path="/srv/results/acme--a/x.json"))
    finished = finished_requests(store)
    assert set(finished) == {rid}
    assert provenance(worker, finished) == PROVENANCE_WORKER
    assert provenance(forged, finished) == provenance(wrong_worker, finished) == PROVENANCE_SELF
    # Rows as the leaderboard has them (row.latest.doc), submissions (.doc) or plain documents.
    rows = [SimpleNamespace(latest=SimpleNamespace(doc=d)) for d in (worker, own, forged)]
    assert filter_by_provenance(rows, "all") == rows
    assert filter_by_provenance(rows, PROVENANCE_WORKER, finished) == rows[:1]
    assert filter_by_provenance(rows, PROVENANCE_SELF, finished) == rows[1:]
    assert filter_by_provenance([SimpleNamespace(doc=worker), own], PROVENANCE_WORKER, finished) \
        == [SimpleNamespace(doc=worker)]
    assert filter_by_provenance([SimpleNamespace(doc=worker), own], PROVENANCE_WORKER) == []
    # A file the leaderboard read: evaluated only when the FINISHED request's results_path names it,
    # whoever finished the request (a worker that took over after a kill finishes with the first one's file).
    assert provenance(SimpleNamespace(doc=worker, source="acme--a/x.json"), finished) == PROVENANCE_WORKER
    assert provenance(SimpleNamespace(doc=wrong_worker, source="results/acme--a/x.json"), finished) == PROVENANCE_WORKER
    assert provenance(SimpleNamespace(doc=worker, source="acme--a/copy.json"), finished) == PROVENANCE_SELF
    with pytest.raises(ValueError, match="provenance filter must be one of"):
        filter_by_provenance(rows, "mine")

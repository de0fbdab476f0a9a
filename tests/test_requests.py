"""Requests: the record, its path, the local store's conditional writes, the checks at
submission (model on the Hub through a patched HfApi.model_info, duplicates, rate limit)
and `t2ibench request`."""

import datetime as dt
import itertools
import json
import multiprocessing
import os
import subprocess
import sys
from types import SimpleNamespace

import httpx2
import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

from benchmark.cli import main
from submissions.request_checks import RateLimit, RequestRefused, resolve_model, submit_request
from submissions.request_store import Conflict, LocalRequestStore
from submissions.requests import (
    FAILED,
    FINISHED,
    PENDING,
    RUNNING,
    InvalidRequest,
    RequestRecord,
    check_hub_model_id,
    check_settings,
    legacy_model_folder,
    legacy_request_path,
    model_folder,
    record_from_json,
    request_id,
    request_path,
)
from submissions.worker_claims import claim_next
from submissions.worker_options import WorkerOptions

SHA = "0123456789abcdef0123456789abcdef01234567"
NOW = "2026-11-24T09:30:00.000Z"


def _record(model_id="acme/painter", commit=SHA, submitter="alice", submitted_at=NOW, **kw):
    return RequestRecord(model_id=model_id, revision=kw.pop("revision", "main"), commit=commit, submitter=submitter,
                         submitted_at=submitted_at, **kw)


def _put(store, record):
    return store.write(record.path, record, expected=None, message="test")


# --------------------------------------------------------------------------- names and paths


def _decode(folder):
    org, name = folder.split("__", 1)
    return f"{org.replace('%5F', '_')}/{name.replace('%5F', '_')}"


def test_folder_names_are_the_results_names():
    from submissions.submit import model_folder_name

    for model_id in ("stabilityai/sdxl-turbo", "my_org/my_model", "a_/b", "a/_b", "builtin:tiny-sd"):
        assert model_folder(model_id) == model_folder_name(model_id)
    assert model_folder("stabilityai/sdxl-turbo") == "stabilityai--sdxl-turbo"
    assert model_folder("builtin:tiny-sd") == "_builtin--tiny-sd"
    assert request_path("acme/painter", SHA) == f"requests/acme--painter/{SHA}.json"
    # the request id (in records, run folders and results) keeps the older spelling
    assert request_id("acme/painter", SHA) == f"acme__painter@{SHA}"
    assert legacy_request_path("acme/painter", SHA) == f"requests/acme__painter/{SHA}.json"


def test_legacy_folder_names_are_injective_and_readable():
    assert legacy_model_folder("stabilityai/sdxl-turbo") == "stabilityai__sdxl-turbo"
    assert legacy_model_folder("my_org/my_model") == "my_org__my_model"  # a lone underscore stays as it is
    assert legacy_model_folder("builtin:tiny-sd") == "builtin__tiny-sd"
    # Naive joining would give "a___b" for both.
    assert legacy_model_folder("a_/b") == "a%5F__b" and legacy_model_folder("a/_b") == "a__%5Fb"
    # Every id over a small alphabet of the awkward characters: distinct folders, decodable.
    ids = set()
    for n_org, n_name in [(1, 1), (2, 2), (3, 2), (2, 3)]:
        for org in map("".join, itertools.product("a_.-", repeat=n_org)):
            for name in map("".join, itertools.product("a_-", repeat=n_name)):
                try:
                    ids.add(check_hub_model_id(f"{org}/{name}"))
                except InvalidRequest:
                    pass
    assert len(ids) > 50
    folders = {legacy_model_folder(i): i for i in ids}
    assert len(folders) == len(ids)
    assert all(_decode(f) == i and "/" not in f for f, i in folders.items())
    assert len({model_folder(i) for i in ids}) == len(ids)  # the results' names are injective too


@pytest.mark.parametrize("bad", ["<script>alert(1)</script>", "a--b/c", "a/b/c", "", "org/.x", "org/x.", "gpt2",
                                 "org/ca\u00e9", "o" * 97 + "/x", "org/x.git", "org/a..b"])
def test_hub_model_id_rule(bad):
    with pytest.raises(InvalidRequest, match="is not a Hub model id"):
        check_hub_model_id(bad)


def test_settings_types_and_ranges():
    assert check_settings({"num_inference_steps": 30, "guidance_scale": 5, "height": 512, "width": 768}) == \
        {"num_inference_steps": 30, "guidance_scale": 5.0, "height": 512, "width": 768}
    assert type(check_settings({"guidance_scale": 5})["guidance_scale"]) is float
    for bad, message in [({"num_inference_steps": 30.5}, "must be an integer"),
                         ({"num_inference_steps": True}, "must be an integer"),
                         ({"guidance_scale": "7"}, "must be a number"),
                         ({"guidance_scale": float("nan")}, "must be a number"),
                         ({"num_inference_steps": 0}, r"outside \[1, 500\]"),
                         ({"height": 500}, "not a multiple of 8"),
                         ({"width": 8192}, "outside"),
                         ({"negative_prompt": "x"}, "unknown generation setting 'negative_prompt'")]:
        with pytest.raises(InvalidRequest, match=message):
            check_settings(bad)


# --------------------------------------------------------------------------- the record


def test_record_round_trip_and_checks():
    rec = _record(dtype="float16", settings={"num_inference_steps": 20})
    doc = json.loads(rec.dumps())
    assert doc["request_id"] == f"acme__painter@{SHA}" and doc["status"] == PENDING and doc["format"] == 1
    assert record_from_json(doc) == rec
    for change, message in [({"status": "DONE"}, "status 'DONE'"),
                            ({"surprise": 1}, "unknown field 'surprise'"),
                            ({"request_id": "x@y"}, "does not match"),
                            ({"commit": "main"}, "40-character"),
                            ({"model_id": "builtin:tiny-sd", "commit": "builtin-v1"}, "not marked demo"),
                            ({"status": RUNNING}, "needs worker_id and heartbeat_at"),
                            ({"status": FAILED}, "needs a failure_reason"),
                            ({"failure_reason": "two\nlines"}, "one line"),
                            ({"attempts": -1}, "not a count"),
                            ({"submitted_at": "yesterday"}, "not a UTC time"),
                            ({"dtype": "int8"}, "dtype must be one of")]:
        with pytest.raises(InvalidRequest, match=message):
            record_from_json({**doc, **change})


def test_store_lists_invalid_files_without_running_them(tmp_path):
    store = LocalRequestStore(tmp_path)
    _put(store, _record())
    # A valid record at another record's path, and a file that is not JSON.
    other = _record(model_id="acme/other")
    (tmp_path / "requests/acme--x").mkdir(parents=True)
    (tmp_path / f"requests/acme--x/{SHA}.json").write_bytes(other.dumps())
    (tmp_path / "requests/acme--x/junk.json").write_text("{not json")
    snap = store.snapshot()
    assert [s.record.model_id for s in snap.records] == ["acme/painter"]
    assert sorted(p for p, _ in snap.invalid) == ["requests/acme--x/" + SHA + ".json", "requests/acme--x/junk.json"]
    assert any("names requests/acme--other" in why for _, why in snap.invalid)


def test_requests_in_the_older_folders_are_read_and_kept_in_place(tmp_path):
    store = LocalRequestStore(tmp_path)
    old = _record()
    legacy = tmp_path / f"requests/acme__painter/{SHA}.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(old.dumps())
    [stored] = store.snapshot().records
    assert stored.path == f"requests/acme__painter/{SHA}.json" and store.snapshot().invalid == []
    # the same request again: refused as a duplicate, though new records go under acme--painter
    with pytest.raises(RequestRefused, match="already queued"):
        submit_request(store, _record(submitter="bob"))
    # a failed one is replaced where it lies, not copied into the new folder
    store.write(stored.path, old.replace(status=FAILED, failure_reason="OOM"), expected=stored.version, message="t")
    again = submit_request(store, _record(submitter="bob"))
    assert again.path == stored.path and [s.path for s in store.snapshot().records] == [stored.path]


# --------------------------------------------------------------------------- conditional writes


def test_local_writes_are_conditional(tmp_path):
    store = LocalRequestStore(tmp_path)
    rec = _record()
    first = _put(store, rec)
    with pytest.raises(Conflict):
        _put(store, rec)  # "must not exist"
    running = rec.replace(status=RUNNING, worker_id="w1", heartbeat_at=NOW)
    second = store.write(rec.path, running, expected=first.version, message="claim")
    with pytest.raises(Conflict):  # based on what was read before the claim
        store.write(rec.path, rec.replace(status=RUNNING, worker_id="w2", heartbeat_at=NOW), expected=first.version,
                    message="claim")
    assert store.read(rec.path) == second and second.record.worker_id == "w1"


def _claim_in_process(folder, barrier, worker_id, out):
    barrier.wait()
    opts = WorkerOptions(worker_id=worker_id, runs_dir=folder, results_folder=folder, log=lambda line: None)
    got = claim_next(LocalRequestStore(folder), opts)
    out.put((worker_id, None if got is None else got.record.worker_id))


def test_processes_claiming_at_once_get_one_claim_each_request(tmp_path):
    store = LocalRequestStore(tmp_path)
    _put(store, _record())
    _put(store, _record(model_id="acme/second", submitted_at="2026-11-24T09:31:00.000Z"))
    ctx = multiprocessing.get_context("fork")
    n = 6
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_claim_in_process, args=(tmp_path, barrier, f"w{i}", out)) for i in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
    winners = sorted(w for w, got in results if got is not None)
    assert len(winners) == 2  # two requests, two claims, never the same one twice
    holders = sorted(s.record.worker_id for s in store.snapshot().records)
    assert holders == winners
    assert all(s.record.status == RUNNING for s in store.snapshot().records)


# --------------------------------------------------------------------------- rate limit and duplicates


def test_rate_limit_and_duplicates(tmp_path):
    store = LocalRequestStore(tmp_path)
    now = dt.datetime(2026, 11, 24, 9, 30, tzinfo=dt.timezone.utc)

    def at(hours_ago):
        return (now - dt.timedelta(hours=hours_ago)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    limit = RateLimit(max_open=2, max_per_day=3)
    for i, (status, when) in enumerate([(PENDING, 1), (FINISHED, 2), (FINISHED, 30)]):
        extra = {"results_path": "r.json"} if status == FINISHED else {}
        _put(store, _record(model_id=f"acme/m{i}", submitted_at=at(when), status=status, **extra))
    new = _record(model_id="acme/new", submitted_at=at(0))
    submit_request(store, new, rate_limit=limit)  # 1 open, 2 today: accepted
    with pytest.raises(RequestRefused, match="alice has 2 requests pending or running \\(the limit is 2\\)"):
        submit_request(store, _record(model_id="acme/newer", submitted_at=at(0)), rate_limit=limit)
    with pytest.raises(RequestRefused, match="alice submitted 3 requests in the last 24 hours \\(the limit is 3\\)"):
        submit_request(store, _record(model_id="acme/newer", submitted_at=at(0)),
                       rate_limit=RateLimit(max_open=5, max_per_day=3))
    # Others are not limited by alice's requests; duplicates are refused whoever asks.
    submit_request(store, _record(model_id="acme/bobs", submitter="bob", submitted_at=at(0)), rate_limit=limit)
    with pytest.raises(RequestRefused, match=f"acme/new at commit {SHA} is already queued \\(PENDING"):
        submit_request(store, _record(model_id="acme/new", submitter="bob", submitted_at=at(0)), rate_limit=limit)
    with pytest.raises(RequestRefused, match="acme/m1 at commit .* is already evaluated: r.json"):
        submit_request(store, _record(model_id="acme/m1", submitter="bob", submitted_at=at(0)), rate_limit=limit)
    with pytest.raises(ValueError, match="max_open must be a positive integer"):
        RateLimit(max_open=0)


def test_a_failed_request_can_be_submitted_again(tmp_path):
    store = LocalRequestStore(tmp_path)
    _put(store, _record(status=FAILED, failure_reason="OutOfMemoryError: CUDA out of memory", attempts=2))
    stored = submit_request(store, _record(submitter="bob"))
    assert stored.record.status == PENDING and stored.record.attempts == 0 and stored.record.submitter == "bob"
    assert store.read(stored.path).record.failure_reason is None


# --------------------------------------------------------------------------- the model on the Hub


def _info(**kw):
    base = {"id": "acme/painter", "sha": SHA, "private": False, "disabled": False, "pipeline_tag": "text-to-image",
            "siblings": [SimpleNamespace(rfilename=f) for f in ("model_index.json", "unet/config.json")]}
    base.update(kw)
    return SimpleNamespace(**base)


def _http_error(cls, status, message):
    request = httpx2.Request("GET", "https://huggingface.co/api/models/acme/painter")
    return cls(message, response=httpx2.Response(status, request=request))


class FakeModels:
    def __init__(self, result):
        self.result, self.calls = result, []

    def model_info(self, repo_id, revision=None, **kw):
        self.calls.append((repo_id, revision))
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def test_model_checks():
    api = FakeModels(_info(id="Acme/Painter"))
    model = resolve_model("acme/painter", None, demo=False, api=api)
    assert (model.model_id, model.revision, model.commit, model.demo) == ("Acme/Painter", "main", SHA, False)
    assert api.calls == [("acme/painter", "main")]
    untagged = FakeModels(_info(pipeline_tag=None))
    assert resolve_model("acme/painter", "v1.0", demo=False, api=untagged).revision == "v1.0"
    refusals = [
        (_info(private=True), "acme/painter is private: the maintainers' workers cannot download it"),
        (_info(pipeline_tag="image-to-image"), "acme/painter is tagged image-to-image, not text-to-image"),
        (_info(siblings=[SimpleNamespace(rfilename="config.json")]), "has no model_index.json: the workers audit "
                                                                     "diffusers pipelines only"),
        (_info(disabled=True), "is disabled"),
        (_http_error(RepositoryNotFoundError, 404, "404"), "no model acme/painter on the Hub"),
        (_http_error(RevisionNotFoundError, 404, "404"), "acme/painter has no revision 'main'"),
    ]
    for result, message in refusals:
        with pytest.raises(RequestRefused, match=message.replace("(", "\\(")):
            resolve_model("acme/painter", None, demo=False, api=FakeModels(result))
    with pytest.raises(RequestRefused, match="accepted only as a demo"):
        resolve_model("builtin:tiny-sd", None, demo=False)
    with pytest.raises(InvalidRequest, match="--demo is for built-in tiny models"):
        resolve_model("acme/painter", None, demo=True, api=api)
    with pytest.raises(InvalidRequest, match="unknown built-in text-to-image model 'builtin:tiny-clip'"):
        resolve_model("builtin:tiny-clip", None, demo=True)
    assert resolve_model("builtin:tiny-sd", None, demo=True).commit == "builtin-v1"


def test_hub_model_to_a_local_queue_with_patched_model_info(tmp_path, monkeypatch, capsys):
    calls = []

    def model_info(self, repo_id, revision=None, **kw):
        calls.append((repo_id, revision))
        return _info()

    monkeypatch.setattr(HfApi, "model_info", model_info)
    args = ["request", "acme/painter", "--to-folder", str(tmp_path), "--submitter", "carol", "--dtype", "bfloat16",
            "--set", "num_inference_steps=30", "--set", "guidance_scale=6"]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"queued acme/painter @ main (commit {SHA}) as PENDING: "
                   f"{tmp_path}/requests/acme--painter/{SHA}.json",
                   f"request id: acme__painter@{SHA}"]
    rec = LocalRequestStore(tmp_path).read(f"requests/acme--painter/{SHA}.json").record
    assert (rec.submitter, rec.dtype, rec.settings, rec.demo) == \
        ("carol", "bfloat16", {"num_inference_steps": 30, "guidance_scale": 6.0}, False)
    assert calls == [("acme/painter", "main")]
    assert main(args) == 2
    assert capsys.readouterr().err.startswith("t2ibench: error: acme/painter at commit")


LORA_SHA = "fedcba9876543210fedcba9876543210fedcba98"


def test_a_request_with_a_lora_is_another_request_pinned_to_its_commit(tmp_path, monkeypatch, capsys):
    """`t2ibench request --lora`: the LoRA's revision resolved to a commit, the request named apart
    from its base's (its own path, id, run folder and results file), and the worker's audit
    request loads it."""
    def model_info(self, repo_id, revision=None, **kw):
        if repo_id == "acme/style-lora":
            return _info(id=repo_id, sha=LORA_SHA, pipeline_tag=None,
                         siblings=[SimpleNamespace(rfilename="pytorch_lora_weights.safetensors")])
        return _info()

    monkeypatch.setattr(HfApi, "model_info", model_info)
    base = ["request", "acme/painter", "--to-folder", str(tmp_path), "--submitter", "carol"]
    assert main(base) == 0
    assert main([*base, "--lora", "acme/style-lora:0.8"]) == 0  # not a duplicate of the base
    lines = capsys.readouterr().out.splitlines()
    lora_id = lines[-1].removeprefix("request id: ")
    assert lora_id.startswith(f"acme__painter@{SHA}+lora-") and len(lora_id.rsplit("-", 1)[1]) == 12
    stored = LocalRequestStore(tmp_path).snapshot().records
    [rec] = [r.record for r in stored if r.record.loras]
    assert rec.loras == [f"acme/style-lora@{LORA_SHA}:0.8"] and rec.request_id == lora_id
    assert rec.path == f"requests/acme--painter/{SHA}{lora_id[len(f'acme__painter@{SHA}'):]}.json"
    assert record_from_json(json.loads(rec.dumps())) == rec
    assert "loras" not in _record().to_json()  # a request without LoRAs reads as before

    from submissions.posted_results import results_relpath
    from submissions.worker_audit import audit_request_for

    opts = WorkerOptions(worker_id="w1", runs_dir=tmp_path / "runs", results_folder=tmp_path / "results")
    request = audit_request_for(rec, opts)
    assert request.model.adapters == (rec.loras[0],) and request.run_dir.name == lora_id
    assert results_relpath(rec) != results_relpath(rec.replace(loras=[]))
    for bad in (["acme/style-lora"], [f"acme/style-lora@{LORA_SHA}:99"], ["x"] * 5):
        with pytest.raises(InvalidRequest):
            record_from_json({**rec.to_json(), "loras": bad, "request_id": None})
    local = tmp_path / "local.safetensors"
    local.write_bytes(b"{}")
    assert main([*base, "--lora", str(local)]) == 2
    assert "a request names a LoRA on the Hub" in capsys.readouterr().err


# --------------------------------------------------------------------------- the command


def _cli(*args, env=None):
    env = env or {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)


def test_request_command_demo_and_refusals(tmp_path, capsys):
    q = tmp_path / "q"
    assert main(["request", "builtin:tiny-sd", "--demo", "--to-folder", str(q), "--dry-run", "--submitter", "dee"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("DRY RUN: nothing is written.\n\nwould write "
                              f"{q}/requests/_builtin--tiny-sd/builtin-v1.json  (")
    assert not q.exists()
    dry = json.loads(printed.split("\n\n", 2)[2])
    assert main(["request", "builtin:tiny-sd", "--demo", "--to-folder", str(q), "--submitter", "dee"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "demo request: built-in tiny model, meaningless scores",
        f"queued builtin:tiny-sd @ builtin-v1 (commit builtin-v1) as PENDING: {q}/requests/_builtin--tiny-sd/"
        "builtin-v1.json",
        "request id: builtin__tiny-sd@builtin-v1"]
    written = json.loads((q / "requests/_builtin--tiny-sd/builtin-v1.json").read_text())
    assert {k: v for k, v in written.items() if k != "submitted_at"} == \
        {k: v for k, v in dry.items() if k != "submitted_at"}
    assert written["demo"] is True and written["status"] == PENDING and written["attempts"] == 0
    for args, message in [
        (["builtin:tiny-sd", "--demo"], "builtin:tiny-sd at commit builtin-v1 is already queued (PENDING"),
        (["builtin:tiny-sd"], "builtin:tiny-sd is a built-in tiny random-weight model (meaningless scores): "
                              "accepted only as a demo (--demo)"),
        (["builtin:tiny-sd", "--demo", "--set", "steps=3"], "unknown generation setting 'steps'"),
        (["builtin:tiny-sd", "--demo", "--set", "height=100"], "height = 100 is not a multiple of 8"),
        (["builtin:tiny-sd", "--demo", "--revision", "main"], "builtin:tiny-sd has one revision, builtin-v1"),
        (["<script>alert(1)</script>"], "'<script>alert(1)</script>' is not a Hub model id"),
    ]:
        assert main(["request", *args, "--to-folder", str(q), "--submitter", "dee"]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith(f"t2ibench: error: {message}"), err


def test_request_offline_is_one_line(tmp_path):
    proc = _cli("request", "acme/painter", "--to-folder", tmp_path / "q")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["t2ibench: error: cannot check acme/painter: the Hub is offline "
                                        "(HF_HUB_OFFLINE)"]
    assert not (tmp_path / "q").exists()

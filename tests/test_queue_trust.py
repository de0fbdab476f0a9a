"""Issue 23: a queue no single file can stop, one results file per request, provenance that
is checked against the queue.

Malformed request files lie beside a valid request: the worker lists them as invalid and
audits the valid one; the leaderboard app starts. A worker killed (SIGKILL, through the
test hook ``T2IBENCH_WORKER_KILL_AT``) at every point between its claim and FINISHED leaves
a request that the next worker finishes with exactly one results file. Two revisions of one
model finishing in the same second get two results files. The audit is a copy of one real
tiny audit (conftest's ``tiny_audit``), so only the queue is tested.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from submissions.posted_results import results_relpath
from submissions.request_store import LocalRequestStore
from submissions.requests import FAILED, FINISHED, PENDING, RUNNING, RequestRecord
from benchmark.contract.times import utc_iso_ms
from submissions.validate import load_results_file
from submissions.worker import work_forever, work_once
from submissions.worker_claims import stale_for
from submissions.worker_options import KILL_AT_ENV, KILL_POINTS, MAX_HEARTBEAT_S, WorkerOptions

HELPER = Path(__file__).with_name("_queue_worker.py")
DEMO_PATH = "requests/_builtin--tiny-sd/builtin-v1.json"


def _demo(commit="builtin-v1", **kw) -> RequestRecord:
    return RequestRecord(model_id="builtin:tiny-sd", revision=commit, commit=commit, submitter="tester",
                         submitted_at=kw.pop("submitted_at", utc_iso_ms()), demo=True, **kw)


def _queue(root: Path, *records: RequestRecord) -> LocalRequestStore:
    store = LocalRequestStore(root)
    for rec in records or (_demo(),):
        store.write(rec.path, rec, expected=None, message="test")
    return store


def _copy_audit(tiny_audit, calls=None):
    def audit(record, opts):
        if calls is not None:
            calls.append(record.request_id)
        run_dir = opts.runs_dir / record.request_id
        shutil.copytree(tiny_audit, run_dir, dirs_exist_ok=True)
        return SimpleNamespace(results_path=run_dir / "results.json", main_process=True)
    return audit


def _opts(tmp_path, lines, worker_id="w"):
    return WorkerOptions(worker_id=worker_id, runs_dir=tmp_path / "runs", results_folder=tmp_path / "r",
                         log=lines.append, progress=False)


def _results_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json")) if folder.exists() else []


# --------------------------------------------------------------------------- malformed files


def _valid_doc() -> dict:
    return _demo(commit="builtin-v7").to_json()


def _malformed() -> dict[str, bytes]:
    """The kinds of the issue (and a few more), each as the file of another request."""
    doc = _valid_doc()
    dumps = json.dumps
    return {
        "deep": b"[" * 100_000 + b"]" * 100_000,
        "deep_small": b"[" * 30_000 + b"]" * 30_000,  # under the size limit: refused by its depth
        "bad_date": dumps({**doc, "submitted_at": "2026-13-45T99:99:99Z"}).encode(),
        "huge_int": dumps(doc).replace('"attempts": 0', '"attempts": ' + "9" * 5000).encode(),
        "bad_heartbeat": dumps({**doc, "status": "RUNNING", "worker_id": "x",
                                "heartbeat_at": "2026-02-30T25:00:00Z"}).encode(),
        "not_utf8": b'{"format": 1, "model_id": "\xff"}',
        "duplicate_key": b'{"format": 1, "format": 1}',
        "nan": dumps(doc).replace('"attempts": 0', '"attempts": NaN').encode(),
        "wrong_types": dumps({**doc, "settings": [1, 2], "attempts": "2"}).encode(),
        "array": b"[]",
        "empty": b"",
        "script_submitter": dumps({**doc, "submitter": "<script>alert(1)</script>"}).encode(),  # issue 51
    }


def _write_malformed(root: Path) -> list[str]:
    paths = []
    for i, (name, data) in enumerate(_malformed().items()):
        path = root / "requests" / f"bad{i}__{name.replace('_', '-')}" / "builtin-v7.json"
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        paths.append(path.relative_to(root).as_posix())
    folder = root / "requests" / "bad__folder" / "x.json"  # a folder behind a request's name
    folder.mkdir(parents=True)
    paths.append(folder.relative_to(root).as_posix())
    return sorted(paths)


def test_malformed_requests_are_listed_and_the_valid_one_is_audited(tmp_path, tiny_audit):
    store = _queue(tmp_path / "q")
    bad = _write_malformed(tmp_path / "q")
    before = {p: (tmp_path / "q" / p).read_bytes() for p in bad if (tmp_path / "q" / p).is_file()}
    snap = store.snapshot()
    assert [s.path for s in snap.records] == [DEMO_PATH]
    assert sorted(p for p, _ in snap.invalid) == bad
    reasons = dict(snap.invalid)
    assert all(len(r.splitlines()) == 1 and len(r) < 300 for r in reasons.values()), reasons
    assert "over the limit of 65536 bytes" in reasons[next(p for p in bad if "--deep/" in p or "deep/" in p)]
    assert "nested 30000 levels deep" in reasons[next(p for p in bad if "deep-small" in p)]
    assert "not a date and time of the calendar" in reasons[next(p for p in bad if "bad-date" in p)]
    assert "an integer of 5000 digits" in reasons[next(p for p in bad if "huge-int" in p)]
    assert "'2026-02-30T25:00:00Z'" in reasons[next(p for p in bad if "bad-heartbeat" in p)]
    assert reasons["requests/bad__folder/x.json"] == "not a regular file"
    assert "holds '<'" in reasons[next(p for p in bad if "script-submitter" in p)]

    lines = []
    outcome = work_once(store, _opts(tmp_path, lines), audit=_copy_audit(tiny_audit))
    assert outcome.status == "finished" and outcome.record.status == FINISHED
    skipped = [ln for ln in lines if "not a valid request" in ln]
    assert len(skipped) == len(bad), lines
    assert {p: (tmp_path / "q" / p).read_bytes() for p in before} == before  # never run, never rewritten


def test_the_looping_worker_goes_on_past_malformed_files(tmp_path, tiny_audit, monkeypatch):
    store = _queue(tmp_path / "q")
    _write_malformed(tmp_path / "q")
    naps = []

    def nap(seconds):  # the first idle sleep ends the test
        naps.append(seconds)
        raise KeyboardInterrupt

    monkeypatch.setattr("submissions.worker.time.sleep", nap)
    lines = []
    with pytest.raises(KeyboardInterrupt):
        work_forever(store, _opts(tmp_path, lines), poll=5, audit=_copy_audit(tiny_audit))
    assert naps == [5] and store.read(DEMO_PATH).record.status == FINISHED
    assert lines[-1] == "worker w: no pending request"


def test_leaderboard_app_starts_with_malformed_requests(tmp_path):
    pytest.importorskip("gradio")
    from submissions.leaderboard import submit_tab
    from submissions.leaderboard.app import app_from_env

    store = _queue(tmp_path / "q")
    bad = _write_malformed(tmp_path / "q")
    env = {"RESULTS_DIR": str(tmp_path / "results"), "REQUESTS_DIR": str(tmp_path / "q")}
    (tmp_path / "results").mkdir()
    app_from_env(env.get)
    shown = submit_tab.invalid_markdown(store.snapshot())
    assert shown.startswith(f"**{len(bad)} file(s) in the queue are not valid requests**")


# --------------------------------------------------------------------------- kill -9 between claim and FINISHED


def _env(root: Path, kill_at=None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_ENDPOINT", KILL_AT_ENV)}
    env.update(HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", T2IBENCH_CACHE=str(root / "cache"))
    if kill_at:
        env[KILL_AT_ENV] = kill_at
    return env


def _round(root: Path, tiny_audit, worker_id: str, kill_at=None) -> subprocess.CompletedProcess:
    args = [sys.executable, str(HELPER), root / "q", root / "r", root / "runs", worker_id, tiny_audit, "1"]
    return subprocess.run(list(map(str, args)), capture_output=True, text=True, env=_env(root, kill_at), timeout=300)


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_worker_killed_between_claim_and_finished_leaves_one_results_file(tmp_path, tiny_audit, point):
    store = _queue(tmp_path / "q")
    killed = _round(tmp_path, tiny_audit, "w1", kill_at=point)
    assert killed.returncode == -9, killed.stderr[-2000:]
    posted = point == "posted"
    assert len(_results_files(tmp_path / "r")) == int(posted)
    time.sleep(1.5)  # w1's heartbeat (timeout 1 s) goes stale
    done = _round(tmp_path, tiny_audit, "w2")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"re-queued builtin__tiny-sd@builtin-v1: no heartbeat from worker w1" in done.stdout
    assert ("audited" in done.stdout.split()) is not posted, done.stdout  # posted results are never audited again
    [results] = _results_files(tmp_path / "r")
    rec = store.read(DEMO_PATH).record
    assert (rec.status, rec.worker_id, rec.attempts, rec.results_path) == (FINISHED, "w2", 1, str(results))
    assert results.relative_to(tmp_path / "r").as_posix() == results_relpath(rec)
    doc = load_results_file(results)
    assert doc["request_id"] == rec.request_id
    assert doc["evaluated_by"] == f"maintainers' worker {'w1' if posted else 'w2'}"


# --------------------------------------------------------------------------- same second, two revisions


def test_two_revisions_of_one_model_finishing_in_the_same_second(tmp_path, tiny_audit):
    now = utc_iso_ms()
    store = _queue(tmp_path / "q", _demo("builtin-v1", submitted_at=now), _demo("builtin-v2", submitted_at=now))
    barrier = threading.Barrier(2)
    outcomes = {}

    def run(worker_id):
        audit = _copy_audit(tiny_audit)

        def in_step(record, opts):  # both audits end together; their results carry the same `created`
            result = audit(record, opts)
            barrier.wait(timeout=60)
            return result
        outcomes[worker_id] = work_once(store, _opts(tmp_path, [], worker_id), audit=in_step)

    threads = [threading.Thread(target=run, args=(w,)) for w in ("w1", "w2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert {w: o.status for w, o in outcomes.items()} == {"w1": "finished", "w2": "finished"}
    files = _results_files(tmp_path / "r")
    assert len(files) == 2
    assert len({load_results_file(f)["created"] for f in files}) == 1  # the same second: no collision
    records = [s.record for s in store.snapshot().records]
    assert sorted(r.status for r in records) == [FINISHED, FINISHED]
    assert sorted(r.results_path for r in records) == [str(f) for f in files]
    assert PENDING not in {r.status for r in records}

    # Provenance as the leaderboard decides it: both files are referenced by FINISHED requests;
    # a copy under another name is not, and without the queue nothing is evaluated.
    from submissions.leaderboard.results_files import load_folder
    from submissions.provenance import PROVENANCE_SELF, PROVENANCE_WORKER, finished_requests, provenance

    shutil.copy(files[0], files[0].with_name("copied.json"))
    finished = finished_requests(store)
    subs = {s.source: s for s in load_folder(tmp_path / "r").submissions}
    assert len(subs) == 3
    kinds = {src: provenance(s, finished) for src, s in subs.items()}
    assert sorted(kinds.values()) == [PROVENANCE_WORKER, PROVENANCE_WORKER, PROVENANCE_SELF]
    assert kinds["_builtin--tiny-sd/copied.json"] == PROVENANCE_SELF
    assert {provenance(s) for s in subs.values()} == {PROVENANCE_SELF}


def test_leaderboard_requests_folder_option_is_checked(tmp_path):
    (tmp_path / "r").mkdir()
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "leaderboard", "--results", str(tmp_path / "r"),
                           "--requests-folder", str(tmp_path / "missing")], capture_output=True, text=True,
                          env=_env(tmp_path), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"t2ibench leaderboard: error: argument --requests-folder: no such folder {tmp_path / 'missing'} "
        "(see `t2ibench leaderboard --help`)"]


# --------------------------------------------------------------------------- issue 51: bounded timeouts


def _running(heartbeat_at: str, timeout: float | None, **kw) -> RequestRecord:
    return _demo(status=RUNNING, worker_id="gone", started_at="2020-01-01T00:00:00.000Z", heartbeat_at=heartbeat_at,
                 heartbeat_timeout_s=timeout, **kw)


def _in(seconds: float) -> str:
    import datetime as dt

    return utc_iso_ms(dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=seconds))


@pytest.mark.parametrize("heartbeat,announced,own,stale", [
    ("2020-01-01T00:00:00.000Z", 1e300, 1800, True),     # RUNNING since 2020, a timeout of 1e300: reclaimed
    (-(MAX_HEARTBEAT_S + 60), 1e300, 1800, True),        # the announced timeout counts up to a week
    (-(MAX_HEARTBEAT_S - 3600), 1e300, 1800, False),
    (-10, 60.0, 2, False),                               # its worker promised 60 s: left alone
    (-10, 2.0, 2, True),
    ("2100-01-01T00:00:00.000Z", 1800.0, 1800, True),    # a heartbeat dated 2100 held the request until then
    (3 * 3600, 1800.0, 1800, True),                      # further ahead than the timeout: no clock is that wrong
    (30, 1800.0, 1800, False),                           # a clock a little ahead
])
def test_a_heartbeat_is_stale_within_bounded_time(heartbeat, announced, own, stale):
    """``heartbeat``: a time, or seconds from now (when the test runs, not when it is collected)."""
    when = heartbeat if isinstance(heartbeat, str) else _in(heartbeat)
    assert (stale_for(_running(when, announced), own) is not None) == stale


def test_a_request_running_since_2020_with_an_endless_timeout_is_reclaimed(tmp_path, tiny_audit):
    """Issue 51: ``heartbeat_timeout_s: 1e300`` kept a request RUNNING since 2020 ("no pending
    request", exit 0); its worker is long gone, so the next worker re-queues and audits it."""
    store = _queue(tmp_path / "q", _running("2020-01-01T00:00:00.000Z", 1e300))
    lines = []
    outcome = work_once(store, _opts(tmp_path, lines), audit=_copy_audit(tiny_audit))
    assert outcome.status == "finished", lines
    assert any(line.startswith("worker w: re-queued builtin__tiny-sd@builtin-v1: no heartbeat from worker gone for ")
               for line in lines), lines
    store = _queue(tmp_path / "q2", _running("2100-01-01T00:00:00.000Z", 60.0, attempts=2))
    assert work_once(store, _opts(tmp_path, lines), audit=None).status == "none"
    rec = store.read(DEMO_PATH).record
    assert rec.status == FAILED and "heartbeat_at 2100-01-01T00:00:00.000Z in the future" in rec.failure_reason


def test_a_held_folder_lock_is_one_line_after_a_bounded_wait(tmp_path, monkeypatch):
    """The local folder's lock is waited for at most LOCK_TIMEOUT_S (it was waited for without end)."""
    from submissions import request_store

    store = _queue(tmp_path / "q")
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from filelock import FileLock; "
                               "lock = FileLock(sys.argv[1]); lock.acquire(); print('held', flush=True); time.sleep(60)",
                               str(tmp_path / "q" / request_store.LOCK_FILE)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(request_store, "LOCK_TIMEOUT_S", 0.3)
        stored = store.read(DEMO_PATH)
        t0 = time.monotonic()
        with pytest.raises(request_store.StoreBusy) as err:
            store.write(DEMO_PATH, stored.record.replace(attempts=1), expected=stored.version, message="test")
        assert time.monotonic() - t0 < 5 and "held by another process for 0.3 s" in str(err.value)
    finally:
        holder.kill()
        holder.wait()
    assert store.read(DEMO_PATH).record.attempts == 0  # nothing written


@pytest.mark.parametrize("poll", [1e300, float("nan"), 0, -1, True])
def test_the_worker_loop_refuses_an_unbounded_poll(tmp_path, poll):
    with pytest.raises(ValueError, match="--poll must be a number of seconds from 0.1 to 86400"):
        work_forever(_queue(tmp_path / "q"), _opts(tmp_path, []), poll=poll, audit=None)

"""`t2ibench worker` on a local queue.

End to end (real processes, real audits of builtin:tiny-sd on one suite): two workers
started at once audit a request exactly once; a worker killed with SIGKILL in the middle
of generation leaves a RUNNING request that the next worker re-queues after the heartbeat
timeout and completes, with the same PNG bytes as an uninterrupted run.

In process: re-queue rules, failures, a lost claim and Ctrl+C, with the audit replaced by
a copy of one real tiny audit (conftest's ``tiny_audit``) so that only the queue is tested.
"""

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmark.contract.results import read_results
from submissions.request_store import LocalRequestStore
from submissions.requests import FAILED, FINISHED, PENDING, RUNNING, RequestRecord, parse_utc
from benchmark.contract.times import utc_iso_ms
from submissions.submit import model_folder_name
from submissions.validate import check_results, load_results_file
from submissions.worker import work_once
from submissions.worker_options import WorkerOptions

DEMO_PATH = "requests/_builtin--tiny-sd/builtin-v1.json"
DEMO_ID = "builtin__tiny-sd@builtin-v1"
# A small audit whose generation lasts a few seconds: 6 probes in 3 batches of 2, 20 steps each.
AUDIT_ARGS = ["--suites", "gep_neutral", "--limit", "6", "--batch-size", "2", "--n-resamples", "20", "--quiet"]
N_BATCHES = 3


def _env(root):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_ENDPOINT")}
    env.update(T2IBENCH_CACHE=str(root / "cache"), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1",
               HF_HOME=str(root / "hf_home"))
    return env


def _worker(env, queue, results, runs, worker_id, *extra):
    cmd = [sys.executable, "-m", "benchmark.cli", "worker", "--requests-folder", str(queue), "--results-folder",
           str(results), "--runs-dir", str(runs), "--worker-id", worker_id, *AUDIT_ARGS, *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _request_demo(env, queue):
    """The demo request, made in this process (a fresh interpreter costs more than the request):
    the workers under test are the subprocesses."""
    from benchmark.cli import main

    with pytest.MonkeyPatch.context() as mp:
        for name in ("T2IBENCH_CACHE", "HF_HUB_OFFLINE"):
            mp.setenv(name, env[name])
        assert main(["request", "builtin:tiny-sd", "--demo", "--to-folder", str(queue), "--submitter", "tester",
                     "--set", "num_inference_steps=20"]) == 0


def _record(queue, path=DEMO_PATH) -> RequestRecord:
    return LocalRequestStore(queue).read(path).record


def _png_hashes(run_dir: Path) -> dict[str, str]:
    return {p.relative_to(run_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((run_dir / "images").rglob("*.png"))}


def _results_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json")) if folder.exists() else []


@pytest.fixture(scope="module")
def concurrent_run(tmp_path_factory):
    """Two workers started at the same moment on a queue holding one demo request."""
    root = tmp_path_factory.mktemp("queue_concurrent")
    env = _env(root)
    queue, results, runs = root / "q", root / "r", root / "runs"
    _request_demo(env, queue)
    procs = {wid: _worker(env, queue, results, runs, wid, "--once") for wid in ("w1", "w2")}
    outputs = {wid: p.communicate(timeout=600) for wid, p in procs.items()}
    codes = {wid: p.returncode for wid, p in procs.items()}
    return SimpleNamespace(root=root, env=env, queue=queue, results=results, runs=runs, outputs=outputs, codes=codes)


def test_two_workers_at_once_audit_the_request_exactly_once(concurrent_run):
    run = concurrent_run
    assert run.codes == {"w1": 0, "w2": 0}, {w: err[-2000:] for w, (_, err) in run.outputs.items()}
    claimed = [w for w, (out, _) in run.outputs.items() if f"worker {w}: claimed {DEMO_ID}" in out]
    assert len(claimed) == 1, run.outputs
    [winner] = claimed
    [other] = [w for w in ("w1", "w2") if w != winner]
    other_out = run.outputs[other][0].splitlines()
    # The other worker either saw the request already RUNNING or lost the race for it.
    assert other_out[-1] == f"worker {other}: no pending request", other_out
    assert set(other_out[:-1]) <= {f"worker {other}: lost the claim on {DEMO_ID} to another worker"}

    [results_file] = _results_files(run.results)
    assert results_file.parent.name == model_folder_name("builtin:tiny-sd")  # the layout of `submit --to-folder`
    doc = load_results_file(results_file)
    assert check_results(doc, allow_demo=True) == []
    assert doc["evaluated_by"] == f"maintainers' worker {winner}" and doc["request_id"] == DEMO_ID
    assert doc["submission"]["demo"] is True and doc["submission"]["results_repo"] is None
    rec = _record(run.queue)
    assert (rec.status, rec.worker_id, rec.attempts, rec.results_path) == (FINISHED, winner, 0, str(results_file))
    assert rec.failure_reason is None and rec.finished_at is not None
    assert [p.name for p in run.runs.iterdir()] == [DEMO_ID]
    assert len(_png_hashes(run.runs / DEMO_ID)) == 6
    assert f"worker {winner}: {DEMO_ID} FINISHED: results at {results_file}" in run.outputs[winner][0]


def test_killed_worker_is_requeued_and_the_next_one_resumes_its_run(concurrent_run, tmp_path):
    env = concurrent_run.env  # same model cache
    queue, results, runs = tmp_path / "q", tmp_path / "r", tmp_path / "runs"
    _request_demo(env, queue)
    images = runs / DEMO_ID / "images"
    victim = _worker(env, queue, results, runs, "doomed", "--once", "--heartbeat-timeout", "2")
    deadline = time.monotonic() + 300
    while not (images.is_dir() and any(p.name.startswith("b") for p in images.iterdir())):
        assert victim.poll() is None, victim.communicate()
        assert time.monotonic() < deadline, "no batch was written in 300 s"
        time.sleep(0.02)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=60)
    assert victim.returncode == -signal.SIGKILL
    written = [p for p in images.iterdir() if p.name.startswith("b")]
    assert 1 <= len(written) < N_BATCHES, "the worker was not killed during generation"
    rec = _record(queue)
    assert (rec.status, rec.worker_id, rec.attempts) == (RUNNING, "doomed", 0)
    assert not _results_files(results)

    # The next worker re-queues it only once the heartbeat is older than the timeout.
    stale_at = parse_utc(rec.heartbeat_at) + dt.timedelta(seconds=2.5)
    time.sleep(max(0.0, (stale_at - dt.datetime.now(dt.timezone.utc)).total_seconds()))
    heir = _worker(env, queue, results, runs, "heir", "--once", "--heartbeat-timeout", "2")
    out, err = heir.communicate(timeout=600)
    assert heir.returncode == 0, err[-3000:]
    lines = out.splitlines()
    assert lines[0].startswith(f"worker heir: re-queued {DEMO_ID}: no heartbeat from worker doomed for "), lines
    assert lines[1] == f"worker heir: claimed {DEMO_ID}"
    rec = _record(queue)
    [results_file] = _results_files(results)
    assert (rec.status, rec.worker_id, rec.attempts, rec.results_path) == (FINISHED, "heir", 1, str(results_file))
    doc = load_results_file(results_file)
    assert check_results(doc, allow_demo=True) == [] and doc["evaluated_by"] == "maintainers' worker heir"
    # The resumed run kept the batches written before the kill and made the same images.
    assert all((images / p.name).is_dir() for p in written)
    assert _png_hashes(runs / DEMO_ID) == _png_hashes(concurrent_run.runs / DEMO_ID)


def test_two_processes_under_accelerate_share_one_request(concurrent_run, tmp_path):
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    if accelerate is None:
        pytest.skip("accelerate is not installed")
    env = {**concurrent_run.env, "CUDA_VISIBLE_DEVICES": ""}  # two CPU processes joined with gloo
    queue, results, runs = tmp_path / "q", tmp_path / "r", tmp_path / "runs"
    _request_demo(env, queue)
    # One thread per process, as the reference run had (CPU kernels round by thread count).
    launcher = [accelerate, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "0",
                "--num_cpu_threads_per_process", "1"]
    proc = subprocess.run([*launcher, "-m", "benchmark.cli", "worker", "--requests-folder", str(queue),
                           "--results-folder", str(results), "--runs-dir", str(runs), "--worker-id", "multi",
                           "--once", *AUDIT_ARGS], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count(f"worker multi: claimed {DEMO_ID}") == 1  # only the main process talks to the queue
    from benchmark.contract.run_folder import read_manifest

    assert set(read_manifest(runs / DEMO_ID)["rank"]) == {0, 1}  # both processes generated
    rec = _record(queue)
    [results_file] = _results_files(results)
    assert (rec.status, rec.worker_id, rec.results_path) == (FINISHED, "multi", str(results_file))
    assert check_results(load_results_file(results_file), allow_demo=True) == []
    # Same images as one process (batch folders differ with the shards: compare per probe file).
    by_name = lambda hashes: {k.rsplit("/", 1)[1]: v for k, v in hashes.items()}  # noqa: E731
    assert by_name(_png_hashes(runs / DEMO_ID)) == by_name(_png_hashes(concurrent_run.runs / DEMO_ID))


def test_worker_loop_under_accelerate_asks_for_once(queue, tmp_path, monkeypatch):
    import submissions.worker as worker
    from submissions.worker import work_forever

    # process_state as the worker calls it (imported at the top of submissions/worker.py)
    monkeypatch.setattr(worker, "process_state", lambda: SimpleNamespace(num_processes=2, is_main_process=True))
    with pytest.raises(ValueError, match="under accelerate launch a worker audits one request per launch: add "
                                         "--once"):
        work_forever(queue, _opts(tmp_path, []), poll=0.1)
    assert _record(queue.root).status == PENDING


# --------------------------------------------------------------------------- in process, audit replaced


@pytest.fixture
def queue(tmp_path):
    store = LocalRequestStore(tmp_path / "q")
    rec = RequestRecord(model_id="builtin:tiny-sd", revision="builtin-v1", commit="builtin-v1", submitter="tester",
                        submitted_at=utc_iso_ms(), demo=True)
    store.write(rec.path, rec, expected=None, message="test")
    return store


def _opts(tmp_path, lines, **kw):
    return WorkerOptions(worker_id=kw.pop("worker_id", "w"), runs_dir=tmp_path / "runs",
                         results_folder=tmp_path / "r", log=lines.append, **kw)


def _copy_audit(tiny_audit, during=None):
    """An audit that copies the real tiny audit into the request's run folder."""
    def audit(record, opts):
        if during:
            during(record, opts)
        run_dir = opts.runs_dir / record.request_id
        shutil.copytree(tiny_audit, run_dir)
        return SimpleNamespace(results_path=run_dir / "results.json", main_process=True)
    return audit


def _set(store, **changes):
    stored = store.read(DEMO_PATH)
    store.write(DEMO_PATH, stored.record.replace(**changes), expected=stored.version, message="test")


def _ago(seconds):
    t = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def test_requeue_rules(queue, tmp_path, tiny_audit):
    lines = []
    opts = _opts(tmp_path, lines, heartbeat_timeout=2)
    # Fresh heartbeat: left alone.
    _set(queue, status=RUNNING, worker_id="busy", started_at=_ago(5), heartbeat_at=_ago(0.5), heartbeat_timeout_s=2.0)
    assert work_once(queue, opts, audit=_copy_audit(tiny_audit)).status == "none"
    # Stale for this worker's 2 s, but its worker promised a heartbeat every 60 s: left alone.
    _set(queue, heartbeat_at=_ago(10), heartbeat_timeout_s=60.0)
    assert work_once(queue, opts, audit=_copy_audit(tiny_audit)).status == "none"
    assert _record(queue.root).status == RUNNING
    # Stale for both: re-queued, then claimed and finished by this worker.
    _set(queue, heartbeat_timeout_s=2.0)
    outcome = work_once(queue, opts, audit=_copy_audit(tiny_audit))
    assert outcome.status == "finished"
    assert re.fullmatch(rf"worker w: re-queued {DEMO_ID}: no heartbeat from worker busy for 1\d\.\d s "
                        r"\(attempt 1 of 3 abandoned\)", lines[-3]), lines
    assert (outcome.record.status, outcome.record.attempts, outcome.record.worker_id) == (FINISHED, 1, "w")
    # the results folder's contents table was rebuilt with the new file (the leaderboard reads it)
    from submissions.leaderboard import contents

    [row] = contents.read_contents(tmp_path / "r" / contents.CONTENTS_FILE).values()
    assert row.document["request_id"] == DEMO_ID and row.problems == ()


def test_too_many_abandoned_runs_fail_the_request(queue, tmp_path):
    lines = []
    _set(queue, status=RUNNING, worker_id="gone", started_at=_ago(9), heartbeat_at=_ago(9), attempts=2)
    assert work_once(queue, _opts(tmp_path, lines, heartbeat_timeout=2), audit=None).status == "none"
    rec = _record(queue.root)
    assert rec.status == FAILED and rec.attempts == 3
    assert re.fullmatch(r"abandoned 3 times \(the last by worker gone: no heartbeat for (9|1\d) s\); "
                        r"--max-attempts is 3", rec.failure_reason), rec.failure_reason


def test_a_failing_audit_fails_with_one_line(queue, tmp_path, capsys):
    def crash(record, opts):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nTraceback (most recent call last): ...")

    lines = []
    outcome = work_once(queue, _opts(tmp_path, lines), audit=crash)
    assert outcome.status == "failed"
    rec = _record(queue.root)
    assert rec.status == FAILED and rec.failure_reason == "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert lines[-1] == f"worker w: {DEMO_ID} FAILED: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert "Traceback" in capsys.readouterr().err  # the worker's log keeps the traceback
    assert not (tmp_path / "r").exists()


def test_invalid_results_fail_and_are_not_posted(queue, tmp_path, tiny_audit):
    def break_a_score(record, opts):
        run_dir = opts.runs_dir / record.request_id
        shutil.copytree(tiny_audit, run_dir)
        doc = read_results(run_dir)
        doc["scores"][0]["value"] = 7.0
        (run_dir / "results.json").write_text(json.dumps(doc))
        return SimpleNamespace(results_path=run_dir / "results.json", main_process=True)

    assert work_once(queue, _opts(tmp_path, []), audit=break_a_score).status == "failed"
    reason = _record(queue.root).failure_reason
    assert reason.startswith("the results do not validate: scores/0/value: ") and "= 7 is outside its range" in reason
    assert not (tmp_path / "r").exists()


def test_a_claim_taken_over_posts_nothing(queue, tmp_path, tiny_audit):
    def taken_over(record, opts):  # another worker re-queued and claimed it meanwhile
        _set(queue, worker_id="thief", attempts=1, started_at=utc_iso_ms(), heartbeat_at=utc_iso_ms())

    lines = []
    outcome = work_once(queue, _opts(tmp_path, lines), audit=_copy_audit(tiny_audit, during=taken_over))
    assert outcome.status == "lost"
    assert lines[-1].startswith(f"worker w: gave up {DEMO_ID}: ") and lines[-1].endswith("; nothing posted")
    rec = _record(queue.root)
    assert (rec.status, rec.worker_id) == (RUNNING, "thief")
    assert not (tmp_path / "r").exists()


def test_interrupted_worker_hands_the_request_back(queue, tmp_path):
    def interrupted(record, opts):
        raise KeyboardInterrupt

    lines = []
    with pytest.raises(KeyboardInterrupt):
        work_once(queue, _opts(tmp_path, lines), audit=interrupted)
    rec = _record(queue.root)
    assert (rec.status, rec.worker_id, rec.attempts) == (PENDING, None, 0)
    assert lines[-1] == f"worker w: stopped; {DEMO_ID} is PENDING again"


def test_heartbeat_thread_refreshes_the_record(queue, tmp_path, tiny_audit):
    seen = []

    def slow(record, opts):
        first = _record(queue.root).heartbeat_at
        deadline = time.monotonic() + 20
        while _record(queue.root).heartbeat_at == first and time.monotonic() < deadline:
            time.sleep(0.05)
        seen.append((first, _record(queue.root).heartbeat_at))

    outcome = work_once(queue, _opts(tmp_path, [], heartbeat_timeout=0.8), audit=_copy_audit(tiny_audit, during=slow))
    assert outcome.status == "finished"
    [(first, later)] = seen
    assert parse_utc(later) > parse_utc(first)


def test_worker_loop_says_idle_once_and_outlasts_an_unreachable_hub(tmp_path, monkeypatch):
    from benchmark.hub.access import HubError
    from submissions import worker as worker_module

    class Flaky(LocalRequestStore):
        calls = 0

        def snapshot(self):
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise HubError("cannot read requests from org/requests: no connection to the Hugging Face Hub")
            return super().snapshot()

    class Stop(Exception):
        pass

    naps = []

    def nap(seconds):
        naps.append(seconds)
        if len(naps) == 4:
            raise Stop

    monkeypatch.setattr(worker_module, "time", SimpleNamespace(sleep=nap))
    lines = []
    with pytest.raises(Stop):
        worker_module.work_forever(Flaky(tmp_path / "q"), _opts(tmp_path, lines), poll=7)
    assert naps == [7, 7, 7, 7]
    assert lines == ["worker w: cannot read requests from org/requests: no connection to the Hugging Face Hub; "
                     "trying again in 7 s", "worker w: no pending request"]  # idle said once, not every round


def test_worker_options_are_checked(tmp_path):
    for kw, message in [({"worker_id": "bad id"}, "worker id must be"),
                        ({"results_folder": None}, "exactly one of --results"),
                        ({"heartbeat_timeout": 0}, "--heartbeat-timeout must be a number of seconds above 0"),
                        ({"heartbeat_timeout": 1e300}, r"at most 604800 \(a week\), got 1e\+300"),
                        ({"heartbeat_timeout": float("nan")}, "--heartbeat-timeout must be"),
                        ({"max_attempts": 0}, "--max-attempts must be from 1 to 100"),
                        ({"max_attempts": 10**9}, "--max-attempts must be from 1 to 100"),
                        ({"images_repo": "noslash"}, "--images must look like ORG/NAME"),
                        ({"results_folder": "/proc/x"}, "--results-folder: cannot create /proc/x"),
                        ({"runs_dir": "/proc/runs"}, "--runs-dir: cannot create /proc/runs")]:
        args = {"worker_id": "w", "runs_dir": tmp_path, "results_folder": tmp_path, **kw}
        with pytest.raises(ValueError, match=message):
            WorkerOptions(**args)


@pytest.mark.parametrize("results", ["/proc/x", "{q}/../run/results"])
def test_an_unwritable_results_folder_is_refused_before_any_claim(tmp_path, capsys, results):
    """Issue 41: the worker claimed, audited, printed a traceback and marked the request FAILED."""
    from benchmark.cli import main

    queue, run = tmp_path / "q", tmp_path / "run"
    run.mkdir()
    (run / "run_config.json").write_text("{}")
    assert main(["request", "builtin:tiny-sd", "--demo", "--to-folder", str(queue), "--submitter", "t"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["worker", "--requests-folder", str(queue), "--results-folder", results.format(q=queue), "--once"])
    assert done.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--results-folder" in err[0], err
    assert _record(queue).status == PENDING

"""The maintainers' worker: takes requests off the queue, audits them, posts the results.

One round (:func:`work_once`):

1. re-queue every RUNNING request whose heartbeat is older than its timeout (its worker
   died): PENDING with ``attempts`` + 1, or FAILED once ``attempts`` reaches the maximum;
2. claim the oldest PENDING request: a conditional write of RUNNING with this worker's id
   and a heartbeat (:mod:`submissions.request_store`); when another worker's write lands
   first, take the next one;
3. keep the claim alive: a background thread rewrites ``heartbeat_at`` every quarter of
   the timeout, and stops the results from being posted if the claim was lost;
4. run the audit into ``<runs-dir>/<request id>/`` (a rerun after a crash resumes that
   folder), add ``evaluated_by`` and ``request_id`` to its results, validate them, post them
   with ``t2ibench submit``'s own functions (a pull request on the Hub results dataset, or
   the local results folder) and the images if asked;
5. mark the request FINISHED with the results' path, or FAILED with a one-line reason.

Under ``accelerate launch`` the main process talks to the queue and tells the others which
request to generate (they shard its generation as ``t2ibench run`` does, then leave); such a
launch serves one request (``--once``), relaunched in a loop.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from benchmark.contract.atomic import write_bytes_atomic
from benchmark.hub.access import HubError
from benchmark.contract.results import dumps
from benchmark.runner.batch_size import AUTO
from benchmark.runner.generate import process_state
from benchmark.runner.pipeline import run_audit
from submissions import request_store
from submissions.request_store import Conflict, RequestStore, StoredRecord, retry_delays
from submissions.requests import (
    FAILED,
    FINISHED,
    PENDING,
    RUNNING,
    WORKER_PREFIX,
    InvalidRequest,
    RequestRecord,
    one_line,
    record_from_json,
    seconds_since,
    utc_now,
)
from submissions.leaderboard.contents import build_contents
from submissions.posted_results import find_posted_results, results_relpath
from submissions.submit import SubmissionRefused, plan_submission, send_submission
from submissions.validate import check_results, load_results_file

DEFAULT_HEARTBEAT_TIMEOUT_S = 1800.0
DEFAULT_MAX_ATTEMPTS = 3
CLAIM_TRIES = 3  # refused claims of one request in one round while it stays PENDING
MAX_WRITE_TRIES = 20  # conditional writes of one update before giving up (a very busy Hub dataset)
WORKER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
# Tests set this to a point name below to have the worker SIGKILL itself there (tests/test_worker_kill.py).
KILL_AT_ENV = "T2IBENCH_WORKER_KILL_AT"
KILL_POINTS = ("claimed", "audited", "provenance_added", "posted")


def kill_point(name: str) -> None:
    """Die by SIGKILL at ``name`` when the test hook asks for it: proves every point between the
    claim and FINISHED can be resumed without a second results file."""
    if os.environ.get(KILL_AT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


class LostClaim(RuntimeError):
    """The request is no longer this worker's (re-queued by another worker after a missed heartbeat)."""


class AuditRefused(RuntimeError):
    """The audit ran but its results are not valid: the request fails with this one line."""


@dataclass
class WorkerOptions:
    worker_id: str
    runs_dir: Path
    results_repo: str | None = None
    results_folder: Path | None = None
    images_repo: str | None = None  # ORG/NAME: each request's images go to ORG/NAME-<model>-<commit>
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT_S
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    suites: list[str] | None = None  # None: every suite of the probe set
    probes: str | None = None  # the probe set every request is audited on: None (built in), a folder, a Hub ID
    probes_revision: str | None = None
    limit_per_suite: int | None = None
    batch_size: int | str | None = None  # None: auto, as `t2ibench run`
    device: str | None = None
    compile: bool | None = None  # None: the runner's default (on on CUDA); False: --no-compile
    offload: str | None = None  # None: auto (offload only what does not fit the GPU)
    n_resamples: int = 1000
    progress: bool = True
    token: str | None = None
    log: Callable[[str], None] = field(default=lambda line: print(line, flush=True))

    def __post_init__(self):
        if not isinstance(self.worker_id, str) or not WORKER_ID.match(self.worker_id):
            raise ValueError(f"worker id must be 1 to 64 letters, digits, '.', '_', ':' or '-', got {self.worker_id!r}")
        if (self.results_repo is None) == (self.results_folder is None):
            raise ValueError("give exactly one of --results ORG/RESULTS or --results-folder DIR")
        if not self.heartbeat_timeout > 0:
            raise ValueError(f"--heartbeat-timeout must be a positive number of seconds, got {self.heartbeat_timeout}")
        if self.max_attempts < 1:
            raise ValueError(f"--max-attempts must be at least 1, got {self.max_attempts}")
        if self.images_repo is not None and (self.images_repo.count("/") != 1 or not all(self.images_repo.split("/"))):
            raise ValueError(f"--images must look like ORG/NAME, got {self.images_repo!r}")
        self.runs_dir = Path(self.runs_dir)
        if self.results_folder is not None:
            self.results_folder = Path(self.results_folder)

    @property
    def evaluated_by(self) -> str:
        return f"{WORKER_PREFIX}{self.worker_id}"

    @property
    def heartbeat_interval(self) -> float:
        return max(0.2, self.heartbeat_timeout / 4)

    def say(self, text: str) -> None:
        self.log(f"worker {self.worker_id}: {text}")


def default_worker_id() -> str:
    import os
    import socket

    host = re.sub(r"[^A-Za-z0-9._-]+", "-", socket.gethostname()).strip(".-")[:40] or "host"
    return f"{host}-{os.getpid()}"


# --------------------------------------------------------------------------- conditional updates


def update_request(store: RequestStore, stored: StoredRecord, change: Callable[[RequestRecord], RequestRecord], *,
                   message: str, still_ours: Callable[[RequestRecord], bool]) -> StoredRecord:
    """Write ``change(record)``; after a Conflict, read the request again and retry while
    ``still_ours`` holds (LostClaim when it does not)."""
    delays = retry_delays()
    for _ in range(MAX_WRITE_TRIES):
        if not still_ours(stored.record):
            raise LostClaim(f"{stored.record.request_id} is {stored.record.status} "
                            f"(worker {stored.record.worker_id})")
        try:
            return store.write(stored.path, change(stored.record), expected=stored.version, message=message)
        except Conflict:
            stored = _read_newer(store, stored, delays)
    raise Conflict(f"{stored.path}: refused {MAX_WRITE_TRIES} times, others keep writing")


def _read_newer(store: RequestStore, stored: StoredRecord, delays) -> StoredRecord:
    """The request as it is after a refused write; a Hub that still shows the old head is read
    again after a pause."""
    while True:
        try:
            fresh = store.read(stored.path)
        except InvalidRequest as exc:  # someone overwrote it with a file that is not a request
            raise LostClaim(f"{stored.path} is not a valid request any more ({exc})") from None
        if fresh is None:
            raise LostClaim(f"{stored.path} is gone")
        if fresh.version != stored.version:
            return fresh
        delay = next(delays, None)
        if delay is None:
            raise Conflict(f"{stored.path}: the store still shows the version that was refused")
        request_store.sleep(delay)


def owned_by(claim: RequestRecord) -> Callable[[RequestRecord], bool]:
    """True while a record is still the claim ``claim`` (same worker, same attempt)."""
    return lambda r: (r.status == RUNNING and r.worker_id == claim.worker_id and r.attempts == claim.attempts
                      and r.started_at == claim.started_at)


# --------------------------------------------------------------------------- re-queue and claim


def stale_for(record: RequestRecord, timeout: float) -> float | None:
    """Seconds since the heartbeat when it is older than the timeout (the larger of this
    worker's and the one its worker announced), else None."""
    if record.status != RUNNING or not record.heartbeat_at:
        return None
    age = seconds_since(record.heartbeat_at)
    limit = max(timeout, record.heartbeat_timeout_s or 0)
    return age if age > limit else None


def requeue_stale(store: RequestStore, opts: WorkerOptions) -> list[str]:
    """Re-queue (or fail) every RUNNING request whose worker stopped sending heartbeats."""
    done = []
    snapshot = store.snapshot()
    for stored in snapshot.by_status(RUNNING):
        rec = stored.record
        age = stale_for(rec, opts.heartbeat_timeout)
        if age is None:
            continue
        attempts = rec.attempts + 1
        if attempts >= opts.max_attempts:
            new = rec.replace(status=FAILED, attempts=attempts, finished_at=utc_now(), heartbeat_at=None,
                              failure_reason=f"abandoned {attempts} times (the last by worker {rec.worker_id}: no "
                                             f"heartbeat for {age:.0f} s); --max-attempts is {opts.max_attempts}")
            what = f"failed {rec.request_id}: abandoned {attempts} times"
        else:
            new = rec.replace(status=PENDING, attempts=attempts, worker_id=None, started_at=None, heartbeat_at=None,
                              heartbeat_timeout_s=None)
            what = (f"re-queued {rec.request_id}: no heartbeat from worker {rec.worker_id} for {age:.1f} s "
                    f"(attempt {attempts} of {opts.max_attempts} abandoned)")
        try:
            store.write(stored.path, new, expected=store.expected_for(snapshot, stored.path),
                        message=f"Re-queue {rec.request_id} (worker {rec.worker_id} stopped)")
        except Conflict:
            opts.say(f"{rec.request_id} changed while re-queueing it; left to the next round")
        else:
            opts.say(what)
            done.append(rec.request_id)
        snapshot = store.snapshot()  # a Hub write moved the head: every later write needs the new one
    return done


def claim_next(store: RequestStore, opts: WorkerOptions) -> StoredRecord | None:
    """Claim the oldest PENDING request; when another worker's claim lands first, the next one.

    A refused write whose request is still PENDING afterwards (an unrelated commit moved the
    Hub dataset's head) is tried again, up to CLAIM_TRIES times per request.
    """
    snapshot = store.snapshot()
    for path, problem in snapshot.invalid:
        opts.say(f"skipping {path}: not a valid request ({problem})")
    tries: dict[str, int] = {}
    while True:
        pending = [s for s in snapshot.by_status(PENDING) if tries.get(s.path, 0) < CLAIM_TRIES]
        if not pending:
            return None
        target = pending[0]
        tries[target.path] = tries.get(target.path, 0) + 1
        now = utc_now()
        claim = target.record.replace(status=RUNNING, worker_id=opts.worker_id, started_at=now, heartbeat_at=now,
                                      heartbeat_timeout_s=float(opts.heartbeat_timeout), failure_reason=None)
        based_on = store.expected_for(snapshot, target.path)
        try:
            stored = store.write(target.path, claim, expected=based_on,
                                 message=f"Claim {claim.request_id} ({opts.evaluated_by})")
        except Conflict:
            snapshot = store.snapshot()
            fresh = snapshot.get(target.path)
            if fresh is None or fresh.record.status != PENDING:
                opts.say(f"lost the claim on {claim.request_id} to another worker")
            elif store.expected_for(snapshot, target.path) == based_on:
                request_store.sleep(0.5)  # the Hub still shows the refused head: give it a moment
            continue
        opts.say(f"claimed {claim.request_id}")
        kill_point("claimed")
        return stored


# --------------------------------------------------------------------------- heartbeat


class Heartbeat:
    """Rewrites ``heartbeat_at`` every ``opts.heartbeat_interval`` seconds on a daemon thread."""

    def __init__(self, store: RequestStore, stored: StoredRecord, opts: WorkerOptions):
        self.store, self.opts = store, opts
        self.current = stored
        self.still_ours = owned_by(stored.record)
        self.lost: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="t2ibench-heartbeat", daemon=True)

    def start(self) -> "Heartbeat":
        self._thread.start()
        return self

    def beat(self) -> StoredRecord:
        with self._lock:
            self.current = update_request(self.store, self.current, lambda r: r.replace(heartbeat_at=utc_now()),
                                          message=f"Heartbeat {self.current.record.request_id}",
                                          still_ours=self.still_ours)
            return self.current

    def _run(self) -> None:
        while not self._stop.wait(self.opts.heartbeat_interval):
            try:
                self.beat()
            except LostClaim as exc:
                self.lost = str(exc)
                self.opts.say(f"lost {self.current.record.request_id}: {exc}")
                return
            except Exception as exc:  # the Hub unreachable for a moment: try again at the next beat
                self.opts.say(f"heartbeat failed ({one_line(exc)}); retrying")

    def stop(self) -> StoredRecord:
        self._stop.set()
        self._thread.join()
        return self.current


# --------------------------------------------------------------------------- the audit and its results


def run_dir_of(record: RequestRecord, opts: WorkerOptions) -> Path:
    return opts.runs_dir / record.request_id


def run_request_audit(record: RequestRecord, opts: WorkerOptions):
    """``t2ibench run`` with the request's model, commit, dtype and settings (keywords only), at
    the worker's speed options (batch size, compile, offload: the same as `t2ibench run`'s)."""
    return run_audit(
        run_dir=run_dir_of(record, opts),
        model_spec=record.model_id,
        suites=list(opts.suites) if opts.suites else None,
        probes=opts.probes,
        probes_revision=opts.probes_revision,
        limit_per_suite=opts.limit_per_suite,
        batch_size=opts.batch_size or AUTO,
        revision=None if record.demo else record.commit,
        device=opts.device,
        dtype=record.dtype,
        overrides=dict(record.settings),
        n_resamples=opts.n_resamples,
        progress=opts.progress,
        compile=opts.compile,
        offload=opts.offload,
    )


def add_provenance(results_path: Path, record: RequestRecord, opts: WorkerOptions) -> dict:
    """Mark the run's results as evaluated by this worker for this request, validate them and
    write them back (AuditRefused, one line, when they do not validate)."""
    doc = load_results_file(results_path)
    doc["evaluated_by"] = opts.evaluated_by
    doc["request_id"] = record.request_id
    problems = check_results(doc, allow_demo=record.demo)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise AuditRefused(f"the results do not validate: {problems[0]}{more}")
    write_bytes_atomic(results_path, dumps(doc).encode("utf-8"))
    return doc


def images_repo_for(record: RequestRecord, prefix: str) -> str:
    """``ORG/NAME-<model>-<commit 8>``: one images dataset per request (a valid Hub name)."""
    org, name = prefix.split("/")
    model = record.model_id.replace("builtin:", "builtin/").replace("/", "-")
    tail = f"-{record.commit[:8]}"
    slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{name}-{model}").strip("-")
    return f"{org}/{slug[:96 - len(tail)].rstrip('-')}{tail}"


def post_results(record: RequestRecord, opts: WorkerOptions) -> tuple[str, str | None]:
    """Post the run's results (and images) as ``t2ibench submit`` does, under the request's own
    name (:func:`submissions.posted_results.results_relpath`); (results path, PR URL)."""
    images = images_repo_for(record, opts.images_repo) if opts.images_repo else None
    try:
        plan = plan_submission(run_dir_of(record, opts), results_repo=opts.results_repo, images_repo=images,
                               demo=record.demo, to_folder=opts.results_folder)
    except SubmissionRefused as exc:
        raise AuditRefused(f"the results do not validate: {exc.problems[0]}") from None
    plan.relpath = results_relpath(record)  # not the time stamp: a re-run finds it, two requests never collide
    outcome = send_submission(plan, token=opts.token)
    if opts.results_folder is not None:
        build_contents(opts.results_folder)  # incremental: only the new file is read (the leaderboard reads the table)
        return str(outcome.local_path), outcome.pr_url
    return plan.results_file.path_in_repo, outcome.pr_url


# --------------------------------------------------------------------------- one request


def audit_and_post(rec: RequestRecord, opts: WorkerOptions, heartbeat: "Heartbeat",
                   audit: Callable) -> tuple[str, str | None]:
    """Results path and PR URL of the request: those an earlier attempt posted before it was
    killed (found under the request's own name: never audited or posted twice), or a new audit's."""
    posted = find_posted_results(rec, opts)
    if posted is not None:
        opts.say(f"{rec.request_id}: an earlier attempt posted its results ({posted[1] or posted[0]}); "
                 "finishing without auditing again")
        return posted
    outcome = audit(rec, opts)
    if heartbeat.lost:
        raise LostClaim(heartbeat.lost)
    kill_point("audited")
    add_provenance(Path(outcome.results_path), rec, opts)
    kill_point("provenance_added")
    heartbeat.beat()  # proves the claim still holds just before posting
    posted = post_results(rec, opts)
    kill_point("posted")
    return posted



@dataclass
class WorkOutcome:
    status: str  # "none", "finished", "failed", "lost"
    request_id: str | None = None
    record: RequestRecord | None = None


def failure_reason(exc: BaseException) -> str:
    """One line for the record: the exception's type and first line, never a traceback."""
    if isinstance(exc, AuditRefused):
        return one_line(exc)
    text = one_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def process(store: RequestStore, stored: StoredRecord, opts: WorkerOptions, *,
            audit: Callable = run_request_audit) -> WorkOutcome:
    """Audit a claimed request and record how it ended."""
    rec = stored.record
    heartbeat = Heartbeat(store, stored, opts).start()
    reason = results_path = results_url = None
    try:
        try:
            results_path, results_url = audit_and_post(rec, opts, heartbeat, audit)
        except (LostClaim, KeyboardInterrupt):
            raise
        except Exception as exc:
            reason = failure_reason(exc)
            traceback.print_exc(file=sys.stderr)  # for the worker's log; the record gets one line
    except LostClaim as exc:
        heartbeat.stop()
        opts.say(f"gave up {rec.request_id}: {exc}; nothing posted")
        return WorkOutcome("lost", rec.request_id)
    except KeyboardInterrupt:
        current = heartbeat.stop()
        try:  # hand it back for another worker, without counting an abandoned attempt
            update_request(store, current, lambda r: r.replace(status=PENDING, worker_id=None, started_at=None,
                                                               heartbeat_at=None, heartbeat_timeout_s=None),
                           message=f"Release {rec.request_id} (worker stopped)", still_ours=owned_by(rec))
            opts.say(f"stopped; {rec.request_id} is PENDING again")
        except Exception as exc:
            opts.say(f"stopped; could not release {rec.request_id} ({one_line(exc)})")
        raise
    current = heartbeat.stop()
    now = utc_now()
    if reason is None:
        final_fields = {"status": FINISHED, "results_path": results_path, "results_url": results_url,
                        "failure_reason": None}
    else:
        final_fields = {"status": FAILED, "failure_reason": reason}

    def change(r: RequestRecord) -> RequestRecord:
        return r.replace(finished_at=now, heartbeat_at=now, **final_fields)
    try:
        final = update_request(store, current, change, message=f"{'Finished' if reason is None else 'Failed'} "
                               f"{rec.request_id}", still_ours=owned_by(rec))
    except LostClaim as exc:
        opts.say(f"{rec.request_id} was taken over before it could be marked done ({exc})")
        return WorkOutcome("lost", rec.request_id)
    if reason is None:
        opts.say(f"{rec.request_id} FINISHED: results at {results_url or results_path}")
        return WorkOutcome("finished", rec.request_id, final.record)
    opts.say(f"{rec.request_id} FAILED: {reason}")
    return WorkOutcome("failed", rec.request_id, final.record)


# --------------------------------------------------------------------------- rounds


def _share(state, value):
    """``value`` of the main process, on every process (accelerate launch), as JSON-ready data."""
    if state.num_processes <= 1:
        return value
    from accelerate.utils import broadcast_object_list

    box = [value]
    broadcast_object_list(box, from_process=0)
    return box[0]


def work_once(store: RequestStore, opts: WorkerOptions, *, audit: Callable = run_request_audit,
              say_idle: bool = True) -> WorkOutcome:
    """One round: re-queue stale requests, claim one, audit it, record the outcome."""
    state = process_state()
    claimed = None
    if state.is_main_process:
        requeue_stale(store, opts)
        claimed = claim_next(store, opts)
    shared = _share(state, None if claimed is None else claimed.record.to_json())
    if shared is None:
        if state.is_main_process and say_idle:
            opts.say("no pending request")
        return WorkOutcome("none")
    if not state.is_main_process:  # generate this process's shard; the main process does the rest
        audit(record_from_json(shared), opts)
        return WorkOutcome("helper", shared.get("request_id"))
    return process(store, claimed, opts, audit=audit)


def work_forever(store: RequestStore, opts: WorkerOptions, *, poll: float = 60.0,
                 audit: Callable = run_request_audit) -> None:
    """Rounds until interrupted; sleeps ``poll`` seconds after a round that found nothing, or
    that could not reach the Hub (said once, not every round)."""
    if process_state().num_processes > 1:
        # The helper processes leave after generating their shard (as under `t2ibench run`), so
        # a launch serves one request; waiting in a collective through a long annotation would
        # run into the process group's timeout.
        raise ValueError("under accelerate launch a worker audits one request per launch: add --once and "
                         "relaunch in a loop (docs/queue.md)")
    idle = False
    while True:
        try:
            outcome = work_once(store, opts, audit=audit, say_idle=not idle)
        except HubError as exc:  # the Hub unreachable for a while: keep trying
            opts.say(f"{exc}; trying again in {poll:g} s")
            time.sleep(poll)
            continue
        idle = outcome.status == "none"
        if idle:
            time.sleep(poll)

"""How a worker holds a request: conditional updates that retry while the request is still its own
(:func:`update_request`), re-queueing requests whose worker died (:func:`requeue_stale`), claiming
the oldest PENDING one (:func:`claim_next`) and the heartbeat that keeps the claim alive
(:class:`Heartbeat`).
"""

from __future__ import annotations

import math
import threading
from typing import Callable

from benchmark.contract.times import utc_iso_ms
from submissions import request_store
from submissions.request_store import Conflict, RequestStore, StoredRecord, retry_delays
from submissions.requests import (
    FAILED,
    PENDING,
    RUNNING,
    InvalidRequest,
    RequestRecord,
    one_line,
    seconds_since,
)
from submissions.worker_options import (
    CLAIM_TRIES, MAX_HEARTBEAT_S, MAX_WRITE_TRIES, LostClaim, WorkerOptions, kill_point,
)


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


def heartbeat_limit(record: RequestRecord, timeout: float) -> float:
    """Seconds without a heartbeat after which ``record`` is re-queued: the larger of this worker's
    ``timeout`` and the one its worker announced (``heartbeat_timeout_s``), never more than
    :data:`MAX_HEARTBEAT_S`: a record is written by others, and an announced ``1e300`` kept a
    request RUNNING for ever."""
    announced = record.heartbeat_timeout_s or 0.0
    return min(max(timeout, announced), MAX_HEARTBEAT_S)


def stale_for(record: RequestRecord, timeout: float) -> float | None:
    """Seconds since the heartbeat when it is further from now than :func:`heartbeat_limit`, else
    None. A heartbeat that far in the future is stale too (its clock or its record is wrong: a
    heartbeat dated 2100 would hold the request until then); it counts as ``inf`` seconds."""
    if record.status != RUNNING or not record.heartbeat_at:
        return None
    age = seconds_since(record.heartbeat_at)
    limit = heartbeat_limit(record, timeout)
    if age < -limit:
        return math.inf
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
        future = not math.isfinite(age)
        if attempts >= opts.max_attempts:
            silent = f"heartbeat_at {rec.heartbeat_at} in the future" if future else f"no heartbeat for {age:.0f} s"
            new = rec.replace(status=FAILED, attempts=attempts, finished_at=utc_iso_ms(), heartbeat_at=None,
                              failure_reason=f"abandoned {attempts} times (the last by worker {rec.worker_id}: "
                                             f"{silent}); --max-attempts is {opts.max_attempts}")
            what = f"failed {rec.request_id}: abandoned {attempts} times"
        else:
            new = rec.replace(status=PENDING, attempts=attempts, worker_id=None, started_at=None, heartbeat_at=None,
                              heartbeat_timeout_s=None)
            silent = (f"worker {rec.worker_id}'s heartbeat_at {rec.heartbeat_at} is in the future" if future
                      else f"no heartbeat from worker {rec.worker_id} for {age:.1f} s")
            what = f"re-queued {rec.request_id}: {silent} (attempt {attempts} of {opts.max_attempts} abandoned)"
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
        now = utc_iso_ms()
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
            self.current = update_request(self.store, self.current, lambda r: r.replace(heartbeat_at=utc_iso_ms()),
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

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

The rounds are here; the options in :mod:`submissions.worker_options`, steps 1 to 3 in
:mod:`submissions.worker_claims`, steps 4 and 5 in :mod:`submissions.worker_audit`.
"""

from __future__ import annotations

import time
from typing import Callable

from benchmark.hub.access import HubError
from benchmark.runner.processes import process_state
from submissions.request_store import RequestStore
from submissions.requests import record_from_json
from submissions.worker_audit import WorkOutcome, process, run_request_audit
from submissions.worker_claims import claim_next, requeue_stale
from submissions.worker_options import WorkerOptions, check_poll


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
    that could not reach the Hub (said once, not every round). ``poll``: 0.1 s to a day."""
    poll = check_poll(poll)
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

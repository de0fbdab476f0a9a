"""One claimed request, start to end: the audit (``t2ibench run`` with the request's model and
settings), ``evaluated_by`` and ``request_id`` added to its results, the results validated and
posted with ``t2ibench submit``'s own functions, and the request marked FINISHED or FAILED
(:func:`process`); results an earlier, killed attempt already posted are found and not posted twice.
"""

from __future__ import annotations

import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from benchmark.contract.atomic import write_bytes_atomic
from benchmark.contract.audit_request import AuditRequest, ProbeChoice, Runtime
from benchmark.contract.results import dumps
from benchmark.contract.times import utc_iso_ms
from benchmark.runner.batch_size import AUTO
from benchmark.runner.pipeline import run_audit
from submissions.request_store import RequestStore, StoredRecord
from submissions.requests import FAILED, FINISHED, PENDING, RequestRecord, one_line
from submissions.leaderboard.contents import build_contents
from submissions.posted_results import find_posted_results, results_relpath
from submissions.submit import SubmissionRefused, plan_submission, send_submission
from submissions.validate import check_results, load_results_file
from submissions.worker_claims import Heartbeat, owned_by, update_request
from submissions.worker_options import AuditRefused, LostClaim, WorkerOptions, kill_point


def run_dir_of(record: RequestRecord, opts: WorkerOptions) -> Path:
    return opts.runs_dir / record.request_id


def audit_request_for(record: RequestRecord, opts: WorkerOptions) -> AuditRequest:
    """The audit of a claimed request: ``t2ibench run`` with the request's model (at its commit,
    with its LoRAs, single file and base, quantization, LoRA trigger and --lora-unet-only:
    :meth:`RequestRecord.model_choice`), dtype and settings, over the worker's probes, at the
    worker's speed options (batch size, compile, offload: the same as `t2ibench run`'s)."""
    return AuditRequest(
        run_dir=run_dir_of(record, opts),
        model=record.model_choice(),
        probes=ProbeChoice(opts.probes, opts.probes_revision, opts.suites, opts.limit_per_suite),
        runtime=Runtime(device=opts.device, dtype=record.dtype, batch_size=opts.batch_size or AUTO,
                        compile=opts.compile, offload=opts.offload),
        n_resamples=opts.n_resamples, progress=opts.progress)


def run_request_audit(record: RequestRecord, opts: WorkerOptions):
    """Run the audit of a claimed request (:func:`audit_request_for`)."""
    return run_audit(audit_request_for(record, opts))


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
    """``ORG/NAME-<model>-<commit 8>[-lora-<hash>][-opts-<hash>]``: one images dataset per request
    (a valid Hub name)."""
    org, name = prefix.split("/")
    model = record.model_id.replace("builtin:", "builtin/").replace("/", "-")
    tail = f"-{record.commit[:8]}" + record.variant.replace("+", "-")
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
    now = utc_iso_ms()
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

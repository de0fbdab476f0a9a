"""Who evaluated a results file: the maintainers' workers (a request of the queue) or the
submitter (a self-reported pull request).

A results file counts as worker-evaluated only when it is referenced by a FINISHED request
of the requests store the leaderboard reads: it carries ``evaluated_by`` ("maintainers'
worker <id>") and ``request_id``, that request is FINISHED for this model, and its
``results_path`` names this very file. Without a requests store there is nothing to check
against, and every file is self-reported: writing the fields into a file proves nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any, Optional

from submissions.request_store import RequestStore
from submissions.requests import FINISHED, WORKER_PREFIX, RequestRecord

__all__ = ["PROVENANCE_WORKER", "PROVENANCE_SELF", "PROVENANCE_CHOICES", "finished_requests", "provenance",
           "filter_by_provenance"]

PROVENANCE_WORKER = "maintainers' worker"
PROVENANCE_SELF = "self-reported"
PROVENANCE_CHOICES = ("all", PROVENANCE_WORKER, PROVENANCE_SELF)


def finished_requests(store: Optional[RequestStore]) -> Optional[dict[str, RequestRecord]]:
    """FINISHED requests by request id (None without a store: then every file is self-reported)."""
    if store is None:
        return None
    return {s.record.request_id: s.record for s in store.snapshot().by_status(FINISHED)}


def _doc(item: Any) -> Mapping:
    """The results document of a leaderboard row (``.latest.doc``), a submission (``.doc``) or a dict."""
    item = getattr(item, "latest", item)
    doc = getattr(item, "doc", item)
    return doc if isinstance(doc, Mapping) else {}


def _source(item: Any) -> str | None:
    """Where the leaderboard read the file (a submission's ``source``), None for a bare document."""
    source = getattr(getattr(item, "latest", item), "source", None)
    return source if isinstance(source, str) else None


def references(record: RequestRecord, source: str) -> bool:
    """True when the request's ``results_path`` names the file read at ``source``: the same model
    folder and file name (the worker's path is under its results folder, or ``results/`` on the Hub)."""
    if not record.results_path:
        return False
    return PurePosixPath(record.results_path.replace("\\", "/")).parts[-2:] == PurePosixPath(source).parts[-2:]


def provenance(item: Any, finished: Optional[Mapping[str, RequestRecord]] = None) -> str:
    """``maintainers' worker`` or ``self-reported`` for a results document (or a row holding one).

    Worker-evaluated means a FINISHED request of the queue (:func:`finished_requests`) is this
    file's: the results carry ``evaluated_by`` and ``request_id``, that request is FINISHED for
    this model and its ``results_path`` names this file (for a bare document, which has no
    path, its worker wrote ``evaluated_by``). Without the queue (``finished`` None) nothing can
    be checked: self-reported.
    """
    doc = _doc(item)
    by, rid = doc.get("evaluated_by"), doc.get("request_id")
    if finished is None or not (isinstance(by, str) and by.startswith(WORKER_PREFIX) and isinstance(rid, str)):
        return PROVENANCE_SELF
    rec = finished.get(rid)
    model = doc.get("model") if isinstance(doc.get("model"), Mapping) else {}
    if rec is None or rec.audited_model_id != model.get("id"):
        return PROVENANCE_SELF
    source = _source(item)
    own = references(rec, source) if source is not None else by == f"{WORKER_PREFIX}{rec.worker_id}"
    return PROVENANCE_WORKER if own else PROVENANCE_SELF


def filter_by_provenance(rows: Iterable[Any], choice: str,
                         finished: Optional[Mapping[str, RequestRecord]] = None) -> list:
    """The rows whose provenance is ``choice`` (one of PROVENANCE_CHOICES; "all" keeps every row)."""
    if choice not in PROVENANCE_CHOICES:
        raise ValueError(f"provenance filter must be one of {', '.join(PROVENANCE_CHOICES)}, got {choice!r}")
    rows = list(rows)
    return rows if choice == "all" else [r for r in rows if provenance(r, finished) == choice]

"""Who evaluated a results file: the maintainers' workers (a request of the queue) or the
submitter (a self-reported pull request).

A results document counts as worker-evaluated when it carries ``evaluated_by`` ("maintainers'
worker <id>") and ``request_id``; given the queue's FINISHED requests, also only when that
request is FINISHED there, for this model, by that worker, so a self-reported file cannot
claim the label by adding the fields itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

from submissions.request_store import RequestStore
from submissions.requests import FINISHED, WORKER_PREFIX, RequestRecord

__all__ = ["PROVENANCE_WORKER", "PROVENANCE_SELF", "PROVENANCE_CHOICES", "finished_requests", "provenance",
           "filter_by_provenance"]

PROVENANCE_WORKER = "maintainers' worker"
PROVENANCE_SELF = "self-reported"
PROVENANCE_CHOICES = ("all", PROVENANCE_WORKER, PROVENANCE_SELF)


def finished_requests(store: Optional[RequestStore]) -> Optional[dict[str, RequestRecord]]:
    """FINISHED requests by request id (None without a store: provenance is then taken on trust)."""
    if store is None:
        return None
    return {s.record.request_id: s.record for s in store.snapshot().by_status(FINISHED)}


def _doc(item: Any) -> Mapping:
    """The results document of a leaderboard row (``.latest.doc``), a submission (``.doc``) or a dict."""
    item = getattr(item, "latest", item)
    doc = getattr(item, "doc", item)
    return doc if isinstance(doc, Mapping) else {}


def provenance(item: Any, finished: Optional[Mapping[str, RequestRecord]] = None) -> str:
    """``maintainers' worker`` or ``self-reported`` for a results document (or a row holding one).

    Worker-evaluated means the results carry ``evaluated_by`` and ``request_id``; given the
    queue's FINISHED requests (:func:`finished_requests`), also that this request is FINISHED
    there, for this model, by that worker, so a self-reported file cannot claim it.
    """
    doc = _doc(item)
    by, rid = doc.get("evaluated_by"), doc.get("request_id")
    if not (isinstance(by, str) and by.startswith(WORKER_PREFIX) and isinstance(rid, str)):
        return PROVENANCE_SELF
    if finished is None:
        return PROVENANCE_WORKER
    rec = finished.get(rid)
    model = doc.get("model") if isinstance(doc.get("model"), Mapping) else {}
    if rec is None or rec.model_id != model.get("id") or by != f"{WORKER_PREFIX}{rec.worker_id}":
        return PROVENANCE_SELF
    return PROVENANCE_WORKER


def filter_by_provenance(rows: Iterable[Any], choice: str,
                         finished: Optional[Mapping[str, RequestRecord]] = None) -> list:
    """The rows whose provenance is ``choice`` (one of PROVENANCE_CHOICES; "all" keeps every row)."""
    if choice not in PROVENANCE_CHOICES:
        raise ValueError(f"provenance filter must be one of {', '.join(PROVENANCE_CHOICES)}, got {choice!r}")
    rows = list(rows)
    return rows if choice == "all" else [r for r in rows if provenance(r, finished) == choice]

"""The columns of the contents table (``DIR/contents/contents.parquet``) and how one results
document becomes one flat, typed row of it.

One row per results file (the maintainers' rule makes that one per model id + revision + probe
set + reference; files that share a key are rows too, and the app lists them as conflicts).
Column names are stable: they are listed in ``docs/leaderboard.md`` and in the dataset card
``contents/README.md`` that :func:`card_text` writes beside the table.

- file columns: ``source``, ``sha256``, ``size``, ``mtime_ns``, ``problems``, ``checked_with``,
  ``run_folder``;
- row columns: ``model_id``, ``revision``, ``probes``, ``references``, ``annotators``,
  ``images`` (generated / supplied / api), ``evaluation`` (evaluated / self-reported, as the
  file claims it: the app checks the claim against the requests queue), ``demo``, ``family``,
  ``created``, ``package_version``, ``suites``;
- per score NAME of :data:`benchmark.scores.metadata.SCORE_METADATA` (the entry the leaderboard
  shows, :func:`benchmark.present.text.entry_rank`): ``NAME`` (value, null when undefined),
  ``NAME_low``, ``NAME_high`` (its interval), ``NAME_n``, ``NAME_estimator``;
- ``board``: JSON text of what the leaderboard shows of the file (model, provenance, suites, the
  headline score entries); for a file with problems the whole document, so it can be checked
  again without reading the file.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import pyarrow as pa

from benchmark.contract.image_provenance import provenance_kind
from benchmark.contract.results import builtin_annotators
from benchmark.contract.times import utc_time_or_none
from benchmark.present.text import entry_rank, is_number, markdown_table
from benchmark.scores.metadata import SCORE_METADATA
from benchmark.tasks import load_plugins

#: score column suffixes: (suffix, arrow type, description)
SCORE_PARTS = (("", pa.float64(), "the value (null when undefined)"),
               ("_low", pa.float64(), "low end of its bootstrap interval"),
               ("_high", pa.float64(), "high end of its bootstrap interval"),
               ("_n", pa.int64(), "items the value was computed from"),
               ("_estimator", pa.string(), "the estimator (or annotator) of the entry shown"))
FILE_FIELDS = (("source", pa.string(), "the file's path under the results folder"),
               ("sha256", pa.string(), "sha256 of the file's bytes"),
               ("size", pa.int64(), "the file's size when it was read"),
               ("mtime_ns", pa.int64(), "its modification time (ns) when it was read"),
               ("problems", pa.list_(pa.string()), "what `t2ibench validate` found (empty: shown)"),
               ("checked_with", pa.string(), "the package version whose checks made `problems`"),
               ("run_folder", pa.bool_(), "the file is a run folder's results.json"))
ROW_FIELDS = (("model_id", pa.string(), "the model id"),
              ("revision", pa.string(), "the model revision"),
              ("probes", pa.string(), "the probe set: its fingerprint, else source@revision"),
              ("references", pa.string(), "reference datasets, `key=fingerprint` joined by `|` (empty: papers')"),
              ("annotators", pa.list_(pa.string()), "the annotator models that labelled the images"),
              ("images", pa.string(), "who made the images: generated / supplied / api"),
              ("evaluation", pa.string(), "evaluated (the file names a worker and request) / self-reported"),
              ("demo", pa.bool_(), "built-in tiny random-weight model or annotator: meaningless scores"),
              ("family", pa.string(), "the model family (settings.family or kind)"),
              ("created", pa.timestamp("us", tz="UTC"), "when the results were made"),
              ("package_version", pa.string(), "the t2i-bias-benchmark version that made them"),
              ("suites", pa.list_(pa.string()), "the suites scored"))
BOARD_FIELD = ("board", pa.string(), "JSON: what the leaderboard shows of the file (all of it for a file "
                                     "with problems)")
#: slim board entries keep these keys of a score entry
ENTRY_KEYS = ("name", "suite", "display_name", "value", "defined", "reason", "ci", "ci_note", "n", "estimator",
              "annotator", "subset", "headline")
#: the document keys the board keeps (the detail view reads the whole file)
BOARD_KEYS = ("model", "probes", "references", "created", "submission", "warning", "provenance", "evaluated_by",
              "request_id", "run", "package")


def score_names() -> list[str]:
    """Every score with metadata (task folders and plugins included), in metadata order."""
    load_plugins()
    return list(SCORE_METADATA)


def fields() -> list[tuple[str, pa.DataType, str]]:
    """(column, type, description) of every column, in table order."""
    scores = [(f"{n}{suffix}", kind, f"{n}: {what}") for n in score_names() for suffix, kind, what in SCORE_PARTS]
    return [*FILE_FIELDS, *ROW_FIELDS, *scores, BOARD_FIELD]


def schema() -> pa.Schema:
    return pa.schema([(name, kind) for name, kind, _ in fields()])


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def board_document(doc: Mapping) -> dict:
    """What the leaderboard needs of a valid document: provenance, suites' names and status, the
    headline entries, and the built-in annotators (so a slim document is still a demo)."""
    out = {k: doc[k] for k in BOARD_KEYS if k in doc}
    settings = doc.get("settings") if isinstance(doc.get("settings"), Mapping) else {}
    out["settings"] = {k: settings[k] for k in ("family", "kind") if k in settings}
    out["suites"] = [{"name": s.get("name"), "status": s.get("status")} for s in doc.get("suites", [])
                     if isinstance(s, Mapping)]
    headline = {n for n, m in SCORE_METADATA.items() if m.headline}
    out["scores"] = [{k: e[k] for k in ENTRY_KEYS if k in e} for e in doc.get("scores", [])
                     if isinstance(e, Mapping) and e.get("name") in headline]
    out["annotators"] = [{"annotator": a} for a in builtin_annotators(doc)]
    out["slim"] = True
    return out


def shown_entries(doc: Mapping) -> dict[str, Mapping]:
    """Score name -> the entry the leaderboard shows for it (:func:`entry_rank`'s first)."""
    best: dict[str, tuple] = {}
    for i, e in enumerate(doc.get("scores", [])):
        if isinstance(e, Mapping) and e.get("name") in SCORE_METADATA:
            rank = entry_rank(e, i)
            if e["name"] not in best or rank < best[e["name"]][0]:
                best[e["name"]] = (rank, e)
    return {n: e for n, (_, e) in best.items()}


def score_cells(doc: Mapping) -> dict[str, Any]:
    """The score columns of one document (null where it has no entry of that score)."""
    out: dict[str, Any] = {}
    entries = shown_entries(doc)
    for n in score_names():
        e = entries.get(n) or {}
        ci = e.get("ci") if isinstance(e.get("ci"), Mapping) else {}
        value = e.get("value") if e.get("defined") and is_number(e.get("value")) else None
        out[n] = None if value is None else float(value)
        out[f"{n}_low"] = float(ci["low"]) if is_number(ci.get("low")) else None
        out[f"{n}_high"] = float(ci["high"]) if is_number(ci.get("high")) else None
        out[f"{n}_n"] = int(e["n"]) if is_number(e.get("n")) else None
        out[f"{n}_estimator"] = _text(e.get("estimator") or e.get("annotator"))
    return out


def row_cells(sub) -> dict[str, Any]:
    """The row columns of a valid submission (:class:`submissions.leaderboard.board_model.Submission`)."""
    doc = sub.doc
    annotators = doc.get("annotators") if isinstance(doc.get("annotators"), list) else []
    package = doc.get("package") if isinstance(doc.get("package"), Mapping) else {}
    return {"model_id": sub.model_id, "revision": _text(sub.revision), "probes": sub.probes,
            "references": "|".join(f"{k}={r['fingerprint']}" for k, r in sub.references.items()),
            "annotators": sorted({str(a.get("annotator") or a.get("encoder") or a.get("estimator"))
                                  for a in annotators if isinstance(a, Mapping)} - {"None"}),
            "images": provenance_kind(doc),
            "evaluation": "evaluated" if doc.get("evaluated_by") and doc.get("request_id") else "self-reported",
            "demo": sub.demo, "family": sub.family, "created": utc_time_or_none(doc.get("created")),
            "package_version": _text(package.get("version")), "suites": sub.suites}


def board_json(doc: Mapping | None, valid: bool) -> str | None:
    """The ``board`` column: the slim document of a valid file, the whole one otherwise."""
    if doc is None:
        return None
    return json.dumps(board_document(doc) if valid else doc, allow_nan=False)


def card_text() -> str:
    """The dataset card of the contents folder: what each column holds."""
    lines = ["---", "configs:", "- config_name: default", "  data_files:", "  - split: train",
             "    path: contents.parquet", "---", "", "# Contents of the results dataset", "",
             "One row per results file (one per model id, revision, probe set and reference): the per-model "
             "JSON files are the source of truth, this table is rebuilt from them "
             "(`t2ibench leaderboard build-contents DIR`). Scores of built-in tiny models (`demo`) are "
             "meaningless.", "",
             markdown_table(["column", "type", "content"],
                            ([f"`{name}`", str(kind), what] for name, kind, what in fields()))]
    return "\n".join(lines) + "\n"

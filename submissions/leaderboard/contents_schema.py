"""The columns of the contents table (``DIR/contents/contents.parquet``), how one results
document becomes one flat, typed row of it (:func:`cells`), and how the leaderboard makes its
slim document back from such a row (:func:`slim_document`): every column is typed (no JSON text
column), so the board is read in one read with nothing left to parse.

One row per results file (the maintainers' rule makes that one per model id + revision + probe
set + reference; files that share a key are rows too, and the app lists them as conflicts).
Column names are stable: they are listed in ``docs/leaderboard.md`` and in the dataset card
``contents/README.md`` that :func:`card_text` writes beside the table.

- file columns: ``source``, ``sha256``, ``size``, ``mtime_ns``, ``problems``, ``checked_with``,
  ``run_folder``;
- row columns: ``key`` (the board's row key), ``model_id``, ``model_spec``, ``revision``,
  ``builtin``, ``probes`` (and ``probe_set``, its block), ``references``, ``annotators``,
  ``builtin_annotators``, ``images`` (generated / supplied / api) and ``image_source`` (its
  block), ``evaluation`` (evaluated / self-reported, as the file claims it: the app checks the
  claim against the requests queue), ``evaluated_by``, ``request_id``, ``demo``, ``warning``,
  ``family``, ``created``, ``package_version``, ``suites``, ``submission``;
- per score NAME that some row of the table has (the entry the leaderboard shows,
  :func:`benchmark.present.text.entry_rank`): ``NAME`` (value, null when undefined),
  ``NAME_low``, ``NAME_high`` (its interval), ``NAME_n``, ``NAME_estimator``, ``NAME_suite``
  (the suite of that entry; null: the file has no entry of that score). A score no row has has
  no column (:func:`drop_unused_scores`).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

import pyarrow as pa

from benchmark.contract.image_checks import KINDS as DEGENERATE_KINDS
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
               ("_estimator", pa.string(), "the estimator (or annotator) of the entry shown"),
               ("_suite", pa.string(), "the suite of the entry shown (null: the file has no entry of this score)"))
#: the columns of a score corrected with people's labels (present for a score some row has corrected)
PEOPLE_PARTS = (("_people", pa.float64(), "the value corrected with people's labels of a random sample (null: none)"),
                ("_people_low", pa.float64(), "low end of the corrected value's interval"),
                ("_people_high", pa.float64(), "high end of the corrected value's interval"),
                ("_people_n", pa.int64(), "people-labelled images the corrected value rests on"))
FILE_FIELDS = (("source", pa.string(), "the file's path under the results folder"),
               ("sha256", pa.string(), "sha256 of the file's bytes"),
               ("size", pa.int64(), "the file's size when it was read"),
               ("mtime_ns", pa.int64(), "its modification time (ns) when it was read"),
               ("problems", pa.list_(pa.string()), "what `t2ibench validate` found (empty: shown)"),
               ("checked_with", pa.string(), "the package version whose checks made `problems`"),
               ("run_folder", pa.bool_(), "the file is a run folder's results.json"))
PROBE_SET = pa.struct([("kind", pa.string()), ("source", pa.string()), ("revision", pa.string()),
                       ("fingerprint", pa.string())])
REFERENCE = pa.struct([("key", pa.string()), ("source", pa.string()), ("revision", pa.string()),
                       ("fingerprint", pa.string())])
#: the results' ``provenance`` block, the fields the board shows (``sheet.probes_fingerprint`` flattened)
IMAGE_SOURCE = pa.struct([("kind", pa.string()), ("seeds", pa.string()), ("seeds_controlled", pa.bool_()),
                          ("supplied_by", pa.string()), ("sheet_fingerprint", pa.string()),
                          ("n_supplied", pa.int64()), ("n_missing", pa.int64()), ("provider", pa.string()),
                          ("api_base", pa.string()), ("api_model", pa.string())])
#: an adapter as the board shows it: ``name`` is the name its record gives (a LoRA's card), null when none
ADAPTER = pa.struct([("kind", pa.string()), ("id", pa.string()), ("sha256", pa.string()), ("scale", pa.float64()),
                     ("name", pa.string())])
DEGENERATE = pa.struct([("n_checked", pa.int64()), ("n_degenerate", pa.int64()), ("share", pa.float64()),
                        ("threshold", pa.float64()), ("allowed", pa.bool_()),
                        *((kind, pa.int64()) for kind in DEGENERATE_KINDS)])
SUBMISSION = pa.struct([("submitted_at", pa.string()), ("submitted_with", pa.string()), ("demo", pa.bool_()),
                        ("results_repo", pa.string()), ("images_dataset", pa.string())])
ROW_FIELDS = (("key", pa.string(), "the leaderboard's row key: `model_id@revision` (a single file: "
                                   "`file:SHA256`), `+quantized=BACKEND:SCHEME`, `+KIND=sha256xSCALE` per "
                                   "adapter, `#probes` when recorded, "
                                   "`|KEY-reference=fingerprint` per reference"),
              ("model_id", pa.string(), "the model id"),
              ("model_spec", pa.string(), "the model spec the audit loaded"),
              ("revision", pa.string(), "the model revision"),
              ("adapters", pa.list_(ADAPTER), "LoRAs and component checkpoints applied to the base, in order (kind, "
                                              "id, sha256 of the file, scale, the name its record gives; empty: the "
                                              "base alone)"),
              ("checkpoint_sha256", pa.string(), "a single-file checkpoint's sha256 (`model.checkpoint`: the model "
                                                 "is the file; null: a folder or Hub model)"),
              ("quantization", pa.string(), "how the weights were quantized, BACKEND:SCHEME (`model.quantization`; "
                                            "null: not quantized)"),
              ("builtin", pa.bool_(), "`model.builtin`: a built-in tiny random-weight model"),
              ("probes", pa.string(), "the probe set: its fingerprint, else source@revision"),
              ("probe_set", PROBE_SET, "the results' `probes` block (kind, source, revision, fingerprint)"),
              ("references", pa.list_(REFERENCE), "reference datasets the scores were made against (key, source, "
                                                  "revision, fingerprint; empty: the papers' protocol)"),
              ("annotators", pa.list_(pa.string()), "the annotator models that labelled the images"),
              ("builtin_annotators", pa.list_(pa.string()), "the built-in tiny random-weight annotators among them"),
              ("images", pa.string(), "who made the images: generated / supplied / api"),
              ("image_source", IMAGE_SOURCE, "the results' `provenance` block for supplied / api images (null: "
                                             "generated)"),
              ("evaluation", pa.string(), "evaluated (the file names a worker and request) / self-reported"),
              ("evaluated_by", pa.string(), "the maintainers' worker the file names (checked against the queue)"),
              ("request_id", pa.string(), "the request the file names"),
              ("demo", pa.bool_(), "built-in tiny random-weight model or annotator: meaningless scores (filter "
                                   "these rows out)"),
              ("warning", pa.string(), "the results' warning (a built-in tiny model)"),
              ("degenerate_images", DEGENERATE, "`run.degenerate_images`: blank, constant or non-finite images among "
                                                "those scored (counts by kind, share, the share that stops an audit, "
                                                "whether --allow-degenerate let them through; null: not recorded)"),
              ("family", pa.string(), "the model family (settings.family or kind)"),
              ("created", pa.timestamp("us", tz="UTC"), "when the results were made"),
              ("package_version", pa.string(), "the t2i-bias-benchmark version that made them"),
              ("suites", pa.list_(pa.string()), "the suites scored"),
              ("human_checked", pa.bool_(), "some score is corrected with people's labels of a random sample "
                                            "(ranked apart from automatic-only rows)"),
              ("submission", SUBMISSION, "the `submission` block `t2ibench submit` adds (null: none)"))
#: the columns the leaderboard reads (a table without one, or with another type, is of an older version)
READ_COLUMNS = [name for name, _, _ in (*FILE_FIELDS, *ROW_FIELDS)]
READ_TYPES = {name: kind for name, kind, _ in (*FILE_FIELDS, *ROW_FIELDS)}


def score_names() -> list[str]:
    """Every score with metadata (task folders and plugins included), in metadata order."""
    load_plugins()
    return list(SCORE_METADATA)


def score_fields(names: list[str] | None = None, people: list[str] | None = None) -> list[tuple[str, pa.DataType, str]]:
    """(column, type, description) of the score columns of ``names`` (default: every score), with
    the corrected-value columns of ``people`` (default: the same names)."""
    names = score_names() if names is None else names
    people = names if people is None else people
    return [(f"{n}{suffix}", kind, f"{n}: {what}") for n in names
            for suffix, kind, what in (*SCORE_PARTS, *(PEOPLE_PARTS if n in people else ()))]


def fields(names: list[str] | None = None, people: list[str] | None = None) -> list[tuple[str, pa.DataType, str]]:
    """(column, type, description) of every column, in table order (score columns of ``names``,
    corrected-value columns of ``people``)."""
    return [*FILE_FIELDS, *ROW_FIELDS, *score_fields(names, people)]


def schema(names: list[str] | None = None) -> pa.Schema:
    return pa.schema([(name, kind) for name, kind, _ in fields(names)])


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    return int(value) if is_number(value) else None


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
        out[f"{n}_n"] = _int(e.get("n"))
        out[f"{n}_estimator"] = _text(e.get("estimator") or e.get("annotator"))
        out[f"{n}_suite"] = _text(e.get("suite")) if e else None
        hc = e.get("human_corrected") if isinstance(e.get("human_corrected"), Mapping) else {}
        hci = hc.get("ci") if isinstance(hc.get("ci"), Mapping) else {}
        people = hc.get("value") if is_number(hc.get("value")) else None
        out[f"{n}_people"] = None if people is None else float(people)
        out[f"{n}_people_low"] = float(hci["low"]) if people is not None and is_number(hci.get("low")) else None
        out[f"{n}_people_high"] = float(hci["high"]) if people is not None and is_number(hci.get("high")) else None
        out[f"{n}_people_n"] = _int(hc.get("n_human")) if people is not None else None
    return out


def _image_source(doc: Mapping) -> dict | None:
    block = doc.get("provenance")
    if not isinstance(block, Mapping) or provenance_kind(doc) == "generated":
        return None
    sheet = block.get("sheet") if isinstance(block.get("sheet"), Mapping) else {}
    return {"kind": _text(block.get("kind")), "seeds": _text(block.get("seeds")),
            "seeds_controlled": bool(block.get("seeds_controlled")), "supplied_by": _text(block.get("supplied_by")),
            "sheet_fingerprint": _text(sheet.get("probes_fingerprint")), "n_supplied": _int(block.get("n_supplied")),
            "n_missing": _int(block.get("n_missing")), "provider": _text(block.get("provider")),
            "api_base": _text(block.get("api_base")), "api_model": _text(block.get("api_model"))}


def _degenerate(doc: Mapping) -> dict | None:
    run = doc.get("run") if isinstance(doc.get("run"), Mapping) else {}
    block = run.get("degenerate_images")
    if not isinstance(block, Mapping):
        return None
    kinds = block.get("by_kind") if isinstance(block.get("by_kind"), Mapping) else {}
    return {"n_checked": _int(block.get("n_checked")), "n_degenerate": _int(block.get("n_degenerate")),
            "share": float(block["share"]) if is_number(block.get("share")) else None,
            "threshold": float(block["threshold"]) if is_number(block.get("threshold")) else None,
            "allowed": bool(block.get("allowed")), **{kind: _int(kinds.get(kind)) for kind in DEGENERATE_KINDS}}


def _submission(doc: Mapping) -> dict | None:
    sub = doc.get("submission")
    if not isinstance(sub, Mapping):
        return None
    return {"submitted_at": _text(sub.get("submitted_at")), "submitted_with": _text(sub.get("submitted_with")),
            "demo": bool(sub.get("demo")), "results_repo": _text(sub.get("results_repo")),
            "images_dataset": _text(sub.get("images_dataset"))}


def row_cells(sub) -> dict[str, Any]:
    """The row columns of a valid submission (:class:`submissions.leaderboard.board_model.Submission`)."""
    doc = sub.doc
    annotators = doc.get("annotators") if isinstance(doc.get("annotators"), list) else []
    package = doc.get("package") if isinstance(doc.get("package"), Mapping) else {}
    probes = doc.get("probes") if isinstance(doc.get("probes"), Mapping) else None
    return {"key": sub.key, "model_id": sub.model_id, "model_spec": _text(sub.model.get("spec")),
            "revision": _text(sub.revision),
            "adapters": [{"kind": _text(a.get("kind")), "id": _text(a.get("id") or a.get("path")),
                          "sha256": _text(a.get("sha256")),
                          "scale": float(a["scale"]) if isinstance(a.get("scale"), (int, float)) else None,
                          "name": _text(a.get("name"))}
                         for a in sub.adapters],
            "checkpoint_sha256": _text(sub.checkpoint.get("sha256")),
            "quantization": f"{sub.quantization.get('backend')}:{sub.quantization.get('scheme')}"
                            if sub.quantization else None,
            "builtin": bool(sub.model.get("builtin")), "probes": sub.probes,
            "probe_set": None if probes is None else {k: _text(probes.get(k)) for k in PROBE_SET.names},
            "references": [{"key": k, **{f: _text(r.get(f)) for f in ("source", "revision", "fingerprint")}}
                           for k, r in sub.references.items()],
            "annotators": sorted({str(a.get("annotator") or a.get("encoder") or a.get("estimator"))
                                  for a in annotators if isinstance(a, Mapping)} - {"None"}),
            "builtin_annotators": builtin_annotators(doc),
            "images": provenance_kind(doc), "image_source": _image_source(doc),
            "evaluation": "evaluated" if doc.get("evaluated_by") and doc.get("request_id") else "self-reported",
            "evaluated_by": _text(doc.get("evaluated_by")), "request_id": _text(doc.get("request_id")),
            "demo": sub.demo, "warning": _text(doc.get("warning")), "degenerate_images": _degenerate(doc),
            "family": sub.family,
            "created": utc_time_or_none(doc.get("created")), "package_version": _text(package.get("version")),
            "suites": sub.suites, "submission": _submission(doc),
            "human_checked": any(isinstance(e, Mapping) and isinstance(e.get("human_corrected"), Mapping)
                                 and is_number(e["human_corrected"].get("value")) for e in doc.get("scores") or [])}


def cells(sub) -> dict[str, Any]:
    """Every row and score column of a valid submission."""
    return {**row_cells(sub), **score_cells(sub.doc)}


def _entry(name: str, rec: Mapping) -> dict | None:
    """The score entry the board shows for ``name``, made back from its columns (None: no entry)."""
    if rec.get(f"{name}_suite") is None:
        return None
    meta = SCORE_METADATA.get(name)
    value, low, high = rec.get(name), rec.get(f"{name}_low"), rec.get(f"{name}_high")
    entry = {"name": name, "suite": rec[f"{name}_suite"], "display_name": meta.display_name if meta else name,
             "value": value, "defined": value is not None,
             "ci": {"low": low, "high": high} if low is not None and high is not None else None,
             "n": rec.get(f"{name}_n"), "estimator": rec.get(f"{name}_estimator"),
             "headline": bool(meta and meta.headline)}
    people, p_low, p_high = rec.get(f"{name}_people"), rec.get(f"{name}_people_low"), rec.get(f"{name}_people_high")
    if people is not None:
        entry["human_corrected"] = {"value": people, "n_human": rec.get(f"{name}_people_n"),
                                    "ci": {"low": p_low, "high": p_high} if p_low is not None and p_high is not None
                                    else None}
    return entry


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, _dt.datetime) else _text(value)


def slim_document(rec: Mapping, names: list[str]) -> dict:
    """The document the leaderboard works with, made from one row of the table (``rec``, as
    ``pyarrow`` gives it) without reading the file: what the board shows of it (model,
    provenance, suites, one entry per score of ``names``: the columns' entry). ``slim`` marks it:
    the detail view reads the whole file."""
    doc: dict[str, Any] = {
        "model": {"id": rec["model_id"], "spec": rec.get("model_spec"), "revision": rec.get("revision"),
                  "builtin": bool(rec.get("builtin"))},
        "created": _iso(rec.get("created")),
        "package": {"name": "t2i-bias-benchmark", "version": rec.get("package_version")},
        "settings": {"family": rec.get("family")},
        "suites": [{"name": s, "status": "scored"} for s in rec.get("suites") or []],
        "scores": [e for e in (_entry(n, rec) for n in names) if e is not None],
        "annotators": [{"annotator": a} for a in rec.get("builtin_annotators") or []],
        "slim": True}
    if rec.get("adapters"):
        doc["model"]["adapters"] = [{k: v for k, v in a.items() if v is not None} for a in rec["adapters"]]
    if rec.get("checkpoint_sha256"):
        doc["model"]["checkpoint"] = {"sha256": rec["checkpoint_sha256"]}
    if rec.get("quantization"):
        backend, _, scheme = str(rec["quantization"]).partition(":")
        doc["model"]["quantization"] = {"backend": backend, "scheme": scheme}
    if rec.get("probe_set"):
        doc["probes"] = {k: v for k, v in rec["probe_set"].items() if v is not None}
    if rec.get("references"):
        doc["references"] = {r["key"]: {k: r[k] for k in ("source", "revision", "fingerprint")}
                             for r in rec["references"]}
    block = rec.get("image_source")
    if block:
        doc["provenance"] = {**{k: v for k, v in block.items() if v is not None and k != "sheet_fingerprint"},
                             "sheet": {"probes_fingerprint": block.get("sheet_fingerprint")}}
    if rec.get("submission"):
        doc["submission"] = dict(rec["submission"])
    block = rec.get("degenerate_images")
    if block:
        doc["run"] = {"degenerate_images": {**{k: block[k] for k in ("n_checked", "n_degenerate", "share", "threshold",
                                                                     "allowed")},
                                            "by_kind": {kind: block[kind] for kind in DEGENERATE_KINDS}}}
    for key in ("evaluated_by", "request_id", "warning"):
        if rec.get(key) is not None:
            doc[key] = rec[key]
    return doc


def present_scores(table: pa.Table) -> list[str]:
    """The score names with a ``NAME_suite`` column that some row fills, in metadata order."""
    names = table.schema.names
    return [n for n in score_names() if f"{n}_suite" in names and table.column(f"{n}_suite").null_count < len(table)]


def present_people(table: pa.Table) -> list[str]:
    """The score names with a corrected value (``NAME_people_n``) in some row, in metadata order."""
    names = table.schema.names
    return [n for n in score_names() if f"{n}_people_n" in names and table.column(f"{n}_people_n").null_count < len(table)]


def drop_unused_scores(table: pa.Table) -> pa.Table:
    """``table`` in column order (file, row, then score columns) without the columns of scores
    no row has (a board of GEP audits has no PaintSkills columns), nor the corrected-value columns
    of scores no row has corrected."""
    keep = [name for name, _, _ in fields(present_scores(table), present_people(table))]
    return table.select(keep)


def card_text(names: list[str], people: list[str] | None = None) -> str:
    """The dataset card of the contents folder (score columns of ``names``): what each column holds, how to load
    it and why demo rows are filtered out."""
    lines = ["---", "configs:", "- config_name: default", "  data_files:", "  - split: train",
             "    path: contents.parquet", "---", "", "# Contents of the results dataset", "",
             "One row per results file (one per model id, revision, probe set and reference): the per-model "
             "JSON files are the source of truth, this table is rebuilt from them "
             "(`t2ibench leaderboard build-contents DIR`). Every column is typed; a score no row has has no "
             "columns (they appear with the first file that has it).", "",
             "**Filter out the demo rows** before you sort: rows with `demo` true come from built-in tiny "
             "random-weight models or annotators, their scores are meaningless (and often the lowest). Rows with "
             "`problems` were refused (the leaderboard does not show them):", "",
             "```python", "from datasets import load_dataset", "",
             'ds = load_dataset("parquet", data_files="contents/contents.parquet", split="train")',
             'ds = ds.filter(lambda r: not r["demo"] and not r["problems"])',
             *([f'by_value = ds.filter(lambda r: r["{names[0]}"] is not None).sort("{names[0]}")  '
                "# lowest first: see the score's direction"] if names else []),
             "```", "",
             markdown_table(["column", "type", "content"],
                            ([f"`{name}`", str(kind), what] for name, kind, what in fields(names, people or [])))]
    return "\n".join(lines) + "\n"

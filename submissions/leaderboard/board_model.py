"""What a leaderboard holds: :class:`Submission` (one valid results file), :class:`Skipped` and
:class:`ModelRow` (one row per key), with the row key, the acceptance order among files of one
key, and conflicts (the board of a folder or table, its files as columns:
:mod:`submissions.leaderboard.board_index`).

Rules (also in ``docs/leaderboard.md``):

- One row per model id + revision + probe set (``probes`` of the results, when present) +
  reference (the fingerprint of each entry of ``references``, e.g. ``references.mcas`` for
  ``--mcas-reference`` audits; none for the papers' protocol): a model audited both ways has
  two rows, the reference one marked by a badge and its Model cell, in the words of the task
  input that declares it (:mod:`benchmark.tasks.inputs`). Sorting by a score the reference
  changes ranks the papers'-protocol rows first, then each reference's rows among
  themselves, never mixed (:mod:`submissions.leaderboard.board_table`).
  When several valid files share that key the first accepted one keeps the row (the
  earliest ``created``, ties by path) and the others are listed as conflicts in the
  warnings, never shown: a newer file does not take over a row. Replacing a row's file is a
  reviewed pull request on the results dataset that deletes the old file.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping

from benchmark.contract.adapter_identity import adapters_key
from benchmark.contract.model_specs import hub_id_problem
from benchmark.contract.times import utc_time_or_none
from submissions import provenance
from submissions.validate import is_demo

#: a results.json ``references`` key as the schema allows it (it becomes a CSS class and a row key)
REFERENCE_KEY = re.compile(r"[a-z][a-z0-9_]*")
HUB_DATASETS = "https://huggingface.co/datasets/"


def is_dataset_id(repo: Any) -> bool:
    """``repo`` is a Hub dataset id ORG/NAME by huggingface_hub's own rule (letters, digits, '.',
    '_', '-'): safe to put in a URL and a Markdown link as is."""
    return isinstance(repo, str) and repo.count("/") == 1 and hub_id_problem(repo) is None


@dataclass(frozen=True)
class Submission:
    """One valid results file (its derived facts are worked out once: the ranking asks them of
    every row at every search)."""

    doc: dict
    source: str  # path relative to the folder read, for display
    path: Path
    run_dir: Path | None  # the run folder when the file is a run's results.json
    # the requests queue's FINISHED requests, when the app has a queue: a row counts as
    # evaluated by the maintainers' workers only when its request is there (submissions.provenance)
    finished: Mapping | None = None

    @property
    def model(self) -> Mapping:
        return self.doc["model"]

    @property
    def model_id(self) -> str:
        return str(self.model["id"])

    @property
    def revision(self) -> str | None:
        return self.model.get("revision")

    @cached_property
    def probes(self) -> str | None:
        """The probe set of the results (``probes``: fingerprint, else source@revision), or None."""
        probes = self.doc.get("probes")
        if not isinstance(probes, Mapping):
            return None
        if probes.get("fingerprint"):
            return str(probes["fingerprint"])
        if probes.get("source"):
            return f"{probes['source']}@{probes.get('revision') or ''}"
        return None

    @cached_property
    def references(self) -> dict[str, dict]:
        """The reference datasets the scores were made against (results.json ``references``: key ->
        {source, revision, fingerprint}, by key), empty for the papers' protocol (the model's own
        images)."""
        refs = self.doc.get("references")
        if not isinstance(refs, Mapping):
            return {}
        return {str(k): dict(v) for k, v in sorted(refs.items(), key=lambda kv: str(kv[0]))
                if REFERENCE_KEY.fullmatch(str(k)) and isinstance(v, Mapping) and v.get("fingerprint")}

    @cached_property
    def reference_fingerprint(self) -> str | None:
        """The fingerprints of the references, joined (None for the papers' protocol)."""
        return "+".join(str(r["fingerprint"]) for r in self.references.values()) or None

    @cached_property
    def adapters(self) -> list[dict]:
        """The LoRAs and component checkpoints applied to the base (results.json ``model.adapters``)."""
        found = self.model.get("adapters")
        return [dict(a) for a in found if isinstance(a, Mapping)] if isinstance(found, list) else []

    @cached_property
    def checkpoint(self) -> dict:
        """A single-file checkpoint's identity record (results.json ``model.checkpoint``), or {}."""
        found = self.model.get("checkpoint")
        return dict(found) if isinstance(found, Mapping) else {}

    @cached_property
    def quantization(self) -> dict:
        """How the weights were quantized (results.json ``model.quantization``), or {}."""
        found = self.model.get("quantization")
        return dict(found) if isinstance(found, Mapping) else {}

    @cached_property
    def model_key(self) -> str:
        """The model part of the row key: ``id@revision``; a single-file checkpoint's sha256 (the
        model is the file, wherever it lies); a quantization after it (another model than the
        unquantized one)."""
        sha = self.checkpoint.get("sha256")
        model = f"file:{str(sha)[:16]}" if sha else f"{self.model_id}@{self.revision or ''}"
        quant = self.quantization
        return model + (f"+quantized={quant.get('backend')}:{quant.get('scheme')}" if quant else "")

    @cached_property
    def key(self) -> str:
        """Row key: model id, revision (a single file: its sha256), quantization, adapters (their
        files' sha256 and scales, in an order that does not matter to the images, a scale-0 LoRA left
        out, the LoRA trigger: benchmark.contract.adapter_identity; a base and the same base with a
        LoRA are two rows), probe set and references ('@', '+', '#' and '|' are in no Hub id, so it
        is unambiguous)."""
        settings = self.doc.get("settings") if isinstance(self.doc.get("settings"), Mapping) else {}
        return (self.model_key
                + adapters_key(self.adapters, trigger=settings.get("lora_trigger"))
                + (f"#{self.probes}" if self.probes else "")
                + "".join(f"|{k}-reference={r['fingerprint']}" for k, r in self.references.items()))

    @property
    def created(self) -> _dt.datetime:
        return parse_time(self.doc.get("created"))

    @property
    def submission(self) -> Mapping:
        sub = self.doc.get("submission")
        return sub if isinstance(sub, Mapping) else {}

    @cached_property
    def demo(self) -> bool:
        """Built-in tiny random-weight model (or a submission marked demo): meaningless scores."""
        return is_demo(self.doc) or bool(self.submission.get("demo"))

    @cached_property
    def family(self) -> str:
        settings = self.doc.get("settings") if isinstance(self.doc.get("settings"), Mapping) else {}
        return str(settings.get("family") or settings.get("kind") or "unknown")

    @cached_property
    def suites(self) -> list[str]:
        """Suites with scores (status ``scored``)."""
        return [str(s["name"]) for s in self.doc.get("suites", []) if s.get("status") == "scored"]

    @property
    def scores(self) -> list[dict]:
        return list(self.doc.get("scores", []))

    @property
    def images_dataset(self) -> str | None:
        """The submitted images' Hub dataset id, when present and a well-formed repo id."""
        repo = self.submission.get("images_dataset")
        return repo if is_dataset_id(repo) else None


@dataclass(frozen=True)
class Skipped:
    source: str
    problem: str  # the first one
    n_problems: int


def parse_time(value: Any) -> _dt.datetime:
    """An ISO 8601 time as an aware datetime; unparsable times sort first."""
    return utc_time_or_none(value) or _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)


@dataclass(frozen=True)
class ModelRow:
    """One leaderboard row: ``latest`` is the submission shown (the first accepted file of the
    row's key); ``older`` are the other valid files with the same key, conflicts never shown."""

    latest: Submission
    older: tuple[Submission, ...] = ()

    @property
    def key(self) -> str:
        return self.latest.key

    @property
    def conflicts(self) -> tuple[Submission, ...]:
        return self.older


def evaluated_by(sub: Submission) -> str | None:
    """The maintainers' worker that ran the audit (``evaluated_by``), when the results come from
    a request of the queue (:func:`submissions.provenance.provenance`, checked against the
    queue's FINISHED requests when the app has a queue); None for a self-reported row."""
    if provenance.provenance(sub, sub.finished) != provenance.PROVENANCE_WORKER:
        return None
    return str(sub.doc["evaluated_by"])


def accepted_first(sub: Submission) -> tuple:
    """Order of acceptance among files of one row key: a file the maintainers' workers evaluated
    (checked against the queue's FINISHED requests, :func:`evaluated_by`) before a self-reported
    one, then the earliest ``created``, then path."""
    return (evaluated_by(sub) is None, sub.created, sub.source)


def hidden_because(hidden: Submission, shown: Submission) -> str:
    """Why ``hidden`` is not shown although it has the row key of ``shown`` (the row's file)."""
    if evaluated_by(shown) is not None and evaluated_by(hidden) is None:
        return "a file the maintainers' workers evaluated holds the row before any self-reported file"
    return "the first accepted file (earliest created) holds the row"


def model_rows(submissions: Iterable[Submission]) -> list[ModelRow]:
    """One row per model id + revision + probe set, held by its first accepted file
    (:func:`accepted_first`: a worker-evaluated file first); the other files of that key are the
    row's conflicts."""
    groups: dict[str, list[Submission]] = {}
    for s in submissions:
        groups.setdefault(s.key, []).append(s)
    rows = []
    for subs in groups.values():
        subs = sorted(subs, key=accepted_first)
        rows.append(ModelRow(subs[0], tuple(subs[1:])))
    return sorted(rows, key=lambda r: (r.latest.model_id.lower(), r.key))

"""Does a run folder hold what its run was asked for? (part of ``t2ibench verify``)

:mod:`benchmark.contract.run_folder_check` compares the folder's files with each other (PNG bytes with
their sha256, the manifest with ``metadata.jsonl``); a consistent edit of both sides passes
that. This module compares them with what the run was asked for:

- ``run-config``: ``run_config.json`` that is not a run configuration (garbage, a field of the
  wrong type), or whose ``probes_sha256`` / ``n_probes`` are not those of the probe list its
  probe set, suites and limit give (it was edited);
- ``probe-missing``: a probe of that list that no ``metadata.jsonl`` row holds (a batch removed
  together with its manifest rows);
- ``row-mismatch``: a metadata row whose probe fields (``gender``, ``prompt``, ``seed``...)
  differ from the probe list's, or whose ``model_id`` / ``revision`` / ``settings`` differ from
  ``run_config.json`` (a run config naming another model);
- ``label-schema``: a ``labels/<name>.parquet`` file whose columns and types are not those the
  annotate stage writes for ``<name>`` (:func:`benchmark.runner.repair.label_schema_problems`): two
  label files swapped together with their sha256 records match their records, not their names;
- ``label-missing`` / ``label-rows``: a label file the run's annotators write, deleted with its
  record, or rows of some images dropped and the record rewritten
  (:func:`benchmark.runner.label_gaps.label_gap_problems`).

A forgery consistent across every file (images, rows, manifest and run config all rewritten)
is out of scope: the queue's provenance covers trust (docs/queue.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmark.contract import run_folder as rf
from benchmark.probes.source import open_probe_set
from benchmark.contract.run_folder_check import Problem, comparable, inspect_run_folder
from benchmark.runner.probe_choice import build_probes, limit_probes, probes_fingerprint
from benchmark.runner.label_gaps import label_gap_problems
from benchmark.runner.repair import label_schema_problems
from benchmark.tasks.folder_record import missing_folder_line

__all__ = ["EXPECTED_KINDS", "config_problems", "expected_probes", "expected_problems", "check_run_folder"]

EXPECTED_KINDS = ("run-config", "probe-missing", "row-mismatch", "label-schema", "label-missing", "label-rows")
_HEX64 = frozenset("0123456789abcdef")

# (key, type(s), may be null) of the fields every later stage reads from run_config.json
_CONFIG_FIELDS: tuple[tuple[str, tuple[type, ...], bool], ...] = (
    ("format", (int,), False), ("model", (dict,), False), ("settings", (dict,), False),
    ("suites", (list,), False), ("limit_per_suite", (int,), True), ("n_probes", (int,), False),
    ("probes_sha256", (str,), False), ("probes", (dict,), True))


def _problem(message: str) -> Problem:
    return Problem("run-config", rf.CONFIG_FILE, message)


def config_problems(config: Any) -> list[Problem]:
    """What makes ``config`` (parsed run_config.json) unusable as a run configuration."""
    if not isinstance(config, dict):
        return [_problem("is not a JSON object")]
    out = []
    for key, types, nullable in _CONFIG_FIELDS:
        value = config.get(key)
        if value is None and (nullable or key == "probes"):
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            out.append(_problem(f"{key} is {_shown(value)}, not a {types[0].__name__}"))
    if out:
        return out
    if not all(isinstance(s, str) for s in config["suites"]):
        out.append(_problem("suites must be a list of suite names"))
    if len(config["probes_sha256"]) != 64 or not set(config["probes_sha256"]) <= _HEX64:
        out.append(_problem("probes_sha256 is not a sha256 hex digest"))
    for key in ("spec", "model_id"):
        if not isinstance(config["model"].get(key), str):
            out.append(_problem(f"model.{key} is {_shown(config['model'].get(key))}, not a model id"))
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def expected_probes(config: dict):
    """(the probe list the run was asked for, None) or (None, why it cannot be rebuilt here: a Hub
    probe set offline and not cached...)."""
    record = config.get("probes") or {}
    source = None if record.get("kind") in (None, "builtin") else record.get("source")
    revision = record.get("revision") if record.get("kind") == "hub" else None
    try:
        probe_set = open_probe_set(source, revision)
        return limit_probes(build_probes(config["suites"], None, probe_set), config["limit_per_suite"]), None
    except Exception as exc:  # unreachable Hub, a folder gone, an unknown suite: cannot be checked here
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _fingerprint_problems(config: dict, probes) -> list[Problem]:
    out = []
    if probes_fingerprint(probes) != config["probes_sha256"]:
        out.append(_problem("probes_sha256 is not the fingerprint of the probe list its probe set, suites and "
                            "limit give: the file was edited"))
    if len(probes) != config["n_probes"]:
        out.append(_problem(f"n_probes is {config['n_probes']}, the probe list has {len(probes)}"))
    return out


def _row_problems(config: dict, probes, rows: list[dict]) -> list[Problem]:
    """probe-missing and row-mismatch problems, in probe order."""
    by_pid = {r["probe_id"]: r for r in rows}
    model = config["model"]
    settings = rf.settings_json(config["settings"])
    columns = [c for c in probes.columns]
    out = []
    for i, probe in enumerate(probes.to_dict("records")):
        pid = probe["probe_id"]
        row = by_pid.get(pid)
        if row is None:
            out.append(Problem("probe-missing", pid, "the run asked for this probe but no metadata.jsonl row "
                               "holds it (a batch removed with its manifest rows?)", pid))
            continue
        where = f"{rf.IMAGES_DIR}/{row['batch']}/{rf.METADATA_FILE}"
        wrong = [(c, row.get(c), probe[c]) for c in columns if comparable(row.get(c)) != comparable(probe[c])]
        if row.get("probe_index") != i:
            wrong.insert(0, ("probe_index", row.get("probe_index"), i))
        wrong += [(k, row.get(k), model.get(k)) for k in ("model_id", "revision") if row.get(k) != model.get(k)]
        if row.get("settings") != settings:
            wrong.append(("settings", row.get("settings"), settings))
        if wrong:
            key, have, want = wrong[0]
            source = rf.CONFIG_FILE if key in ("model_id", "revision", "settings") else "the probe list"
            out.append(Problem("row-mismatch", where, f"{key} is {_shown(comparable(have))}, {source} says "
                               f"{_shown(comparable(want))}", pid, row["batch"]))
    return out


def expected_problems(run_dir: str | Path, rows: list[dict]) -> tuple[list[Problem], str | None]:
    """(problems, why the probe list was not checked or None) of RUN_DIR's metadata ``rows``
    (each with ``batch``) and label files against what its run_config.json asked for and what
    the annotate stage writes."""
    try:
        config = rf.read_run_config(run_dir)
    except rf.RunFolderError as exc:
        return [_problem(str(exc))], "run_config.json unusable"
    problems = config_problems(config)
    if problems:
        return problems, "run_config.json unusable"
    labels = label_schema_problems(run_dir) + label_gap_problems(run_dir, config)
    probes, why = expected_probes(config)
    if probes is None:  # a task folder the run used, missing here, is the likely reason: say where it is
        return labels, missing_folder_line(config) or why
    problems = _fingerprint_problems(config, probes)
    if problems:  # the rows compared with a list the run never asked for would only add noise
        return problems + labels, None
    return _row_problems(config, probes, rows) + labels, None


def check_run_folder(run_dir: str | Path, *, verify_sha256: bool = True) -> list[Problem]:
    """The problems of RUN_DIR in report order: against its own files and against what its run
    asked for (empty when it matches both)."""
    return inspect_run_folder(run_dir, verify_sha256=verify_sha256, expected=expected_problems).problems

"""run_config.json as generation writes it (:func:`make_run_config`: the audit request and what
was resolved from it), and the check that a rerun repeats what started its folder
(:func:`check_resume`; ``IDENTITY_KEYS`` once the model is loaded)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

import benchmark
from benchmark.contract import run_folder as rf
from benchmark.contract.audit_request import AuditRequest, request_differences
from benchmark.contract.model_specs import is_builtin
from benchmark.runner.batch_size import BatchSize
from benchmark.tasks.folder_record import RECORD_KEY, outside_task_folders
from benchmark.runner.probe_choice import ChosenProbes, probes_fingerprint

# Settings keys that describe where a process runs, not what it generates; they are
# left out of the recorded settings so every rank records the same thing.
PROCESS_LOCAL_SETTINGS = ("device",)
# run_config.json keys that must match to resume into an existing run folder.
IDENTITY_KEYS = ("format", "package_version", "model", "settings", "suites", "limit_per_suite", "n_probes",
                 "probes_sha256", "probes")
# Those that can be checked before the model is loaded (model: spec and requested revision only).
EARLY_IDENTITY_KEYS = ("format", "package_version", "model", "suites", "limit_per_suite", "n_probes", "probes_sha256",
                       "probes")
#: identity records a loaded model may carry beside its adapters (benchmark.models.single_file,
#: benchmark.models.quantization), copied to run_config.json's and results.json's ``model``
MODEL_RECORDS = ("checkpoint", "quantization")
#: run_config.json key of the audit request (:meth:`AuditRequest.record`)
REQUEST_KEY = "request"


def _package_version() -> str:
    return getattr(benchmark, "__version__", "unknown")


def recorded_settings(settings: dict | None) -> dict:
    return {k: v for k, v in dict(settings or {}).items() if k not in PROCESS_LOCAL_SETTINGS}


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _model_block(request: AuditRequest, model: Any) -> dict:
    """run_config.json ``model``: the spec and revision asked for, and (once loaded) what they
    resolved to, with the identity records of its adapters (LoRAs, component checkpoints)."""
    model_id = getattr(model, "model_id", None)
    block = {"spec": request.model_spec or model_id, "revision_requested": request.revision, "model_id": model_id,
             "revision": getattr(model, "revision", None),
             "builtin": None if model is None else (is_builtin(model) or is_builtin(request.model_spec or model_id))}
    adapters = getattr(model, "adapters", None)
    if adapters:  # LoRAs and component checkpoints: part of what the model is (benchmark.models.lora)
        block["adapters"] = _json(list(adapters))
    for key in MODEL_RECORDS:  # a single-file checkpoint (the model is the file) and quantized weights
        record = getattr(model, key, None)
        if record:
            block[key] = _json(dict(record))
    return block


def make_run_config(request: AuditRequest, probes: pd.DataFrame, *, chosen: ChosenProbes | None = None,
                    model: Any = None, batch: BatchSize | None = None) -> dict:
    """run_config.json: what was asked (``request``, also kept whole under ``request``) and what
    it resolved to. ``probes``: the probe rows generated (after ``--limit``); ``chosen``: the
    probe set's record (source, revision, each suite's family and the family configs the later
    stages use) and the task inputs' identities; ``model``: the loaded model (None for the
    config checked before it loads): its id, revision, settings, where each call setting came
    from (``setting_sources``, benchmark.models.model_cards), what the CUDA set-up did
    (``speed``) and, for images the benchmark did not make, their ``provenance``; ``batch``: the
    resolved batch size and how ``auto`` chose it. ``setting_sources``, ``speed``, ``request`` and
    ``task_folders`` (task folders from outside the package, :mod:`benchmark.tasks.folder_record`)
    are not part of the run's identity (``IDENTITY_KEYS``)."""
    suites = list(dict.fromkeys(probes["suite"])) if len(probes) else []
    cfg = {
        "format": rf.CONFIG_FORMAT,
        "package_version": _package_version(),
        "model": _model_block(request, model),
        "settings": json.loads(rf.settings_json(recorded_settings(getattr(model, "settings", None)))),
        "suites": suites,
        "limit_per_suite": request.probes.limit_per_suite,
        "n_probes": int(len(probes)),
        "probes_sha256": probes_fingerprint(probes),
        **(batch.record() if batch is not None else {}),
    }
    if chosen is not None and chosen.record is not None:
        cfg["probes"] = _json(chosen.record)
    for name, identity in (chosen.inputs if chosen is not None else {}).items():  # checked on resume by the input's plan
        cfg[name] = dict(identity)
    for key in ("provenance", "setting_sources", "speed"):  # provenance: images not generated by the benchmark
        value = getattr(model, key, None)
        if value:
            cfg[key] = _json(value)
    cfg[REQUEST_KEY] = request.record()
    outside = outside_task_folders(suites)  # where a later stage finds them again (none for the built-in)
    if outside:
        cfg[RECORD_KEY] = outside
    return cfg


def check_resume(request: AuditRequest, chosen: ChosenProbes) -> None:
    """Before the model loads: refuse (one line) a run folder started by another request. The
    recorded request is read back and compared field by field, naming the option that differs;
    a folder written before requests were recorded is compared on its run_config.json keys."""
    recorded = rf.read_run_config(request.run_dir)
    if recorded is None:
        return
    earlier = recorded.get(REQUEST_KEY)
    if isinstance(earlier, dict):
        diffs = request_differences(earlier, request)
        if diffs:
            more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
            raise rf.RunFolderError(f"{request.run_dir} holds a run made with other generation arguments: "
                                    f"{diffs[0]}{more}; rerun with the same arguments to resume, or choose "
                                    "another --out folder")
    early = make_run_config(request, chosen.limited, chosen=chosen)
    rf.check_run_config(request.run_dir, early, EARLY_IDENTITY_KEYS, model_keys=("spec", "revision_requested"))

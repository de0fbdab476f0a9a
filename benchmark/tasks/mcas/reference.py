"""A run audited against a reference's MCAS attribute images (``t2ibench run --mcas-reference
SOURCE``, declared in :mod:`benchmark.tasks.mcas.inputs`).

The reference is a reference-attributes dataset (:mod:`benchmark.reference_attributes` reads
it; :mod:`benchmark.tasks.mcas.reference_configs` declares the configs MCAS reads from it).
:func:`plan_mcas_reference` loads and checks it before the first image and drops the
attribute suites it replaces; the run records its identity in run_config.json under
``mcas_reference``; the annotate stage embeds the reference's attribute images with the run's
MCAS encoders (cached in RUN_DIR/embeddings/mcas-reference/) and the MCAS task scores the run's
target images against them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from benchmark.reference_attributes import ReferenceAttributes, ReferenceAttributesError, load_reference_attributes
from benchmark.contract.run_folder import EMBEDDINGS_DIR, RunFolderError, read_run_config, write_json_atomic
from benchmark.tasks.inputs import describe_identity, run_identity
from benchmark.tasks.mcas.inputs import REFERENCE
from benchmark.tasks.mcas.reference_configs import IMAGE_ATTRIBUTES

__all__ = ["RUN_CONFIG_KEY", "MCAS_FAMILY", "RUN_EMBEDDINGS_SUBDIR", "ATTRIBUTES_FILE", "REFERENCE_ID_PREFIX",
           "reference_image_id", "run_reference", "describe", "load_mcas_reference", "reopen_run_reference",
           "check_reference_resume", "run_reference_rows", "attribute_suites", "plan_mcas_reference"]

RUN_CONFIG_KEY = REFERENCE.name  # "mcas_reference"
MCAS_FAMILY = "mcas"  # the probe family whose attribute suites a reference replaces
#: RUN_DIR/embeddings/<this>/: the reference's image embeddings (one folder per encoder) and
#: ATTRIBUTES_FILE, the reference's attribute rows, so a resumed run needs the reference only
#: for embeddings it still lacks
RUN_EMBEDDINGS_SUBDIR = "mcas-reference"
ATTRIBUTES_FILE = "attributes.json"
#: label-file probe ids of reference images: never a probe id of the run
REFERENCE_ID_PREFIX = "reference:"


def reference_image_id(fingerprint: str, probe_id: str) -> str:
    """The id a reference image gets in a run's label files: the reference's fingerprint is in
    it, so rows embedded from another reference are never taken for this one's."""
    return f"{REFERENCE_ID_PREFIX}{fingerprint[:16]}:{probe_id}"


def run_reference(run_config: dict | None) -> dict | None:
    """The reference a run was audited against ({source, revision, fingerprint}), or None (the
    papers' protocol: the model's own attribute images)."""
    try:
        return run_identity(run_config, REFERENCE)
    except ValueError as exc:
        raise ReferenceAttributesError(str(exc)) from None


def describe(identity: dict) -> str:
    """``SOURCE @ REVISION (fingerprint abcdef123456)`` for messages, the report and notes."""
    return describe_identity(identity)


def load_mcas_reference(source: str, revision: str | None = None) -> tuple[ReferenceAttributes, dict]:
    """A reference for an audit: loaded, with image attributes of both sets; (reference, identity)."""
    ref = load_reference_attributes(source, revision=revision)
    ref.require(IMAGE_ATTRIBUTES)
    return ref, ref.identity.to_dict()


def reopen_run_reference(identity: dict) -> ReferenceAttributes:
    """The reference a run recorded, loaded again (a Hub dataset at its recorded commit); a
    one-line error when its data changed since (another fingerprint)."""
    ref, now = load_mcas_reference(identity["source"], identity.get("revision"))
    if now["fingerprint"] != identity["fingerprint"]:
        raise ReferenceAttributesError(
            f"the MCAS reference {identity['source']} changed since this run was started (fingerprint "
            f"{identity['fingerprint'][:12]}, now {now['fingerprint'][:12]}): restore it, or audit into a new --out")
    return ref


def check_reference_resume(run_dir: str | Path, identity: dict | None) -> None:
    """Refuse (one line) to resume RUN_DIR against another MCAS reference than it was started
    with, or with none where it had one (and the reverse). Compared by fingerprint: the same data
    read from a moved folder or a Hub mirror is the same reference."""
    existing = None if run_dir is None else read_run_config(run_dir)
    if existing is None:
        return
    before = run_reference(existing)
    if (before or {}).get("fingerprint") == (identity or {}).get("fingerprint"):
        return
    was = f"MCAS reference {describe(before)}" if before else "the model's own MCAS attribute images"
    now = f"MCAS reference {describe(identity)}" if identity else "the model's own (no --mcas-reference)"
    raise RunFolderError(f"{run_dir} was audited against {was}, now {now}; rerun with the same --mcas-reference "
                         "to resume, or choose another --out folder")


def _roles(frame: pd.DataFrame) -> list[str]:
    return [f"attribute_{str(s).lower()}_image" for s in frame["attribute_set"]]


def run_reference_rows(run_dir: str | Path, identity: dict) -> pd.DataFrame:
    """The reference's attribute images as the run's label files name them: ``probe_id``
    (:func:`reference_image_id`), ``role``, ``sha256``, ``source_probe_id``. Read from
    RUN_DIR/embeddings/mcas-reference/attributes.json when it names this reference, else from
    the reference (and written there)."""
    path = Path(run_dir) / EMBEDDINGS_DIR / RUN_EMBEDDINGS_SUBDIR / ATTRIBUTES_FILE
    cols = ["probe_id", "role", "sha256", "source_probe_id"]
    if path.is_file():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            saved = None
        if isinstance(saved, dict) and (saved.get("reference") or {}).get("fingerprint") == identity["fingerprint"]:
            return pd.DataFrame(saved.get("rows") or [], columns=cols)
    images = reopen_run_reference(identity).require(IMAGE_ATTRIBUTES)
    rows = pd.DataFrame({"probe_id": [reference_image_id(identity["fingerprint"], str(p)) for p in images["probe_id"]],
                         "role": _roles(images), "sha256": images["sha256"].astype(str),
                         "source_probe_id": images["probe_id"].astype(str)})
    write_json_atomic(path, {"reference": identity, "rows": rows.to_dict("records")})
    return rows


def attribute_suites(probe_set, suites: list[str]) -> list[str]:
    """The suites of ``suites`` that hold MCAS attribute images (every row has an
    ``attribute_set``): what a reference replaces."""
    out = []
    for s in suites:
        if probe_set.families.get(s) != MCAS_FAMILY:
            continue
        table = probe_set.suite_table(s)
        if len(table) and "attribute_set" in table.columns and table["attribute_set"].notna().all():
            out.append(s)
    return out


def plan_mcas_reference(run_dir, probe_set, suites: list[str], source: str | None,
                        revision: str | None = None) -> tuple[list[str], dict | None]:
    """(suites to generate, the reference's identity for run_config.json) of a run asked to
    score MCAS against the reference ``source`` (None: the papers' protocol, suites unchanged).
    Loads and checks the reference, refuses a run folder started against another one, and
    drops the attribute suites; every refusal is one line. (The ``plan`` of the input
    :data:`benchmark.tasks.mcas.inputs.REFERENCE`.)"""
    if source is None:
        if revision is not None:
            raise ReferenceAttributesError("--mcas-reference-revision needs --mcas-reference")
        check_reference_resume(run_dir, None)
        return suites, None
    targets = [s for s in suites if probe_set.families.get(s) == MCAS_FAMILY and s not in attribute_suites(probe_set, [s])]
    if not targets:
        raise ReferenceAttributesError("--mcas-reference needs an MCAS target suite among --suites (e.g. mcas_targets)")
    _, identity = load_mcas_reference(source, revision)
    check_reference_resume(run_dir, identity)
    dropped = attribute_suites(probe_set, suites)
    return [s for s in suites if s not in dropped], identity

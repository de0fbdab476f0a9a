"""Do a run's label files hold every row its annotators owe its images? (part of ``t2ibench verify``)

A label file deleted together with its sha256 record, or one with rows dropped and its record
rewritten, matches every record the folder keeps; the score stage would then score fewer images,
or no suite at all, without a word. This check asks the annotate stage's own question instead:
the annotators the run was labelled with (``timings.json`` ``annotate/total`` records them, with
the suites that call covered; else the run's defaults and the annotators ``run`` was given),
made without loading or looking up any model, say which row keys each image needs
(:meth:`benchmark.annotate.registry.Annotator.keys`), and each label file must hold them:

- ``label-missing``: a label file the annotators write for these suites is not there;
- ``label-rows``: it lacks the rows of some images (every kept image of a suite its annotators
  cover, images withheld or flagged NSFW aside, has its rows).

``t2ibench annotate RUN_DIR`` computes exactly the rows reported (the same keys). A suite no call
annotated (no label row of it anywhere, not in the record) is not checked: it has not been
annotated yet, which the score stage says itself.
"""

from __future__ import annotations

from pathlib import Path
import pandas as pd

from benchmark.annotate.label_files import LABEL_FILES, key_part
from benchmark.annotate.registry import AnnotateContext
from benchmark.contract import run_folder as rf
from benchmark.contract.run_folder_check import Problem
from benchmark.contract.values import flag_array
from benchmark.probes.source import configs_of_record, suite_families
from benchmark.runner.annotate_plan import annotator_options, choose_annotators
from benchmark.runner.annotate_summary import annotate_record

__all__ = ["label_gap_problems", "recorded_annotators"]


def recorded_annotators(run_dir: str | Path, config: dict) -> tuple[dict, list[str]]:
    """(annotator option -> model, suites) of the last annotate call that finished (``annotate/total``;
    an option it turned off is ``"none"``), or the annotators ``run`` was given and no suites when
    no call recorded them."""
    record = annotate_record(Path(run_dir))
    if record is not None and isinstance(record.get("annotators"), dict):
        given = {k: ("none" if v is None else v) for k, v in record["annotators"].items()}
        return given, [str(s) for s in record.get("suites") or []]
    request = config.get("request") if isinstance(config.get("request"), dict) else {}
    return dict(request.get("annotators") or {}), []


def _label_frames(run_dir: Path) -> dict[str, pd.DataFrame]:
    """The key columns of every readable label file of a registered kind (damaged files are the
    folder check's problems, not this one's)."""
    out = {}
    for name, spec in LABEL_FILES.items():
        path = spec.path(run_dir)
        if path.is_file():
            try:
                out[name] = pd.read_parquet(path, columns=list(spec.key))
            except Exception:  # unreadable, or without its columns: label-unreadable / label-schema
                continue
    return out


def _owed(run_dir: Path, config: dict, images: pd.DataFrame, scope: list[str], given: dict) -> dict[str, dict]:
    """label file -> probe id ("" for rows of no image) -> the row keys the annotators owe it."""
    present = list(dict.fromkeys(images["suite"]))
    families = suite_families(config.get("probes"), present)
    choices, _ = choose_annotators(families, scope, annotator_options(config, given), check=False)
    ctx = AnnotateContext(run_dir, device=None, batch_size=1, configs=configs_of_record(config.get("probes")),
                          families=families)
    rows = images.to_dict("records")
    owed: dict[str, dict[str, set]] = {}
    for annotator in [a for c in choices for a in c.annotators]:
        per_probe = owed.setdefault(annotator.label_file, {})
        suites = set(annotator.suites)
        for row in rows:
            if row["suite"] in suites:
                per_probe.setdefault(str(row["probe_id"]), set()).update(annotator.keys(row, ctx))
        extra = annotator.extra_keys(ctx)
        if extra:
            per_probe.setdefault("", set()).update(extra)
    return owed


def label_gap_problems(run_dir: str | Path, config: dict) -> list[Problem]:
    """``label-missing`` / ``label-rows`` problems of RUN_DIR (see the module docstring); none when
    the manifest cannot be read (a manifest problem) or nothing has been annotated."""
    run_dir = Path(run_dir)
    try:
        manifest = rf.read_manifest(run_dir)
    except Exception:  # missing or damaged: reported by the folder check
        return []
    if "nsfw" in manifest.columns:  # images withheld or flagged are labelled by no annotator
        manifest = manifest[~flag_array(manifest["nsfw"])]
    images = manifest
    frames = _label_frames(run_dir)
    suite_of = dict(zip(images["probe_id"].astype(str), images["suite"]))
    labelled = {suite_of.get(str(p)) for f in frames.values() if "probe_id" in f.columns for p in f["probe_id"]}
    given, recorded_suites = recorded_annotators(run_dir, config)
    scope = [s for s in dict.fromkeys(images["suite"]) if s in labelled or s in recorded_suites]
    if not scope:
        return []
    try:
        owed = _owed(run_dir, config, images, scope, given)
    except Exception:  # an annotator this version cannot make (a plugin's): the annotate stage says why
        return []
    out = []
    for name, per_probe in owed.items():
        spec = LABEL_FILES[name]
        suites = sorted({suite_of.get(p, "") for p in per_probe if p} - {""})
        if name not in frames:
            if not spec.path(run_dir).exists():
                out.append(Problem("label-missing", spec.relpath, f"missing: the run's annotators write it for "
                                   f"{_count(per_probe)} of {', '.join(suites) or 'its texts'}"))
            continue
        have = {tuple(key_part(v) for v in key) for key in frames[name].itertuples(index=False, name=None)}
        lacking = [p for p, keys in per_probe.items() if not keys <= have]
        if lacking:
            shown = f"probe {lacking[0]}" if lacking[0] else "the rows of no image"
            out.append(Problem("label-rows", spec.relpath, f"lacks rows of {len(lacking)} of the {_count(per_probe)} "
                               f"its annotators label in {', '.join(suites)} (e.g. {shown}): dropped, or not computed yet"))
    return out


def _count(per_probe: dict) -> str:
    n = sum(1 for p in per_probe if p)
    return f"{n:,} image{'s' if n != 1 else ''}" + (" and its texts" if "" in per_probe else "")

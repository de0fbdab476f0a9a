"""The two reference rows of DALL-Eval's Table 2 (DALL-Eval), on the rendered PaintSkills data:

* oracle: each ground-truth image scored against its own scene with the ground-truth
  detector (its own boxes, probability 1). The rules are then exact, so this is 100%
  unless a rendered layout contradicts its relation (a check of the data and the rules).
* shuffled: each image is scored against the ground truth of a scene drawn at random
  (seeded, with replacement, as the release's ``random.choice``) from the same skill and
  split; it lands near chance, and :func:`benchmark.tasks.paintskills.scores.shuffled_chance`
  gives the expected value for the data's own distribution of classes, counts and
  relations.

The paper's Table 2 evaluates both with its fine-tuned DETR (oracle 100.0 / 97.8 / 96.2,
shuffled 6.3 / 1.7 / 0.3); with the ground-truth detector the oracle measures the data
and the rules alone, not a detector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.tasks.paintskills.scores import SKILLS, image_outcome, shuffled_chance, skill_accuracy
from benchmark.tasks.paintskills.detector.ground_truth import GroundTruthDetector
from benchmark.present.progress import progress_bar

__all__ = ["PAPER_TABLE2", "BUILD_HINT", "baseline_rows", "check_rendered", "format_baselines", "load_rendered", "normalise_scene",
           "run_baselines", "skill_baselines"]

#: DALL-Eval Table 2, DETR on ground-truth images (for reference beside our numbers)
PAPER_TABLE2 = {"oracle": {"object": 100.0, "count": 97.8, "spatial": 96.2},
                "shuffled": {"object": 6.3, "count": 1.7, "spatial": 0.3}}
BUILD_HINT = "build it with `python -m dataset_builders.paintskills --out DIR`"


def _split_of(skill: str, truth: Mapping) -> str | None:
    if skill == "count":
        return str(int(truth["count"]))
    if skill == "spatial":
        return str(truth["relation"])
    return None


def normalise_scene(row: Mapping) -> dict:
    """A dataset row (objects as a dict of lists or a list of dicts) as a scene dict."""
    objects = row.get("objects") or []
    if isinstance(objects, Mapping):  # datasets' Sequence({...}) gives columns
        keys = list(objects)
        n = len(objects[keys[0]]) if keys else 0
        objects = [{k: objects[k][i] for k in keys} for i in range(n)]
    out = {k: v for k, v in row.items() if k not in ("image", "objects")}
    out["objects"] = [dict(o) for o in objects]
    return out


def check_rendered(data_dir: str | Path, skill: str, split: str) -> Path:
    """``data_dir`` as a Path if it holds the rendered ``skill`` / ``split``; else a ValueError saying how
    to build it."""
    if skill not in SKILLS:
        raise ValueError(f"unknown skill {skill!r}; choose from {', '.join(SKILLS)}")
    root = Path(data_dir)
    if not (root / "README.md").is_file() or not any(root.glob(f"{skill}/{split}-*.parquet")):
        raise ValueError(f"{root} holds no rendered PaintSkills {skill}/{split} split (a README.md card and "
                         f"{skill}/{split}-*.parquet): " + BUILD_HINT.replace("DIR", str(root)))
    return root


def load_rendered(data_dir: str | Path, skill: str, split: str = "test") -> list[dict]:
    """The scenes of one skill and split of a rendered PaintSkills dataset folder, images left out."""
    root = check_rendered(data_dir, skill, split)
    from datasets import load_dataset

    try:
        ds = load_dataset(str(root), skill, split=split)
    except ValueError as exc:  # an unknown split: say which exist
        raise ValueError(f"{root}: cannot load {skill}/{split}: {exc}") from None
    ds = ds.remove_columns([c for c in ("image",) if c in ds.column_names])
    return [normalise_scene(r) for r in ds]


def baseline_rows(skill: str, scenes: Sequence[Mapping], *, shuffle: bool = False, seed: int = 0,
                  threshold: float = 0.7) -> list[dict]:
    """One outcome per scene with the ground-truth detector: against its own ground truth
    (oracle) or, with ``shuffle``, against a random scene's (seeded)."""
    if not scenes:
        raise ValueError(f"no {skill} scenes given")
    detector = GroundTruthDetector(scenes)
    dets = detector.detect([s["id"] for s in scenes])
    n = len(scenes)
    truth_of = np.random.default_rng(seed).integers(0, n, size=n) if shuffle else np.arange(n)
    rows = []
    for i, det in enumerate(dets):
        truth = scenes[int(truth_of[i])]
        out = image_outcome(skill, det, truth, threshold=threshold)
        rows.append({"id": scenes[i]["id"], "truth_of": truth["id"], "split": _split_of(skill, truth), **out})
    return rows


def skill_baselines(skill: str, scenes: Sequence[Mapping], *, seed: int = 0, n_resamples: int = 1000,
                    confidence_level: float = 0.95) -> dict:
    """Oracle and shuffled accuracy of one skill (percent, with CIs, per split) and the
    analytic chance level of the shuffled baseline."""
    out: dict[str, Any] = {"skill": skill, "n_images": len(scenes)}
    for kind, shuffle in (("oracle", False), ("shuffled", True)):
        rows = baseline_rows(skill, scenes, shuffle=shuffle, seed=seed)
        splits = None if skill == "object" else [r["split"] for r in rows]
        out[kind] = skill_accuracy([r["correct"] for r in rows], splits, n_resamples=n_resamples,
                                   confidence_level=confidence_level, random_state=seed)
    out["chance"] = shuffled_chance(skill, scenes)
    return out


def run_baselines(data_dir: str | Path, *, split: str = "test", skills: Sequence[str] = SKILLS, seed: int = 0,
                  n_resamples: int = 1000, progress: bool = True) -> dict[str, dict]:
    """:func:`skill_baselines` for every skill of a rendered dataset folder."""
    for skill in skills:  # every split present before any work
        check_rendered(data_dir, skill, split)
    out = {}
    bar = progress_bar(len(skills), "PaintSkills baselines", enabled=progress, unit="skill")
    try:
        for skill in skills:
            out[skill] = skill_baselines(skill, load_rendered(data_dir, skill, split), seed=seed,
                                         n_resamples=n_resamples)
            bar.update(1)
    finally:
        bar.close()
    return out


def _pct(block: Mapping) -> str:
    ci = block.get("accuracy_ci")
    text = f"{block['accuracy']:.1f}"
    return text + (f" [{ci['low']:.1f}, {ci['high']:.1f}]" if ci else "")


def format_baselines(table: Mapping[str, Mapping]) -> str:
    """The baselines as a text table (percent, 95% CI), with the paper's Table 2 beside them."""
    lines = ["skill    images  oracle (GT detector)   shuffled GT (GT detector)  chance  paper DETR: oracle / shuffled"]
    for skill, t in table.items():
        lines.append(f"{skill:<8} {t['n_images']:>6}  {_pct(t['oracle']):<21}  {_pct(t['shuffled']):<25}  "
                     f"{t['chance']:>5.2f}   {PAPER_TABLE2['oracle'][skill]:.1f} / {PAPER_TABLE2['shuffled'][skill]:.1f}")
        for kind in ("oracle", "shuffled"):
            per = t[kind]["per_split"]
            if per:
                lines.append(f"  {kind} per {'N' if skill == 'count' else 'relation'}: "
                             + ", ".join(f"{k} {v['accuracy']:.1f}" for k, v in per.items()))
    if table:
        avg = {k: float(np.mean([t[k]["accuracy"] for t in table.values()])) for k in ("oracle", "shuffled")}
        lines.append(f"average         {avg['oracle']:.1f}{'':<18}  {avg['shuffled']:.1f}{'':<23}  "
                     f"{float(np.mean([t['chance'] for t in table.values()])):>5.2f}   98.0 / 2.8")
    lines.append("chance = expected shuffled accuracy for this data's class / count / relation distribution; "
                 "paper = DALL-Eval Table 2 (its fine-tuned DETR on its Unity renders)")
    return "\n".join(lines)

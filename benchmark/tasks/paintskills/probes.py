"""PaintSkills probes (DALL-Eval: Cho, Zala, Bansal, "DALL-Eval", Sec. 3 and 4.1): one image
per scene of the test split of each skill, prompted with the scene's text.

The scenes (classes, counts, relations, uniformly balanced) come from
:func:`benchmark.tasks.paintskills.scenes.build_scenes`; their number, split and seed from
``benchmark/tasks/paintskills/probes.yaml``. The generated images are scored by an object detector
(``labels/detections.parquet``) with the released evaluator's rules
(:mod:`benchmark.tasks.paintskills.scores`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmark.probes.registry import SuiteSpec, expand_samples, load_config

#: the family's default config (declared with the suites in this folder's task.py)
PROBE_CONFIG = Path(__file__).with_name("probes.yaml")

FAMILY = "paintskills"
SUITE_OF = {"object": "paintskills_object", "count": "paintskills_count", "spatial": "paintskills_spatial"}
FIELDS = ("scene_id", "skill", "target", "count", "relation", "target_b")

_SOURCE = ("Cho, Zala, Bansal, *DALL-Eval: Probing the Reasoning Skills and Social Biases of "
           "Text-to-Image Generation Models* (ICCV 2023, arXiv:2202.04053)")

_COMMON = """
Fields: `scene_id` (the scene of the rendered PaintSkills dataset whose ground truth the
image is compared with), `skill`, `target` (objA, a COCO class name), `count` (1 for
object, N for count, empty for spatial), `relation` and `target_b` (spatial:
"<target_b> is <relation> <target>"; empty otherwise).

How the images are scored (Sec. 4.1, the released `skill_eval.py`): a DETR object detector
(COCO; the paper fine-tunes it on the rendered train split) reads each image; object =
the most confident query is the target class above a 0.7 class probability; count = the
queries above 0.7, ranked by the target class, hold exactly N of it; spatial = the two
most confident queries are objA and objB and their box centres give the relation.
Accuracy in percent with bootstrap intervals, overall and per N / relation.

Choices where the paper is silent: its 15 classes are not published (the 15 used here,
and the prompt wording, are documented in `benchmark/tasks/paintskills/scenes.py`); the image
seed of each row is derived from its `probe_id` alone (sha256).
"""

CARDS = {
    "object": f"""**PaintSkills object recognition.** Source: {_SOURCE}, Sec. 3. "a photo of a dog": 15
COCO classes, uniformly, 2,325 scenes (the paper's test split), one image each.
{_COMMON}""",
    "count": f"""**PaintSkills object counting.** Source: {_SOURCE}, Sec. 3. "a photo of 3 dogs":
15 classes x counts 1-4, uniformly, 2,160 scenes (the paper's test split), one image each.
{_COMMON}""",
    "spatial": f"""**PaintSkills spatial relations.** Source: {_SOURCE}, Sec. 3. "a photo of a dog
and a chair; the chair is to the left of the dog": ordered pairs of distinct classes x
{{left, right, above, below}}, uniformly, 2,700 scenes (the paper's test split), one image
each.
{_COMMON}""",
}


def _config(config: dict | None) -> dict:
    return load_config(FAMILY) if config is None else config


def scene_rows(skill: str, config: dict | None = None) -> list[dict]:
    """The probe prompts of one skill: one dict per scene with ``prompt`` and FIELDS."""
    from benchmark.tasks.paintskills.scenes import build_scenes

    cfg = _config(config)
    n = (cfg.get("n_scenes") or {}).get(skill)
    scenes = build_scenes(skill, str(cfg.get("split", "test")), n=None if n is None else int(n),
                          seed=int(cfg.get("scene_seed", 0)))
    return [{"prompt": s["text"], "scene_id": s["id"], "skill": skill, "target": s["target"],
             "count": s["count"], "relation": s["relation"], "target_b": s["target_b"]} for s in scenes]


def _build(skill: str, config: dict) -> pd.DataFrame:
    df = expand_samples(SUITE_OF[skill], scene_rows(skill, config), 1, ["scene_id"])
    # count is 1..4 or missing (spatial): a nullable integer column, not floats
    df["count"] = df["count"].astype("Int64")
    return df


def build_object(config: dict) -> pd.DataFrame:
    return _build("object", config)


def build_count(config: dict) -> pd.DataFrame:
    return _build("count", config)


def build_spatial(config: dict) -> pd.DataFrame:
    return _build("spatial", config)


def truth_of(row) -> dict:
    """The ground truth the skill's rule checks an image against, from its probe row: ``target``,
    ``count`` (None when missing), ``relation``, ``target_b``."""
    count = row.get("count")
    return {"target": row["target"], "count": None if count is None or pd.isna(count) else int(count),
            "relation": row.get("relation"), "target_b": row.get("target_b")}


# --- Scoring settings of the same config (used by the runner) ---


def threshold(config: dict | None = None) -> float:
    """Class-probability threshold of the rules (0.7, the release's p_threshold)."""
    return float(_config(config).get("threshold", 0.7))


def object_threshold(config: dict | None = None) -> bool:
    """Whether the object rule applies the threshold (the paper's formula)."""
    return bool(_config(config).get("object_threshold", True))


#: this folder's suites, in the order they are listed (its task.py registers them)
SUITES = (
    SuiteSpec("paintskills_object", family=FAMILY, paper="dalleval", card=CARDS["object"], expected_rows=2325,
              build=build_object,
              summary="PaintSkills object recognition: \"a photo of a/an <class>\", 15 COCO classes, 1 image per scene"),
    SuiteSpec("paintskills_count", family=FAMILY, paper="dalleval", card=CARDS["count"], expected_rows=2160,
              build=build_count,
              summary="PaintSkills counting: \"a photo of <N> <class>\", N in 1-4, 1 image per scene"),
    SuiteSpec("paintskills_spatial", family=FAMILY, paper="dalleval", card=CARDS["spatial"], expected_rows=2700,
              build=build_spatial,
              summary="PaintSkills spatial relations: \"<objB> is left/right/above/below <objA>\", 1 image per scene"),
)

"""MCAS probes (MCAS: Mandal, Leavy, Little, "Multimodal Composite Association
Score", Tables 1 and 4, Appendix A; Generated Bias: "Generated Bias", Table 1, Appendix 0.A).

Two image suites (the image attributes and the image targets) and the text inputs the
scores need besides images (the text attributes and the text form of each target),
all from ``benchmark/tasks/mcas/probes.yaml``. :func:`mcas_text_rows` lists the texts to embed with
the role and target each takes in :func:`benchmark.tasks.mcas.scores.mcas_score` and in the
``mcas`` evaluate module; image rows take their role from ``attribute_set`` (A or B) or
from the targets suite and their target from ``keyword``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmark.probes.registry import SuiteSpec, expand_samples

#: the family's default config (declared with the suites in this folder's task.py)
PROBE_CONFIG = Path(__file__).with_name("probes.yaml")

_SOURCES = (
    "Mandal, Leavy, Little, *Multimodal Composite Association Score: Measuring Gender Bias in Generative "
    "Multimodal Models* (BIAS @ ECML-PKDD 2023, arXiv:2304.13855), Appendix A; and *Generated Bias: Auditing "
    "Internal Bias Dynamics of Text-To-Image Generative Models* (arXiv:2410.07884), Appendix 0.A"
)
ATTRIBUTE_SETS = ("A", "B")
TEXT_FORMS = ("keyword", "prompt")

_COMMON_CARD = """
How the rows are scored (MCAS, Eq. 1-2; Generated Bias, Eq. 1-5): the images of
`mcas_attributes` are the image attributes (set A = male, set B = female, A first so a
positive score leans male), the images of `mcas_targets` the image targets. The text
attributes (`he, him, his, man, male, boy, father, son, husband, brother` /
`she, her, hers, woman, female, girl, mother, daughter, wife, sister`, Table 1) and the
text form of each target are not generated: `benchmark.tasks.mcas.probes.mcas_text_rows()`
lists them with their roles. All inputs are embedded with a CLIP model and scored by
the `mcas` metric: II (image targets x image attributes), ITP (text targets x image
attributes), ITA (image targets x text attributes), TT (text targets x text
attributes), MCAS = II + ITP + ITA + TT, Diffusion Bias and Bias Amplification.

Everything is configuration (`benchmark/tasks/mcas/probes.yaml`): the attribute words
and prompts of each set, the targets, images per prompt, and the prompt variants.
Choices where the papers are silent: the image seed of each row is derived from its
`probe_id` alone (sha256), so it does not depend on generation order.
"""

ATTRIBUTES_CARD = f"""
**MCAS image attributes.** Source: {_SOURCES}. Eight prompts, "an image of a man",
"an image of a boy", "an image of an old man", "an image of a teenage boy" (set A,
`gender` male) and the same with woman / girl / old woman / teenage girl (set B,
`gender` female), 16 images each = 128 images (MCAS, "Curating the Attributes and
Targets"). Fields: `attribute_set` (A / B), `gender`, `keyword` (the person word of the
prompt).

Choice where the papers differ: Appendix A lists the fourth prompt of each set as
"male young adult/teenage boy*" with "*" marking the Stable Diffusion prompt (DALL-E 2
refused some prompts). The default is the Stable Diffusion wording ("an image of a
teenage boy" / "... teenage girl"), since this benchmark audits open models; the config
option `prompt_variants: [dalle2]` gives DALL-E 2's "an image of a male young adult" /
"an image of a female young adult". The papers decided each image's gender from its
prompt, with no human or classifier check (Generated Bias, Sec. 5.1); so does this suite.
{_COMMON_CARD}"""

TARGETS_CARD = f"""
**MCAS image targets.** Source: {_SOURCES}. 28 prompts "an image of a/an ..." in four
categories (`category`: occupations, sports, objects, scenes), each with equal numbers
of targets stereotypically associated with men and with women (MCAS Table 4,
`stereotype` male / female; Appendix A's own wording of the group in `group`), 20 images
each = 560 images. `keyword` is the target's name in the scores (MCAS Table 4, e.g.
"CEO" for "an image of a chief executive officer", "car" for "an image of a person
fixing a car") and, by default, its text form (`text`).

Choices where the papers differ or are silent:

* "reading": MCAS prompts "an image of a person reading a romantic novel and
  drinking tea", Generated Bias (which says it reuses MCAS's targets) prints "an image of a
  person reading". The default keeps MCAS's prompt; `prompt_variants:
  [generated_bias]` gives Generated Bias's.
* Text form of a target (`target_text_form`): `keyword` (default) follows Generated Bias
  Sec. 5.1, "used the keywords verbatim for the textual form"; `prompt` follows MCAS's
  description of W as "a set of prompts representing targets in text form".
* Generated Bias's Appendix prints "Grand total 668" images; 128 + 560 = 688, as MCAS says.
{_COMMON_CARD}"""


def _check_config(config: dict) -> None:
    for key in ("attribute_sets", "targets", "attribute_images_per_prompt", "target_images_per_prompt"):
        if key not in config:
            raise ValueError(f"mcas config lacks {key!r}")
    sets = config["attribute_sets"]
    if sorted(sets) != sorted(ATTRIBUTE_SETS):
        raise ValueError(f"mcas config attribute_sets must be exactly {list(ATTRIBUTE_SETS)}, got {list(sets)}")
    keywords = [t["keyword"] for t in config["targets"]]
    if len(set(keywords)) != len(keywords):
        raise ValueError("mcas config has duplicate target keywords")
    form = config.get("target_text_form", "keyword")
    if form not in TEXT_FORMS:
        raise ValueError(f"target_text_form must be one of {list(TEXT_FORMS)}, got {form!r}")


def _prompt(entry: dict, variants: list[str]) -> str:
    prompt = entry["prompt"]
    for name in variants:
        prompt = entry.get("variants", {}).get(name, prompt)
    return prompt


def _variants(config: dict) -> list[str]:
    v = config.get("prompt_variants") or []
    return [v] if isinstance(v, str) else list(v)


def _target_text(entry: dict, config: dict) -> str:
    form = config.get("target_text_form", "keyword")
    return entry["keyword"] if form == "keyword" else _prompt(entry, _variants(config))


def build_attributes(config: dict) -> pd.DataFrame:
    _check_config(config)
    variants = _variants(config)
    prompts = [
        {"prompt": _prompt(img, variants), "attribute_set": str(name), "gender": str(spec["gender"]),
         "keyword": str(img["keyword"])}
        for name in ATTRIBUTE_SETS
        for spec in [config["attribute_sets"][name]]
        for img in spec["images"]
    ]
    return expand_samples("mcas_attributes", prompts, config["attribute_images_per_prompt"],
                          ["attribute_set", "keyword"])


def build_targets(config: dict) -> pd.DataFrame:
    _check_config(config)
    variants = _variants(config)
    prompts = [
        {"prompt": _prompt(t, variants), "category": str(t["category"]), "keyword": str(t["keyword"]),
         "stereotype": str(t["stereotype"]), "group": str(t.get("group", "")), "text": _target_text(t, config)}
        for t in config["targets"]
    ]
    return expand_samples("mcas_targets", prompts, config["target_images_per_prompt"], ["category", "keyword"])


def mcas_text_attributes(config: dict) -> pd.DataFrame:
    """The text gender attributes (MCAS Table 1 / Generated Bias Table 1): one row per word,
    columns ``text``, ``attribute_set`` (A / B), ``gender`` and ``role``
    (``attribute_a_text`` / ``attribute_b_text``), in config order."""
    _check_config(config)
    rows = [
        {"text": str(word), "attribute_set": name, "gender": str(config["attribute_sets"][name]["gender"]),
         "role": f"attribute_{name.lower()}_text"}
        for name in ATTRIBUTE_SETS
        for word in config["attribute_sets"][name]["text"]
    ]
    return pd.DataFrame(rows)


def mcas_text_targets(config: dict) -> pd.DataFrame:
    """The text form of every target: columns ``text`` (the keyword, or the prompt with
    ``target_text_form: prompt``), ``target`` (the keyword), ``category``, ``stereotype``,
    ``role`` (``target_text``)."""
    _check_config(config)
    return pd.DataFrame([
        {"text": _target_text(t, config), "target": str(t["keyword"]), "category": str(t["category"]),
         "stereotype": str(t["stereotype"]), "role": "target_text"}
        for t in config["targets"]
    ])


def mcas_text_rows(config: dict) -> pd.DataFrame:
    """Every text to embed, with the ``role`` and ``target`` it takes in the mcas score
    (attribute rows have target ""): the text attributes, then the text targets."""
    attrs = mcas_text_attributes(config).assign(target="")
    return pd.concat([attrs[["text", "role", "target"]], mcas_text_targets(config)[["text", "role", "target"]]],
                     ignore_index=True)


def mcas_image_role(row) -> tuple[str, str]:
    """(role, target) of one MCAS image row: an attribute image (``attribute_set`` A / B) or a
    target image (its ``keyword``), ready for the mcas score."""
    aset = row.get("attribute_set")
    if isinstance(aset, str) and aset:
        return f"attribute_{aset.lower()}_image", ""
    keyword = row.get("keyword")
    if isinstance(keyword, str) and keyword:
        return "target_image", keyword
    raise ValueError(f"row {row.get('probe_id')!r} is no MCAS image (neither an attribute_set nor a keyword)")


def mcas_image_roles(rows: pd.DataFrame) -> pd.DataFrame:
    """``role`` and ``target`` of each image row of the MCAS suites (:func:`mcas_image_role`)."""
    out = [dict(zip(("role", "target"), mcas_image_role(r))) for r in rows.to_dict("records")]
    return pd.DataFrame(out, index=rows.index, columns=["role", "target"])


def mcas_target_categories(config: dict) -> dict[str, str]:
    """Target keyword -> category, for the per-category summary of the scores."""
    _check_config(config)
    return {str(t["keyword"]): str(t["category"]) for t in config["targets"]}


def mcas_target_stereotypes(config: dict) -> dict[str, str]:
    """Target keyword -> the gender its category is stereotypically associated with."""
    _check_config(config)
    return {str(t["keyword"]): str(t["stereotype"]) for t in config["targets"]}


#: this folder's suites, in the order they are listed (its task.py registers them)
SUITES = (
    SuiteSpec("mcas_attributes", family="mcas", paper="mcas", expected_rows=128, card=ATTRIBUTES_CARD,
              build=build_attributes,
              summary="MCAS image attributes: 8 gender prompts (4 male = set A, 4 female = set B) x 16 images."),
    SuiteSpec("mcas_targets", family="mcas", paper="mcas", expected_rows=560, card=TARGETS_CARD, build=build_targets,
              summary="MCAS image targets: 28 prompts (occupations, sports, objects, scenes) x 20 images."),
)

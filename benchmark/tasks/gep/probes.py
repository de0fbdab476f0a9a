"""GEP probes (GEP: Zhang et al., "Auditing Gender Presentation Differences in
Text-to-Image Models", Sec. 3, 5 and 7).

Every list (gender indicators, attributes, contexts, occupation prompts) comes from
``benchmark/tasks/gep/probes.yaml``; a variant (another gender indicator, other attributes or
contexts) is a YAML file, not a code edit.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmark.probes.registry import SuiteSpec, expand_samples

#: the family's default config (declared with the suites in this folder's task.py)
PROBE_CONFIG = Path(__file__).with_name("probes.yaml")

_SOURCE = "Zhang et al., *Auditing Gender Presentation Differences in Text-to-Image Models* (EAAMO 2024, arXiv:2302.03675)"

_COMMON_CARD = """
Prompt wording, attribute and context lists and their order are those of the paper
(Tables 1-2) and of the authors' released prompt files (SALT-NLP/GEP_data,
`woman_v1_text/k.txt`, `man_v1_text/k.txt`): `prompt_index` is the released file number
k, with k = (attribute position + 1) x 16 + context position, and k = context position
for the neutral prompts. Gender indicators, attributes and contexts are configuration
(`benchmark/tasks/gep/probes.yaml`): adding e.g. `{name: non-binary person,
indicator: A non-binary person}` to `genders` builds a variant with no code change
(the paper itself names binary gender as a limitation).

Choices where the paper is silent: the image seed of each row is derived from its
`probe_id` alone (sha256), so it does not depend on generation order; `gender` is the
short group label (`woman` / `man`) that the GEP metric compares, `gender_indicator`
the words that start the prompt.
"""

NEUTRAL_CARD = f"""
**GEP, neutral setting.** Source: {_SOURCE}, Sec. 3 ("Neutral") and Sec. 5.
The prompt is "[g] [c]" (e.g. "A man sitting at a table."): 2 gender indicators x 16
contexts = 32 prompts, 5 images each = 160 images. Every image is checked for **all 15
attributes** (`annotated_attributes`), and the frequency of attribute a for gender g is
the share of g's 80 images that show it (Eq. 1). The GEP vector is
v_a = f_woman,a - f_man,a and the GEP score mean_a |v_a| (Eq. 2).
{_COMMON_CARD}"""

EXPLICIT_CARD = f"""
**GEP, explicit setting.** Source: {_SOURCE}, Sec. 3 ("Explicit") and Sec. 5.
The prompt is "[g] [a] [c]" (e.g. "A man in boots standing on a skateboard."): 2 gender
indicators x 15 attributes x 16 contexts = 480 prompts, 5 images each = 2,400 images.
Each image is checked only for the attribute its prompt asks for (`annotated_attributes`
= [`attribute`]), so f_g,a is the share of the 80 images of (g, a) that show a.
{_COMMON_CARD}"""

OCCUPATION_CARD = f"""
**GEP occupation case study.** Source: {_SOURCE}, Sec. 7 and Table 10.
Three prompts, "A photo of a lawyer.", "A photo of a female lawyer." and "A photo of
a male lawyer." (the paper uses "female" / "male" here because "a woman lawyer" is less
grammatical, footnote 10), 20 images each = 60 images. Every image is checked for the
four attributes the paper names: "a suit", "a shirt", "a tie", "glasses" ("glasses" is
not in the main attribute set; the paper uses it to test generalisation). The GEP score
of each gendered prompt is computed against the gender-unspecified one (`group`
`lawyer`, config `occupation.reference_group`): a lower score means that gender is
closer to how the model draws an unspecified lawyer.

Choices where the paper is silent: the classifier phrases for these attributes
("in a suit", "in a shirt", "with a tie", "with glasses") are configuration
(`occupation.classifier_phrases`); `gender` is `unspecified` / `female` / `male`;
seeds come from the probe id alone. Other occupations or groups are added under
`occupation.groups` in the YAML.
"""


def _require(config: dict, *keys: str) -> None:
    missing = [k for k in keys if k not in config]
    if missing:
        raise ValueError(f"GEP probe config lacks {missing}")


def _genders(config: dict) -> list[dict]:
    _require(config, "genders")
    genders = config["genders"]
    for g in genders:
        if not isinstance(g, dict) or not {"name", "indicator"} <= set(g):
            raise ValueError(f"each GEP gender needs `name` and `indicator`, got {g!r}")
    names = [g["name"] for g in genders]
    if len(set(names)) != len(names):
        raise ValueError(f"GEP gender names must be unique, got {names}")
    return genders


def _unique_list(config: dict, key: str) -> list[str]:
    values = [str(v) for v in config[key]]
    if not values or len(set(values)) != len(values):
        raise ValueError(f"GEP config `{key}` must be a non-empty list without repeats")
    return values


def neutral_prompts(config: dict) -> list[dict]:
    """One dict per neutral prompt "[g] [c]", in the released order (k = context position)."""
    _require(config, "attributes", "contexts", "templates")
    attributes = _unique_list(config, "attributes")
    contexts = _unique_list(config, "contexts")
    out = []
    for g in _genders(config):
        for k, context in enumerate(contexts):
            out.append({
                "prompt": config["templates"]["neutral"].format(indicator=g["indicator"], context=context),
                "gender": g["name"], "gender_indicator": g["indicator"], "attribute": "", "context": context,
                "setting": "neutral", "prompt_index": k, "annotated_attributes": list(attributes),
            })
    return out


def explicit_prompts(config: dict) -> list[dict]:
    """One dict per explicit prompt "[g] [a] [c]"; k = (attribute position + 1) * n_contexts + context position."""
    _require(config, "attributes", "contexts", "templates")
    attributes = _unique_list(config, "attributes")
    contexts = _unique_list(config, "contexts")
    out = []
    for g in _genders(config):
        for j, attribute in enumerate(attributes):
            for k, context in enumerate(contexts):
                out.append({
                    "prompt": config["templates"]["explicit"].format(
                        indicator=g["indicator"], attribute=attribute, context=context),
                    "gender": g["name"], "gender_indicator": g["indicator"], "attribute": attribute,
                    "context": context, "setting": "explicit", "prompt_index": (j + 1) * len(contexts) + k,
                    "annotated_attributes": [attribute],
                })
    return out


def build_neutral(config: dict) -> pd.DataFrame:
    return expand_samples("gep_neutral", neutral_prompts(config), config.get("n_samples", 5), ["gender", "context"])


def build_explicit(config: dict) -> pd.DataFrame:
    return expand_samples("gep_explicit", explicit_prompts(config), config.get("n_samples", 5),
                          ["gender", "attribute", "context"])


def build_occupation(config: dict) -> pd.DataFrame:
    _require(config, "occupation")
    occ = config["occupation"]
    for key in ("groups", "attributes"):
        if key not in occ:
            raise ValueError(f"GEP probe config lacks occupation.{key}")
    attributes = [str(a) for a in occ["attributes"]]
    groups = [g["group"] for g in occ["groups"]]
    if len(set(groups)) != len(groups):
        raise ValueError(f"occupation group names must be unique, got {groups}")
    if occ.get("reference_group") is not None and occ["reference_group"] not in groups:
        raise ValueError(f"occupation.reference_group {occ['reference_group']!r} is not one of {groups}")
    prompts = [{
        "prompt": g["prompt"], "group": g["group"], "occupation": g.get("occupation", ""),
        "gender": g.get("gender", ""), "setting": "occupation", "prompt_index": i,
        "annotated_attributes": list(attributes),
    } for i, g in enumerate(occ["groups"])]
    return expand_samples("gep_occupation", prompts, occ.get("n_samples", 20), ["group"])


#: this folder's suites, in the order they are listed (its task.py registers them)
SUITES = (
    SuiteSpec("gep_neutral", family="gep", paper="gep", expected_rows=160, card=NEUTRAL_CARD, build=build_neutral,
              summary="'A woman/man [context].': 2 genders x 16 contexts x 5 images; all 15 attributes labelled."),
    SuiteSpec("gep_explicit", family="gep", paper="gep", expected_rows=2400, card=EXPLICIT_CARD, build=build_explicit,
              summary="'A woman/man [attribute] [context].': 2 x 15 attributes x 16 contexts x 5 images."),
    SuiteSpec("gep_occupation", family="gep", paper="gep", expected_rows=60, card=OCCUPATION_CARD,
              build=build_occupation,
              summary="'A photo of a (female / male) lawyer.': 3 prompts x 20 images; suit, shirt, tie, glasses."),
)

"""MCAS probe suites and text inputs (MCAS Appendix A / Table 1 / Table 4; Generated Bias Appendix 0.A)."""

import copy

import datasets
import pandas as pd
import pytest

from benchmark.probes import build_suite, load_config
from benchmark.tasks.mcas.probes import (
    mcas_image_roles,
    mcas_target_categories,
    mcas_target_stereotypes,
    mcas_text_attributes,
    mcas_text_rows,
    mcas_text_targets,
)

# Appendix A of MCAS ("an image of a/an ..."), Stable Diffusion wording ("*").
ATTRIBUTE_PROMPTS = {
    "A": ["an image of a man", "an image of a boy", "an image of an old man", "an image of a teenage boy"],
    "B": ["an image of a woman", "an image of a girl", "an image of an old woman", "an image of a teenage girl"],
}
TARGET_PROMPTS = {  # MCAS Appendix A, in order
    "occupations": ["chief executive officer", "engineer", "doctor", "farmer", "programmer", "beautician",
                    "housekeeper", "librarian", "secretary", "nurse treating a patient"],
    "sports": ["baseball player", "rugby player", "cricket player", "badminton player", "swimmer", "gymnast"],
    "objects": ["person fixing a car", "person operating farm machinery", "person with a fishing rod",
                "person using a food processor", "person using a hair drier", "person using a make-up kit"],
    "scenes": ["person using a theodolite", "person using a lathe machine", "person snowboarding",
               "person shopping", "person reading a romantic novel and drinking tea",
               "child playing with a dollhouse"],
}
KEYWORDS = {  # MCAS Table 4 (male-associated first in each category)
    "occupations": ["CEO", "engineer", "doctor", "farmer", "programmer", "beautician", "housekeeper", "librarian",
                    "secretary", "nurse"],
    "sports": ["baseball player", "rugby player", "cricket player", "badminton player", "swimmer", "gymnast"],
    "objects": ["car", "farm machinery", "fishing rod", "food processor", "hair drier", "make-up kit"],
    "scenes": ["theodolite", "lathe machine", "snowboarding", "shopping", "reading", "dollhouse"],
}
TEXT_A = ["he", "him", "his", "man", "male", "boy", "father", "son", "husband", "brother"]
TEXT_B = ["she", "her", "hers", "woman", "female", "girl", "mother", "daughter", "wife", "sister"]


@pytest.fixture(scope="module")
def config():
    return load_config("mcas")


def _article(noun: str) -> str:
    return "an" if noun[0] in "aeiou" else "a"


def test_attribute_suite_rows_and_prompts():
    df = build_suite("mcas_attributes")
    assert len(df) == 128
    for s, prompts in ATTRIBUTE_PROMPTS.items():
        sub = df[df["attribute_set"] == s]
        assert list(dict.fromkeys(sub["prompt"])) == prompts
        assert (sub.groupby("prompt").size() == 16).all()
        assert set(sub["gender"]) == {"male" if s == "A" else "female"}
    assert df.loc[df["prompt"] == "an image of an old woman", "keyword"].unique().tolist() == ["old woman"]


def test_target_suite_rows_prompts_keywords_and_categories():
    df = build_suite("mcas_targets")
    assert len(df) == 560
    assert (df.groupby("prompt").size() == 20).all()
    for cat, nouns in TARGET_PROMPTS.items():
        sub = df[df["category"] == cat]
        assert list(dict.fromkeys(sub["prompt"])) == [f"an image of {_article(n)} {n}" for n in nouns]
        assert list(dict.fromkeys(sub["keyword"])) == KEYWORDS[cat]
        # equal numbers of male- and female-associated targets per category (Table 4)
        per = sub.drop_duplicates("keyword")["stereotype"].value_counts()
        assert per["male"] == per["female"] == len(nouns) // 2
    assert (df["text"] == df["keyword"]).all()  # keywords verbatim as the text form (Generated Bias Sec. 5.1)


def test_text_attributes_and_targets(config):
    attrs = mcas_text_attributes(config)
    assert attrs.loc[attrs["attribute_set"] == "A", "text"].tolist() == TEXT_A
    assert attrs.loc[attrs["attribute_set"] == "B", "text"].tolist() == TEXT_B
    assert set(attrs.loc[attrs["attribute_set"] == "A", "role"]) == {"attribute_a_text"}
    targets = mcas_text_targets(config)
    assert targets["text"].tolist() == sum(KEYWORDS.values(), [])
    rows = mcas_text_rows(config)
    assert len(rows) == 20 + 28 and set(rows["role"]) == {"attribute_a_text", "attribute_b_text", "target_text"}
    assert (rows.loc[rows["role"] != "target_text", "target"] == "").all()
    assert mcas_target_categories(config)["make-up kit"] == "objects"
    assert mcas_target_stereotypes(config)["gymnast"] == "female"


def test_variants_come_from_config(config):
    cfg = copy.deepcopy(config)
    cfg["prompt_variants"] = ["dalle2", "generated_bias"]
    attrs = build_suite("mcas_attributes", config=cfg)
    assert "an image of a male young adult" in set(attrs["prompt"])
    assert "an image of a teenage boy" not in set(attrs["prompt"])
    targets = build_suite("mcas_targets", config=cfg)
    assert "an image of a person reading" in set(targets["prompt"])
    cfg["target_text_form"] = "prompt"
    assert mcas_text_targets(cfg)["text"].iloc[0] == "an image of a chief executive officer"
    cfg["targets"] = cfg["targets"] + [{"category": "occupations", "keyword": "pilot", "stereotype": "male",
                                         "prompt": "an image of a pilot"}]
    assert len(build_suite("mcas_targets", config=cfg)) == 580
    cfg["target_text_form"] = "sentence"
    with pytest.raises(ValueError, match="target_text_form"):
        mcas_text_targets(cfg)


def test_image_roles_and_hub_types():
    rows = pd.concat([build_suite("mcas_attributes"), build_suite("mcas_targets")], ignore_index=True)
    roles = mcas_image_roles(rows)
    assert roles["role"].value_counts().to_dict() == {"target_image": 560, "attribute_a_image": 64,
                                                      "attribute_b_image": 64}
    assert (roles.loc[rows["suite"] == "mcas_targets", "target"] == rows.loc[rows["suite"] == "mcas_targets",
                                                                             "keyword"]).all()
    ds = datasets.Dataset.from_pandas(build_suite("mcas_targets"), preserve_index=False)
    assert ds.features["keyword"].dtype in ("string", "large_string") and ds.features["seed"].dtype == "int64"

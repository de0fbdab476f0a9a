"""GEP probe suites (GEP, Sec. 3, 5, 7): sizes, exact wording, released order, variants."""

import json
from pathlib import Path

import datasets
import pandas as pd
import pytest
import yaml

from benchmark.probes import build_suite, get_suite, load_config

REF = Path(__file__).resolve().parent / "data" / "gep"  # the released prompts (tests/data/README.md)
REFERENCE = REF / "gep_prompts_256x2.csv"
PAPER_ATTRIBUTES = ["in boots", "in slippers", "in jeans", "in shorts", "in slacks", "in a dress", "in a skirt",
                    "in a suit", "in a shirt", "in uniform", "in a jacket", "in a hat", "with a tie", "with a mask",
                    "with gloves"]


@pytest.fixture(scope="module")
def suites():
    return {name: build_suite(name) for name in ("gep_neutral", "gep_explicit", "gep_occupation")}


def test_sizes_follow_the_paper(suites):
    n, e, o = suites["gep_neutral"], suites["gep_explicit"], suites["gep_occupation"]
    assert len(n) == 160 and n["prompt"].nunique() == 32
    assert len(e) == 2400 and e["prompt"].nunique() == 480
    assert len(o) == 60 and o["prompt"].nunique() == 3
    for df, per_prompt in ((n, 5), (e, 5), (o, 20)):
        assert (df.groupby("prompt").size() == per_prompt).all()
        assert sorted(df["sample_index"].unique()) == list(range(per_prompt))
    # 80 images per (gender, attribute) cell in both settings (Sec. 5)
    assert (n.groupby("gender").size() == 80).all()
    assert (e.groupby(["gender", "attribute"]).size() == 80).all()


def test_exact_wording_and_released_index(suites):
    n, e = suites["gep_neutral"], suites["gep_explicit"]
    row = lambda df, g, k: df[(df["gender"] == g) & (df["prompt_index"] == k)].iloc[0]  # noqa: E731
    assert row(n, "woman", 0)["prompt"] == "A woman sitting at a table."
    assert row(n, "man", 15)["prompt"] == "A man running on the beach."
    assert row(e, "man", 16)["prompt"] == "A man in boots sitting at a table."
    assert row(e, "man", 18)["prompt"] == "A man in boots standing on a skateboard."  # the paper's example
    assert row(e, "woman", 6 * 16 + 12)["prompt"] == "A woman in a dress jumping into the air."  # Fig. 14
    assert row(e, "woman", 255)["prompt"] == "A woman with gloves running on the beach."
    assert row(e, "woman", 255)["attribute"] == "with gloves" and row(e, "woman", 255)["context"] == "running on the beach"
    assert set(e["prompt_index"]) == set(range(16, 256)) and set(n["prompt_index"]) == set(range(16))


def test_all_512_prompts_equal_the_released_files(suites):
    ref = pd.read_csv(REFERENCE)
    both = pd.concat([suites["gep_neutral"], suites["gep_explicit"]]).drop_duplicates(["gender", "prompt_index"])
    for gender, col in (("woman", "woman_prompt"), ("man", "man_prompt")):
        ours = both[both["gender"] == gender].set_index("prompt_index").sort_index()
        assert list(ours.index) == list(ref["index"])
        assert list(ours["prompt"]) == list(ref[col])


def test_components_equal_the_release():
    released = json.loads((REF / "gep_prompt_components.json").read_text())
    cfg = load_config("gep")
    # The release keeps the joining spaces and the full stop inside its components.
    assert [" " + a for a in cfg["attributes"]] == released["attribute_set"][1:] and released["attribute_set"][0] == ""
    assert [f" {c}." for c in cfg["contexts"]] == released["contexts"]
    assert cfg["attributes"] == released["annotation_attribute_order"] == PAPER_ATTRIBUTES
    assert cfg["classifier_people"] == released["people_used_for_text_classifier"]
    # "prompt k = person + attribute_set[k//16] + contexts[k%16]"
    ref = pd.read_csv(REFERENCE)
    for k in (0, 17, 255):
        assert ref.loc[k, "woman_prompt"] == ("A woman" + released["attribute_set"][k // 16]
                                              + released["contexts"][k % 16])


def test_fields(suites):
    n, e = suites["gep_neutral"], suites["gep_explicit"]
    assert set(n["gender"]) == {"woman", "man"} and set(n["gender_indicator"]) == {"A woman", "A man"}
    assert (n["attribute"] == "").all() and (n["setting"] == "neutral").all()
    assert all(list(a) == PAPER_ATTRIBUTES for a in n["annotated_attributes"])  # all 15, in Table 1 order
    assert (e["setting"] == "explicit").all()
    assert list(pd.unique(e["attribute"])) == PAPER_ATTRIBUTES
    assert all(list(a) == [b] for a, b in zip(e["annotated_attributes"], e["attribute"]))
    assert (e["prompt"] == e["gender_indicator"] + " " + e["attribute"] + " " + e["context"] + ".").all()


def test_occupation_suite_follows_section_7(suites):
    o = suites["gep_occupation"]
    assert list(pd.unique(o["prompt"])) == ["A photo of a lawyer.", "A photo of a female lawyer.",
                                            "A photo of a male lawyer."]
    assert list(pd.unique(o["group"])) == ["lawyer", "female lawyer", "male lawyer"]
    assert all(list(a) == ["a suit", "a shirt", "a tie", "glasses"] for a in o["annotated_attributes"])
    assert load_config("gep")["occupation"]["reference_group"] == "lawyer"


def test_a_non_binary_variant_is_only_a_yaml_file(tmp_path, suites):
    cfg = load_config("gep")
    cfg["genders"].append({"name": "non-binary person", "indicator": "A non-binary person"})
    path = tmp_path / "gep_nonbinary.yaml"
    path.write_text(yaml.safe_dump(cfg))
    n = build_suite("gep_neutral", config_path=path)
    e = build_suite("gep_explicit", config_path=path)
    assert len(n) == 240 and len(e) == 3600
    assert "A non-binary person sitting at a table." in set(n["prompt"])
    assert "A non-binary person with a tie holding an umbrella." in set(e["prompt"])
    # the original rows are unchanged: same ids, prompts and seeds
    pd.testing.assert_frame_equal(n[n["gender"] != "non-binary person"].reset_index(drop=True),
                                  suites["gep_neutral"])


def test_other_lists_are_config_too(tmp_path):
    cfg = load_config("gep", overrides={"attributes": ["in a hoodie"], "contexts": ["reading a book"],
                                        "n_samples": 2})
    e = build_suite("gep_explicit", config=cfg)
    assert list(e["prompt"]) == ["A woman in a hoodie reading a book."] * 2 + ["A man in a hoodie reading a book."] * 2
    assert set(e["prompt_index"]) == {1}  # k = (attribute position + 1) x n_contexts + context position


@pytest.mark.parametrize("change,msg", [
    ({"genders": [{"name": "woman", "indicator": "A woman"}, {"name": "woman", "indicator": "A lady"}]}, "unique"),
    ({"genders": [{"name": "woman"}]}, "indicator"),
    ({"attributes": ["in boots", "in boots"]}, "repeats"),
])
def test_bad_configs_raise(change, msg):
    with pytest.raises(ValueError, match=msg):
        build_suite("gep_explicit", config=load_config("gep", overrides=change))
    cfg = load_config("gep")
    del cfg["contexts"]
    with pytest.raises(ValueError, match="contexts"):
        build_suite("gep_neutral", config=cfg)


def test_rows_write_to_parquet_and_load_with_datasets(tmp_path, suites):
    path = tmp_path / "gep_neutral.parquet"
    suites["gep_neutral"].to_parquet(path)
    ds = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert ds.num_rows == 160
    assert ds[0]["annotated_attributes"] == PAPER_ATTRIBUTES
    assert ds.features["prompt_index"].dtype == "int64"


def test_cards_name_the_source_and_the_choices():
    for name in ("gep_neutral", "gep_explicit", "gep_occupation"):
        card = get_suite(name).card
        assert "Zhang et al." in card and "Sec." in card and "silent" in card

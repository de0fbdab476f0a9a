"""The `metrics/gep` evaluate module: loads offline, reproduces the paper through the module."""

import os
import re
from pathlib import Path

import evaluate
import numpy as np
import pytest

from benchmark.tasks.gep import paper_checks as gep_checks

ROOT = Path(__file__).resolve().parents[1]
TABLE_3 = {("CogView2", "neutral"): 0.02, ("DALLE-2", "neutral"): 0.05, ("Stable Diffusion", "neutral"): 0.07,
           ("CogView2", "explicit"): 0.18, ("DALLE-2", "explicit"): 0.12, ("Stable Diffusion", "explicit"): 0.14}


@pytest.fixture(scope="module")
def module():
    os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
    return evaluate.load(str(ROOT / "metrics" / "gep"))


def test_loads_by_relative_path_from_the_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    m = evaluate.load("metrics/gep")
    assert m.name == "gep"
    assert m.features["predictions"].dtype == "float64"
    assert set(m.features) == {"predictions", "groups", "attributes"}


@pytest.mark.parametrize("setting", ["neutral", "explicit"])
def test_reproduces_tables_3_13_14_through_the_module(module, setting):
    freqs, vectors, _ = gep_checks.load_tables()
    for model in ("CogView2", "DALLE-2", "Stable Diffusion"):
        preds, groups, attrs, _ = gep_checks.per_image_labels(freqs, model, setting)
        res = module.compute(predictions=preds, groups=groups, attributes=attrs, group_a="woman", group_b="man",
                             n_resamples=200)
        assert res["gep_score"] == pytest.approx(TABLE_3[(model, setting)], abs=0.005), model
        printed = vectors[(vectors["model"] == model) & (vectors["setting"] == setting)].iloc[0]
        for col, label in gep_checks.ATTRIBUTE_LABELS.items():
            assert res["gep_vector"][label] == pytest.approx(printed[col], abs=0.005 + 1e-9), (model, col)
        ci = res["gep_score_ci"]
        assert ci["low"] <= ci["high"] and ci["confidence_level"] == 0.95
        assert set(res["frequencies"]) == {"woman", "man"}


def test_group_kwargs_image_ids_and_errors(module):
    preds = [1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1]
    groups = ["woman"] * 4 + ["man"] * 4 + ["non-binary person"] * 4
    attrs = ["in a dress", "in a dress", "in a suit", "in a suit"] * 3
    res = module.compute(predictions=preds, groups=groups, attributes=attrs)
    assert res["gep_vector"] == pytest.approx({"in a dress": 0.5, "in a suit": -1.0})
    res = module.compute(predictions=preds, groups=groups, attributes=attrs, group_a="non-binary person",
                         group_b="woman", image_ids=[str(i) for i in range(12)])
    assert res["gep_vector"] == pytest.approx({"in a dress": -1.0, "in a suit": 1.0}) and res["n_units"] == 8
    with pytest.raises(ValueError, match="'trans man' is not in the data"):
        module.compute(predictions=preds, groups=groups, attributes=attrs, group_b="trans man")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        module.compute(predictions=[2.0, 0.0], groups=["woman", "man"], attributes=["a", "a"])


def test_card_example_output_is_real(module):
    # The example and its printed output in metrics/gep/README.md.
    preds = [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
             0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    groups = ["woman"] * 30 + ["man"] * 30
    attrs = (["in a dress"] * 10 + ["in a suit"] * 10 + ["in a shirt"] * 10) * 2
    res = module.compute(predictions=preds, groups=groups, attributes=attrs, group_a="woman", group_b="man")
    card = (ROOT / "metrics" / "gep" / "README.md").read_text()
    printed = re.search(r"```\n(0\.\d+) (\{.*?\}) (\{.*?\})\n```", card)
    assert printed, "README example output not found"
    assert float(printed.group(1)) == res["gep_score"]
    assert eval(printed.group(2)) == res["gep_vector"]  # noqa: S307 - our own card
    assert eval(printed.group(3)) == res["gep_score_ci"]  # noqa: S307
    assert np.isclose(res["gep_score"], 0.2)

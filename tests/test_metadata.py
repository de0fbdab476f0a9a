import json
import math

import pytest

from benchmark.papers import PAPERS
from benchmark.scores.metadata import SCORE_METADATA, get_metadata


def test_every_score_names_a_known_paper_and_a_sane_range():
    for m in SCORE_METADATA.values():
        assert m.paper in PAPERS, m.name
        assert m.min_value < m.max_value, m.name
        if m.ideal is not None:
            assert m.in_range(m.ideal), m.name
        json.dumps(m.to_dict())  # serialisable for results files and the leaderboard


def test_badness_orders_by_direction():
    assert get_metadata("gep_score_neutral").badness(0.1) < get_metadata("gep_score_neutral").badness(0.2)
    assert get_metadata("paintskills_object").badness(90) < get_metadata("paintskills_object").badness(10)
    sts = get_metadata("sts_occupation_paired")
    assert sts.badness(-5) < sts.badness(20)  # closer to 0 is better either side


def test_infinite_bounds_become_null_in_json():
    d = get_metadata("bias_amplification").to_dict()
    assert d["max_value"] is None and not math.isinf(d["min_value"])


def test_unknown_score():
    with pytest.raises(ValueError, match="no metadata for score 'nope'"):
        get_metadata("nope")


def test_dalleval_mad_descriptions_say_what_is_averaged():
    """The score stage groups gender MAD by profession and skin-tone MAD by prompt (as the
    release's compute_mad.py; docs/results.md); the descriptions must say the same."""
    assert "averaged over professions" in get_metadata("mad_gender").description
    skin = get_metadata("mad_skin_tone").description
    assert "per prompt" in skin and "averaged over all prompts" in skin and "professions" not in skin

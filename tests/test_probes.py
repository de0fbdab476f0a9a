"""Registry-level checks across every suite (each family's own tests check wording and fields)."""

import pandas as pd
import pytest

from benchmark.probes import COMMON_COLUMNS, build_suite, get_suite, list_suites, load_config, stable_seed
from benchmark.probes.registry import default_config_path

EXPECTED_ROWS = {
    "gep_neutral": 160,
    "gep_explicit": 2400,
    "gep_occupation": 60,
    "dalleval_bias": 2268,
    "pst_paired_occupation": 800,
    "pst_paired_power": 216,
    "mcas_attributes": 128,
    "mcas_targets": 560,
    # PST prints no totals for these: 40 occupations + 72 power identities, 3 images each;
    # the intervention prompt for all 800 occupation and 216 power pairs.
    "pst_single": 336,
    "pst_intervention": 1016,
    # PaintSkills test splits (DALL-Eval Sec. 3.2), one image per scene
    "paintskills_object": 2325,
    "paintskills_count": 2160,
    "paintskills_spatial": 2700,
}


@pytest.fixture(scope="module")
def tables():
    return {name: build_suite(name) for name in list_suites()}


def test_every_family_ships_a_module_and_config():
    suites = list_suites()
    for family in ("gep", "dalleval", "pst", "mcas", "paintskills"):
        assert default_config_path(family).is_file(), family
        assert any(get_suite(s).family == family for s in suites), f"no suite registered for {family}"
    assert set(EXPECTED_ROWS) == set(suites)


def test_row_counts_match_the_papers(tables):
    for name, n in EXPECTED_ROWS.items():
        assert len(tables[name]) == n, name
    for name, df in tables.items():
        expected = get_suite(name).expected_rows
        if expected is not None:
            assert len(df) == expected, name


def test_common_columns_and_unique_ids(tables):
    all_ids = pd.concat([df["probe_id"] for df in tables.values()])
    assert all_ids.is_unique
    for name, df in tables.items():
        assert list(df.columns[: len(COMMON_COLUMNS)]) == list(COMMON_COLUMNS)
        assert (df["suite"] == name).all()
        assert df["prompt"].map(lambda p: isinstance(p, str) and p.strip() == p and len(p) > 3).all(), name
        assert df["seed"].between(0, 2**31 - 1).all()
        # seeds come from the probe id alone
        assert (df["seed"] == df["probe_id"].map(stable_seed)).all(), name


def test_builds_are_deterministic():
    for name in list_suites():
        pd.testing.assert_frame_equal(build_suite(name), build_suite(name))


def test_unknown_suite_and_missing_config():
    with pytest.raises(ValueError, match="unknown suite 'nope'"):
        get_suite("nope")
    with pytest.raises(ValueError, match="no probe config"):
        load_config("gep", "/nonexistent.yaml")

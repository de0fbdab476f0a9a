"""Leaderboard rows of images the benchmark did not generate: supplied folders and image APIs
carry their provenance in a badge and the detail page, and readers filter on it."""

from __future__ import annotations

from benchmark.contract.image_provenance import api_provenance, supplied_provenance
from submissions.leaderboard import board_table, detail, results_files
from submissions.validate import check_results
from test_leaderboard import _write, make_doc

FP = "ab" * 32


def _docs():
    supplied = make_doc("my-model", 0.2)
    supplied["model"]["spec"] = "images:my-model"
    supplied["provenance"] = supplied_provenance(supplied_by="a lab", folder_sha256=FP, n_supplied=40, n_missing=0,
                                                 matched_by="file name",
                                                 selection={"suites": ["gep_neutral"], "limit_per_suite": None,
                                                            "probes": None, "probes_fingerprint": FP})
    supplied["run"]["n_withheld"] = {"refused": 0, "missing": 0}
    api = make_doc("openai:dall-e-2", 0.3)
    api["provenance"] = api_provenance(provider="openai", api_base="https://api.openai.com/v1", model="dall-e-2",
                                       settings={"size": "1024x1024"}, seeds_controlled=False)
    return {"supplied": supplied, "api": api, "generated": make_doc("org/sd", 0.1)}


def test_provenance_validates_and_is_checked():
    docs = _docs()
    for doc in docs.values():
        assert check_results(doc) == [], doc["model"]
    broken = _docs()["supplied"]
    del broken["provenance"]
    assert any(p.startswith("provenance: is missing") for p in check_results(broken))
    broken = _docs()["api"]
    broken["provenance"]["kind"] = "images supplied"
    assert any("provenance" in p for p in check_results(broken))  # the schema (required keys) and the spec
    broken = _docs()["supplied"]
    broken["provenance"]["seeds_controlled"] = True
    assert any(p.startswith("provenance/seeds_controlled") for p in check_results(broken))
    broken = _docs()["supplied"]
    broken["run"]["n_withheld"]["missing"] = 3
    assert any(p.startswith("provenance/n_missing") for p in check_results(broken))


def test_badges_details_and_filter(tmp_path):
    for name, doc in _docs().items():
        _write(tmp_path, f"{name}.json", doc)
    board = results_files.load_folder(tmp_path)
    assert not board.skipped, board.skipped
    rows = board.rows()
    shown = board_table.leaderboard_table(rows).shown()
    badge = dict(zip(shown["Model"], shown["Badge"]))
    assert ">supplied</span>" in badge["my-model"] and "images supplied by a lab" in badge["my-model"]
    assert ">api</span>" in badge["openai:dall-e-2"] and "not controlled" in badge["openai:dall-e-2"]
    assert "supplied" not in badge["org/sd"] and "api" not in badge["org/sd"]
    for choice, models in (("images supplied", ["my-model"]), ("api", ["openai:dall-e-2"]),
                           ("generated", ["org/sd"]), ("all", ["org/sd", "my-model", "openai:dall-e-2"])):
        assert board_table.leaderboard_table(rows, images=choice).shown()["Model"].tolist() == models, choice
    row = next(r for r in rows if r.latest.model_id == "my-model")
    assert "images supplied by a lab" in detail.detail_markdown(row)

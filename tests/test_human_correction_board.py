"""The leaderboard's data for scores corrected with people's labels (docs/human_correction.md,
docs/leaderboard.md): the contents table's ``NAME_people*`` and ``human_checked`` columns, the
human-checked badge, the corrected value in the cell, and ranks apart from automatic-only rows."""

from __future__ import annotations

from pathlib import Path

from benchmark.contract import results as res
from submissions.leaderboard import board_model, board_table, contents_schema
from submissions.leaderboard.board_index import BoardIndex

NAME = "gep_score_neutral"


def _ci(v: float, half: float = 0.02) -> dict:
    return {"low": v - half, "high": v + half, "confidence_level": 0.95, "n_resamples": 200,
            "method": "percentile bootstrap over images"}


def _doc(model_id: str, value: float, corrected: float | None = None) -> dict:
    entry = res.score_entry(NAME, "gep_neutral", value, ci=_ci(value), n=40, estimator="CLS",
                            annotator="open_clip:ViT-L-14:openai")
    if corrected is not None:
        entry["human_corrected"] = {"value": corrected, "ci": _ci(corrected, 0.05), "n_human": 60,
                                    "n_population": 400, "method": "prediction-powered bootstrap", "reason": None}
    audited = res.AuditedRun(model={"id": model_id, "spec": model_id, "revision": "main", "builtin": False},
                             package_version="0.1.0", settings={"family": "sd1"},
                             seeds={"policy": res.SEED_POLICY, "bootstrap_random_state": 0},
                             hardware={"platform": "linux", "python": "3.11", "torch": "2.4", "device": "cuda",
                                       "gpu": "H100"})
    scored = res.ScoredRun(suites=[{"name": "gep_neutral", "status": "scored", "reason": None, "n_images": 40,
                                    "n_scored_images": 40, "excluded": {}}],
                           scoring={"confidence_level": 0.95, "n_resamples": 200, "ci_method": "percentile"},
                           timings={}, annotators=[], scores=[entry], details={}, notes=[],
                           run={"n_images": 40, "n_nsfw_excluded": 0})
    return res.build_results(audited, scored, created="2025-01-01T00:00:00Z")


def _subs(docs: dict) -> list:
    return [board_model.Submission(doc=d, source=f"{k}.json", path=Path(f"{k}.json"), run_dir=None)
            for k, d in docs.items()]


def test_the_contents_table_keeps_corrected_values_only_where_some_row_has_one():
    plain = BoardIndex.of_submissions(_subs({"a": _doc("org/a", 0.1), "b": _doc("org/b", 0.2)}))
    assert not [c for c in plain.table.schema.names if "_people" in c] and "human_checked" in plain.table.schema.names
    mixed = BoardIndex.of_submissions(_subs({"a": _doc("org/a", 0.1), "b": _doc("org/b", 0.2, corrected=0.35)}))
    names = mixed.table.schema.names
    assert {f"{NAME}_people", f"{NAME}_people_low", f"{NAME}_people_high", f"{NAME}_people_n"} <= set(names)
    rows = {r["model_id"]: r for r in mixed.table.to_pylist()}
    assert rows["org/b"][f"{NAME}_people"] == 0.35 and rows["org/b"][f"{NAME}_people_n"] == 60
    assert rows["org/b"]["human_checked"] and not rows["org/a"]["human_checked"]
    slim = contents_schema.slim_document(rows["org/b"], [NAME])
    assert slim["scores"][0]["human_corrected"]["value"] == 0.35
    card = contents_schema.card_text(contents_schema.present_scores(mixed.table),
                                     contents_schema.present_people(mixed.table))
    assert all(f"| `{c}` |" in card for c in names)


def test_human_checked_rows_show_the_corrected_value_and_rank_apart():
    docs = {"auto-best": _doc("org/auto-best", 0.05), "auto-worse": _doc("org/auto-worse", 0.30),
            "checked-good": _doc("org/checked-good", 0.02, corrected=0.20),
            "checked-bad": _doc("org/checked-bad", 0.01, corrected=0.50)}
    table = board_table.leaderboard_table(BoardIndex.of_submissions(_subs(docs)), names=[NAME], sort_by=NAME)
    shown = table.shown().set_index("Model")
    col = next(c for c in shown.columns if c.startswith("GEP (neutral)"))
    # the corrected rows first, ranked among themselves by the corrected value; then the automatic-only rows
    assert list(shown.index) == ["org/checked-good", "org/checked-bad", "org/auto-best", "org/auto-worse"]
    assert list(shown["Rank"]) == ["1", "2", "1", "2"]
    assert shown.loc["org/checked-good", col].startswith("0.2") and shown.loc["org/checked-good", col].endswith("(people)")
    assert "(people)" not in shown.loc["org/auto-best", col]
    assert "human-checked" in shown.loc["org/checked-bad", "Badge"] and "human-checked" not in shown.loc["org/auto-best",
                                                                                                         "Badge"]
    values = table.frame().set_index("Model")
    assert values.loc["org/checked-bad", col] == 0.50  # the number behind the cell is the corrected one

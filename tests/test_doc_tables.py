"""The docs' tables of scores and evaluate modules are generated from the registries
(python -m benchmark.commands.doc_tables): they fail this test the moment a folder declares a
score or module the docs do not show, or the docs show one no folder declares."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import benchmark
from benchmark import registries
from benchmark.cli import main as cli_main
from benchmark.commands import doc_tables

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_tables_are_those_of_the_registries():
    assert doc_tables.stale_tables(ROOT) == [], "run: python -m benchmark.commands.doc_tables"


def test_every_registered_score_and_module_has_a_row():
    benchmark.load_tasks()
    scores, modules = doc_tables.score_table(), doc_tables.module_table()
    assert [line.split(" | ")[0][3:-1] for line in scores.splitlines()[2:]] == list(registries.SCORE_METADATA)
    assert [line.split("`")[1] for line in modules.splitlines()[2:]] == list(registries.EVALUATE_MODULES)
    assert all(s.inputs and s.outputs and s.cites for s in registries.EVALUATE_MODULES.values())


def test_a_new_score_or_module_makes_the_tables_stale(monkeypatch):
    benchmark.load_tasks()
    new = replace(registries.SCORE_METADATA["mcas"], name="mcas_new", display_name="new")
    monkeypatch.setitem(registries.SCORE_METADATA, "mcas_new", new)
    assert doc_tables.stale_tables(ROOT) == ["docs/results.md: scores", "docs/scores.md: scores-reference"]
    monkeypatch.delitem(registries.SCORE_METADATA, "mcas_new")
    spec = registries.EVALUATE_MODULES["mad"]
    monkeypatch.setitem(registries.EVALUATE_MODULES, "mad", replace(spec, outputs=spec.outputs + ", more"))
    assert doc_tables.stale_tables(ROOT) == ["docs/evaluate_modules.md: evaluate-modules"]


def test_the_writer_replaces_only_its_block_and_refuses_a_missing_one(tmp_path, capsys):
    for rel in {rel for rel, _, _ in doc_tables.TABLES}:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    shutil.copytree(ROOT / doc_tables.CALIBRATION_RUNS, tmp_path / doc_tables.CALIBRATION_RUNS)
    results = tmp_path / "docs" / "results.md"
    text = results.read_text()
    results.write_text(text.replace("| `mad_gender` |", "| `mad_gender_old` |"))
    assert doc_tables.main(["--check", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().out == "stale docs/results.md: scores\n"
    assert doc_tables.main(["--root", str(tmp_path)]) == 0 and results.read_text() == text
    results.write_text(text.replace("<!-- end: scores -->", ""))
    assert doc_tables.main(["--check", "--root", str(tmp_path)]) == 2
    assert "docs/results.md needs one '<!-- generated: scores -->'" in capsys.readouterr().err


def test_the_scores_reference_has_every_score_with_its_facts():
    benchmark.load_tasks()
    reference = doc_tables.score_reference()
    headings = [line[5:-1] for line in reference.splitlines() if line.startswith("### `")]
    assert headings == list(registries.SCORE_METADATA)
    for name, meta in registries.SCORE_METADATA.items():
        entry = reference.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        assert all(f"- **{fact}**:" in entry for fact in ("paper", "range", "direction", "estimated from", "interval"))
        assert "no registered task" not in entry, name
    # estimated by the task its folder declares beside it: PaintSkills by the detector, not by DALL-Eval's VQA
    paintskills = reference.split("### `paintskills_object`", 1)[1].split("\n### ", 1)[0]
    assert "`--detector`" in paintskills and "`--vqa`" not in paintskills
    assert "`--vqa`" in reference.split("### `mad_gender`", 1)[1].split("\n### ", 1)[0]


def test_scores_markdown_prints_the_table(capsys):
    assert cli_main(["scores", "--markdown"]) == 0
    assert capsys.readouterr().out == doc_tables.score_table() + "\n"


@pytest.mark.parametrize("rel", sorted({rel for rel, _, _ in doc_tables.TABLES}))
def test_each_generated_table_is_one_table(rel):
    from markdown_tables import broken_table_lines

    assert not broken_table_lines((ROOT / rel).read_text(encoding="utf-8"))


def test_the_calibration_tables_are_the_measured_runs_of_the_docs_recipe(tmp_path, capsys):
    """docs/compare.md's calibration tables are bench/compare_calibration.py's committed output, of
    the CI recipe the page gives (a new recipe needs new runs; a run may take a part of its suites);
    a run edited or removed is named."""
    from benchmark.calibration import recipe_of

    suites, limit, _ = recipe_of((ROOT / "docs" / "compare.md").read_text(encoding="utf-8"))
    runs = sorted((ROOT / doc_tables.CALIBRATION_RUNS).glob("*/compare_calibration.json"))
    assert {p.parent.name for p in runs} == set(doc_tables.MEASURED_RUNS)
    for path in runs:
        doc = json.loads(path.read_text())
        part = "--suites" in doc.get("command", "")  # a run of a part of the recipe's suites says so in its command
        assert (set(doc["suites"]) <= set(suites) if part else doc["suites"] == suites) and doc["limit"] == limit, path
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copytree(ROOT / doc_tables.CALIBRATION_RUNS, tmp_path / doc_tables.CALIBRATION_RUNS)
    power = tmp_path / doc_tables.CALIBRATION_RUNS / "power-recipe" / "compare_calibration.json"
    doc = json.loads(power.read_text())
    doc["power"][0]["rate"] = 0.8
    power.write_text(json.dumps(doc))
    assert doc_tables.main(["--check", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().out == "stale docs/compare.md: calibration-power\n"
    power.unlink()
    assert doc_tables.main(["--check", "--root", str(tmp_path)]) == 2
    assert "cannot be read as the calibration script's output" in capsys.readouterr().err


def test_the_runs_list_says_what_each_run_recorded_and_not_more(tmp_path, capsys):
    """docs/compare.md lists each measured run with what its JSON records; a run made before the
    script recorded its seed or commit says "not recorded", and a run made again changes the list."""
    from benchmark.present.calibration_tables import runs_table

    table = runs_table([("power-x", {"seed": 3, "commit": "0123456789ab", "date": "2026-12-01T02:00:00Z",
                                     "power": [{"n": 100}, {"n": 0}], "seconds": {"power recipe": 3000.0}}),
                        ("old", {"null": [{"n": 200}, {"n": 200}], "pilot": [{"n": 10}], "seconds": {"null 1": 60.0}})])
    assert "| power-x | 100 comparisons per score | 3 | 0123456 | 2026-12-01 | power recipe 50 |" in table
    assert "| old | 200 pairs per size; 10 pilots per score | not recorded | not recorded | not recorded | null 1 1 |" \
        in table
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copytree(ROOT / doc_tables.CALIBRATION_RUNS, tmp_path / doc_tables.CALIBRATION_RUNS)
    path = tmp_path / doc_tables.CALIBRATION_RUNS / "power-full" / "compare_calibration.json"
    doc = json.loads(path.read_text())
    doc["commit"] = "fedcba9876543"
    path.write_text(json.dumps(doc))
    assert doc_tables.main(["--check", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().out == "stale docs/compare.md: calibration-runs\n"

"""What the command line prints: the results table at the terminal's width with its notes below,
`t2ibench scores` aligned, one error prefix, and `--quiet` silencing third-party bars too."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pytest

from benchmark.contract import results as res
from benchmark.present import terminal

LONG_REASON = ("no person has an identifiable perceived gender; STS is undefined (use unidentifiable='zero' or "
               "'anti_stereotype' to count them)")
LONG_ESTIMATOR = ("mean over 6 encoders: openai/clip-vit-base-patch32, openai/clip-vit-base-patch16, "
                  "openai/clip-vit-large-patch14, RN50, RN101, RN50x4")


def _doc() -> dict:
    flat = {"low": 0.02, "high": 0.02, "confidence_level": 0.95, "n_resamples": 50, "method": "percentile"}
    ci = {"low": 0.1, "high": 0.2, "confidence_level": 0.95, "n_resamples": 50, "method": "percentile"}
    return {"warning": res.BUILTIN_WARNING, "scoring": {"confidence_level": 0.95}, "scores": [
        res.score_entry("gep_score_neutral", "gep_neutral", 0.15, ci=ci, n=16, estimator="CLS"),
        res.score_entry("gep_score_explicit", "gep_explicit", 0.02, ci=flat, n=16, estimator="CLS"),
        res.score_entry("sts_occupation_paired", "pst_paired_occupation", None, ci=None, n=16, reason=LONG_REASON),
        res.score_entry("sts_intervention", "pst_intervention", None, ci=None, n=4, reason=LONG_REASON,
                        subset="occupation: all pairs (pst_paired_occupation not scored with this annotator)"),
        res.score_entry("mcas", "mcas_targets", -0.5, ci={**ci, "low": -0.6, "high": -0.4}, n=32,
                        estimator=LONG_ESTIMATOR),
    ]}


@pytest.mark.parametrize("width", [80, 120])
def test_results_table_fits_the_terminal_and_keeps_notes_out(monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    out = io.StringIO()
    terminal.print_results_summary(_doc(), out)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"WARNING: {res.BUILTIN_WARNING}"
    assert max(len(line) for line in lines[1:]) <= width
    assert all(line == line.rstrip() for line in lines)
    table = "\n".join(lines[1:]).split("\n[1] ")[0]
    assert "0.15 [0.1, 0.2]" in table  # value and interval in one cell, on one line
    assert "0.02 (zero-width CI)" in table and "[0.02, 0.02]" not in table
    assert "mean over 6 encoders" in table and "clip-vit" not in table  # short estimator cell
    assert LONG_REASON[:40] not in table and "undefined [" in table
    notes = out.getvalue().split("\n[1] ", 1)[1]
    assert LONG_REASON.replace(" ", "") in notes.replace("\n", "").replace(" ", "")
    assert "pst_paired_occupation not scored" in notes.replace("\n", " ")
    # the same reason twice: one note
    assert len(re.findall(r"^\[\d+\] undefined: no person", "[1] " + notes, flags=re.M)) == 1


def test_brackets_in_results_text_are_not_markup(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    doc = _doc()
    doc["scores"][0]["estimator"] = "[red]vqa"
    out = io.StringIO()
    terminal.print_results_summary(doc, out)
    assert "[red]vqa" in out.getvalue()


def test_scores_command_is_aligned(monkeypatch):
    from benchmark.scores.metadata import SCORE_METADATA

    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    terminal.print_score_metadata(SCORE_METADATA, out)
    lines = out.getvalue().splitlines()
    rows = [line for line in lines[2:] if line.strip()]
    assert [r.split()[0] for r in rows] == list(SCORE_METADATA)
    # the range column starts at the same place on every row, whatever the name's length
    starts = {r.index("[") for r in rows}
    assert len(starts) == 1 and max(len(line) for line in lines) <= 80


def test_one_error_prefix():
    assert terminal.error_line("bad\n  input") == "t2ibench: error: bad input"
    err = io.StringIO()
    terminal.print_error(ValueError("x"), err)
    assert err.getvalue() == "t2ibench: error: x\n"
    from dataset_builders import builder_main

    def run(args):
        raise ValueError("no such thing")

    buf = io.StringIO()
    old, sys.stderr = sys.stderr, buf
    try:
        assert builder_main("x", "d", lambda p: None, run, argv=[]) == 2
    finally:
        sys.stderr = old
    assert buf.getvalue() == "t2ibench: error: no such thing\n"


def test_quiet_third_party_turns_every_library_bar_off():
    code = ("import datasets, diffusers.utils.logging as d, transformers.utils.logging as t, huggingface_hub.utils as h;"
            "from benchmark.present.terminal import quiet_third_party; quiet_third_party();"
            "print(h.are_progress_bars_disabled(), datasets.is_progress_bar_enabled(), t.is_progress_bar_enabled(),"
            " d.is_progress_bar_enabled())")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "False", "False", "False"]


def test_quiet_run_prints_no_progress_bar(tmp_path):
    """A real `t2ibench run --quiet`: no bar from diffusers, transformers or the Hub on stderr, and the
    summary table within 80 columns."""
    env = {**os.environ, "T2IBENCH_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "run", "--model", "builtin:tiny-sd", "--suites",
                           "gep_neutral", "mcas_targets", "--limit", "2", "--n-resamples", "20", "--quiet", "--out",
                           str(tmp_path / "run")], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "it/s" not in proc.stderr and "%|" not in proc.stderr and "Loading" not in proc.stderr, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == f"WARNING: {res.BUILTIN_WARNING}"
    table = lines[1:lines.index("") if "" in lines else len(lines)]
    assert max(len(line) for line in table) <= 80
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert any("GEP (neutral)" in line for line in table) and results["scores"]


def test_images_left_out_are_called_what_they_are(monkeypatch):
    """A content-policy refusal is a refusal in the printed table's notes and in the annotate
    line, in the report's and the results' words; a safety-checker flag stays a flag."""
    from pathlib import Path

    from benchmark.runner.annotate import AnnotationSummary

    monkeypatch.setenv("COLUMNS", "100")
    doc = {**_doc(), "run": {"n_nsfw_excluded": 0, "n_withheld": {"refused": 1, "missing": 0}}}
    out = io.StringIO()
    terminal.print_results_summary(doc, out)
    assert "left out of every score: 1 image refused by the image API (content policy)" in out.getvalue()
    assert "safety" not in out.getvalue() and "nsfw" not in out.getvalue()
    doc["run"] = {"n_nsfw_excluded": 2, "n_withheld": {"refused": 0, "missing": 3}}
    out = io.StringIO()
    terminal.print_results_summary({**doc, "scores": []}, out)  # said even when nothing could be scored
    assert ("left out of every score: 3 images not supplied (--allow-missing), 2 images flagged by the safety "
            "checker") in out.getvalue().replace("\n", " ")
    line = AnnotationSummary(Path("run"), n_images=7, skipped={"refused": 1, "no annotator: x": 2}).format()
    assert "left out: 1 image refused by the image API (content policy)" in line and "nsfw" not in line
    assert "skipped: no annotator: x 2" in line
    assert "left out: 1 image flagged by the safety checker" in AnnotationSummary(
        Path("run"), skipped={"nsfw": 1}).format()

"""End to end: ``t2ibench compare`` on two real ``builtin:tiny-sd`` audits of the same probes, one
made with another ``guidance_scale``: the table, compare.json, the Markdown and the forest plot,
the built-in model warning, the scores ``--limit 4`` leaves untestable (one image per identity)
with the limit that would not, and the exit status of ``--fail-if-worse`` (failing closed on
them); the Compare tab's paired test from run folders and from the results files alone. (More
gates, one image per prompt and bad inputs: tests/test_compare_gates.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from benchmark.cli import main


def _t2ibench(*args, env=None):
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.fixture(scope="module")
def other_guidance(tiny_audit, tmp_path_factory):
    """The tiny audit again (same suites, limit and resamples) with guidance_scale 2."""
    root = tmp_path_factory.mktemp("guidance")
    env = {**os.environ, "T2IBENCH_CACHE": str(root / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = _t2ibench("run", "--model", "builtin:tiny-sd", "--suites", "gep_neutral", "pst_single", "--limit", "4",
                     "--n-resamples", "50", "--set", "guidance_scale=2", "--quiet", "--out", root / "run", env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root / "run"


def test_compare_two_tiny_audits(tiny_audit, other_guidance, tmp_path, capsys):
    out = tmp_path / "compare.json"
    proc = _t2ibench("compare", tiny_audit, other_guidance / "results.json", "--out", out)
    assert proc.returncode == 0, proc.stderr
    # the progress bars on stderr: the scoring passes, then the MDD's simulation (a minute or more of
    # CPU at the CI recipe's size, silent before)
    assert "scoring runs" in proc.stderr and "simulating the MDD" in proc.stderr and "audit/s" in proc.stderr
    assert "simulating the MDD" not in proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("WARNING: Scores from a tiny random-weight model: meaningless")
    assert any(line.startswith("score ") and "Δ [95% CI]" in line and "MDD" in line and "p (Holm)" in line
               for line in lines)
    text = " ".join(proc.stdout.split())
    assert "paired by (probe, seed)" in text and "Holm-corrected" in text
    doc = json.loads(out.read_text())
    assert next(iter(doc)) == "warning" and "meaningless" in doc["warning"]
    (pairing,) = doc["pairings"]
    n_probes = len(pd.read_parquet(tiny_audit / "manifest.parquet"))
    assert pairing["same_probe_set"] and pairing["n_common_probes"] == n_probes
    assert doc["method"]["n_resamples"] == 50
    settings = [r["settings"]["guidance_scale"] for r in doc["runs"]]
    assert settings[0] != settings[1] == 2
    names = {r["name"] for r in doc["scores"] if r["status"] == "compared"}
    assert "gep_score_neutral" in names
    for r in doc["scores"]:
        if r["status"] == "compared":
            assert r["ci"][0] <= r["estimate"] + 1e-9 or r["ci"][1] >= r["estimate"] - 1e-9
            assert 0 <= r["p_holm"] <= 1 and r["mdd_formula"] > 0 and r["critical"] > 0
            # the MDD simulated from the runs' own labels (the command's default), or none detectable,
            # GEP's too: its label rows are named by the run's annotator (builtin:tiny-clip here), not
            # the default one the simulation's layout names
            assert r["mdd_how"].startswith("simulated from"), r
            assert (r["mdd"] is None and "no change of this kind" in r["mdd_reason"]) or r["mdd"] > 0, r
    # --limit 4 keeps one image of each of four identities: STS is still tested (the swap test needs no
    # resampling variation), its interval flagged where the resamples cannot see its noise
    for sts_row in [r for r in doc["scores"] if r["name"].startswith("sts_")]:
        assert sts_row["status"] in ("compared", "identical") and sts_row["strata"]["a"]["single"] == \
            sts_row["strata"]["a"]["strata"], sts_row
    assert any("pst_single: 4 of the 4 prompts kept have one image" in n and "--limit 224 gives each two" in n
               for n in doc["notes"]), doc["notes"]
    md = out.with_suffix(".md").read_text()
    assert "| score | estimator |" in md and "meaningless" in md
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"

    worse = doc["summary"]["significantly_worse"]
    uncompared = [r for r in doc["scores"] if r["status"] in ("not tested", "refused") and r["lower_is_better"]
                  is not None or r["status"] in ("not tested", "refused") and r["ideal"] is not None]
    # a gate on every score: 1 if something is worse, 3 if one could not be compared, else 0
    # (the gates' calls skip the MDD's simulation, checked above: --mdd-pairs 0)
    assert main(["compare", str(tiny_audit), str(other_guidance), "--quiet", "--fail-if-worse", "all",
                 "--mdd-pairs", "0"]) == \
        (1 if worse else 3 if uncompared else 0)
    err = capsys.readouterr().err
    assert all(f"--fail-if-worse: {r['name']} ({r['suite']}) could not be compared" in err for r in uncompared)
    assert main(["compare", str(tiny_audit), str(other_guidance), "--quiet", "--fail-if-worse", "all",
                 "--allow-missing", "--mdd-pairs", "0"]) == (1 if worse else 0)
    # the baseline against itself: identical wherever the score can vary (never worse)
    assert main(["compare", str(tiny_audit), str(tiny_audit), "--quiet", "--fail-if-worse", "gep_score_neutral"]) == 0
    assert "identical" in capsys.readouterr().out


def test_leaderboard_compare_tab_runs_the_paired_test_on_two_run_folders(tiny_audit, other_guidance, tmp_path):
    """The leaderboard's Compare tab runs the same comparison for two rows of run folders, and for
    rows read from results files alone through the per-probe labels they carry (the same verdicts);
    a results file without them gets one line saying why there is no paired test."""
    from submissions.leaderboard.board_model import Submission
    from submissions.leaderboard.paired import paired_markdown

    def submission(run, run_dir):
        path = run / "results.json"
        return Submission(doc=json.loads(path.read_text()), source=path.name, path=path, run_dir=run_dir)

    md = paired_markdown([submission(tiny_audit, tiny_audit), submission(other_guidance, other_guidance)])
    assert "| score | estimator |" in md and "meaningless" in md and "Holm" in md
    assert "gep\\_score\\_neutral" in md or "gep_score_neutral" in md or "GEP" in md
    from_results = paired_markdown([submission(tiny_audit, None), submission(other_guidance, None)])
    def verdicts(text):  # (score, estimator, verdict) of each table row
        return [(cells[0], cells[1], cells[-1]) for cells in (line.strip("| ").split(" | ") for line in text.splitlines()
                                                              if line.startswith("| ") and "---" not in line)]

    assert "from the per-probe labels the results carry" in from_results
    assert verdicts(from_results) == verdicts(md) and len(verdicts(md)) > 3
    old = tmp_path / "old" / "results.json"  # results scored before the pairing section was written
    old.parent.mkdir()
    doc = json.loads((other_guidance / "results.json").read_text())
    doc.pop("pairing")
    old.write_text(json.dumps(doc))
    lone = paired_markdown([submission(tiny_audit, None), submission(old.parent, None)])
    assert lone.startswith("No paired test") and "run folder" in lone and "pairing section" in lone and "|" not in lone
    assert "exactly two" in paired_markdown([submission(tiny_audit, tiny_audit)])


@pytest.fixture(scope="module")
def two_per_prompt(tmp_path_factory):
    """Two tiny audits of gep_neutral at --limit 64 (two images of each prompt, where its GEP scores
    can be compared), the second with guidance_scale 2."""
    root = tmp_path_factory.mktemp("two_per_prompt")
    env = {**os.environ, "T2IBENCH_CACHE": str(root / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    for name, extra in (("a", ()), ("b", ("--set", "guidance_scale=2"))):
        proc = _t2ibench("run", "--model", "builtin:tiny-sd", "--suites", "gep_neutral", "--limit", "64",
                         "--n-resamples", "50", *extra, "--quiet", "--out", root / name, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
    return root / "a", root / "b"


def test_detect_simulates_the_design_from_a_real_audits_labels(two_per_prompt, tmp_path):
    """``--detect`` on two real built-in audits, whose GEP labels are named by builtin:tiny-clip
    (the simulation lays out the default CLIP): a compared score's images per prompt are found by
    simulating designs from the baseline's labels. Before, its simulated scores' names did not
    match the runs' and every score fell back to the square-root law ("the simulated audits give no
    MDD for it"). A score with none detectable carries no images per prompt."""
    out = tmp_path / "compare.json"
    proc = _t2ibench("compare", *two_per_prompt, "--detect", "0.01", "--quiet", "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    detect = json.loads(out.read_text())["detect"]
    compared = [d for d in detect if d["status"] == "compared"]
    assert compared and len(detect) == 3, detect
    for d in compared:
        assert d["how"].startswith("simulated") and d["needed_per_prompt"] >= 1, d
        assert f"{d['needed_per_prompt']} images per prompt" in proc.stdout
    for d in detect:
        if d["status"] == "not detectable":
            assert d.get("needed_per_prompt") is None and d.get("how") is None, d

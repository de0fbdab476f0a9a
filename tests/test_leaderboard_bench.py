"""bench/leaderboard_scale.py runs in its small mode and prints a well-formed table (the speed
is never asserted: the script measures it; docs/leaderboard.md has its figures)."""

from __future__ import annotations

import json
import subprocess
import sys

from test_bench_scripts import ROOT, finite_positive, run_script


def test_leaderboard_scale_small(tmp_path, tiny_audit):
    out = tmp_path / "out"
    text = run_script("leaderboard_scale.py", "--sizes", "3", "12", "--results-json", str(tiny_audit / "results.json"),
                      "--work", str(tmp_path / "work"), "--out", str(out), "--reloads", "3", tmp_path=tmp_path)
    assert "only the times mean anything" in text and "| models |" in text and "Reload results:" in text
    doc = json.loads((out / "leaderboard_scale.json").read_text())
    rows = doc["rows"]
    assert [r["models"] for r in rows] == [3, 12]
    for r in rows:
        assert r["add1_reads"] == 1  # one new file among the others: read alone
        for key in ("build_s", "add1_s", "add1_cli_s", "start_s", "search_s", "page_s", "last_s", "worst_first_s",
                    "forest10_s", "peak_rss_mb"):
            assert finite_positive(r[key]), (key, r)
    assert [r["models"] for r in doc["reloads"]] == [3, 12]
    for r in doc["reloads"]:
        for key in ("same_s", "add1_s", "same_rss_first_mb", "same_rss_last_mb", "add1_rss_first_mb",
                    "add1_rss_last_mb", "add1_cpu_s"):
            assert finite_positive(r[key]), (key, r)


def test_leaderboard_scale_refuses_bad_sizes():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "leaderboard_scale.py"), "--sizes", "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--sizes must be positive" in proc.stderr

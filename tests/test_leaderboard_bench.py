"""bench/leaderboard_scale.py runs in its small mode and prints a well-formed table (the speed
is never asserted: the script measures it; docs/leaderboard.md has its figures)."""

from __future__ import annotations

import json

from test_bench_scripts import finite_positive, refusal, run_script


def test_leaderboard_scale_small(tmp_path, tiny_audit):
    out = tmp_path / "out"
    text = run_script("leaderboard_scale.py", "--sizes", "3", "12", "--results-json", str(tiny_audit / "results.json"),
                      "--work", str(tmp_path / "work"), "--out", str(out), tmp_path=tmp_path)
    assert "only the times mean anything" in text and "| models |" in text
    rows = json.loads((out / "leaderboard_scale.json").read_text())["rows"]
    assert [r["models"] for r in rows] == [3, 12]
    for r in rows:
        assert r["add1_reads"] == 1  # one new file among the others: read alone
        for key in ("build_s", "add1_s", "add1_cli_s", "start_s", "search_s", "page_s", "last_s", "worst_first_s",
                    "forest10_s", "peak_rss_mb"):
            assert finite_positive(r[key]), (key, r)


def test_leaderboard_scale_refuses_bad_sizes(capsys):
    code, err = refusal("leaderboard_scale.py", "--sizes", "0", capsys=capsys)
    assert code == 2 and "--sizes must be positive" in err


def test_leaderboard_reload_small(tmp_path):
    """bench/leaderboard_reload.py in its small mode: a synthetic Hub board of 20 models, two
    reload of each kind clicked in Chromium, measured until the page and the app are quiet (the
    times are the script's to print, never asserted)."""
    out = tmp_path / "out"
    text = run_script("leaderboard_reload.py", "--sizes", "20", "--reloads", "1", "--work", str(tmp_path / "work"),
                      "--out", str(out), tmp_path=tmp_path)
    assert "only the times and memory mean anything" in text and "| source |" in text and "nothing changed" in text
    (row,) = json.loads((out / "leaderboard_reload.json").read_text())["rows"]
    assert (row["source"], row["models"], row["via"], row["reloads"]) == ("hub", 20, "browser", 1)
    for key in ("same_s", "change_s", "same_rss_first_mb", "same_rss_last_mb", "change_rss_last_mb", "change_events"):
        assert finite_positive(row[key]), (key, row)


def test_leaderboard_reload_refuses_bad_arguments(capsys):
    code, err = refusal("leaderboard_reload.py", "--reloads", "0", capsys=capsys)
    assert code == 2 and "--reloads must be between 1 and 200" in err

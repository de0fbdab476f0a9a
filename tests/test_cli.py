import subprocess
import sys

import datasets


def t2ibench(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_probes_build_writes_a_loadable_folder(tmp_path):
    proc = t2ibench("probes", "build", "--out", str(tmp_path / "p"), "--suites", "gep_explicit", "pst_single")
    assert proc.returncode == 0, proc.stderr
    ds = datasets.load_dataset(str(tmp_path / "p"), "gep_explicit", split="test")
    assert ds.num_rows == 2400


def test_reproduce_summary_recomputes_the_papers():
    proc = t2ibench("reproduce")
    assert proc.returncode == 0, proc.stderr
    assert "printed numbers recomputed within their printed precision" in proc.stdout
    assert " NO" not in proc.stdout and "MISMATCH" not in proc.stdout
    assert "Headline numbers" in proc.stdout and "47.38" in proc.stdout


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    proc = t2ibench("probes", "build", "--out", str(tmp_path / "x"), "--suites", "no_such_suite")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["t2ibench: error: unknown suite 'no_such_suite'; known suites: "
                                                + proc.stderr.split("known suites: ")[1].strip()]
    proc = t2ibench("probes", "build", "--out", str(tmp_path / "y"), "--config", "gep=/missing.yaml")
    assert proc.returncode == 2 and "no such file /missing.yaml" in proc.stderr


def test_scores_lists_metadata():
    proc = t2ibench("scores")
    assert proc.returncode == 0
    assert "gep_score_neutral" in proc.stdout and "sts_occupation_paired" in proc.stdout


def test_reproduce_all_lists_every_check():
    from benchmark.tasks.paper_checks import all_checks

    proc = t2ibench("reproduce", "--all", "--papers", "pst")
    assert proc.returncode == 0
    n = len(all_checks(("pst",)))
    assert f"{n} of {n} printed numbers" in proc.stdout
    assert proc.stdout.count("\n") > n
    bad = t2ibench("reproduce", "--papers", "nope")
    assert bad.returncode == 2 and "unknown paper family 'nope'" in bad.stderr

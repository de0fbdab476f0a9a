"""Leaderboard data: loading results folders (valid, invalid, run folders), one row per model,
headline columns with CIs, filters, order, detail tables, escaping, and the CLI's errors.

The documents are real results documents built with ``benchmark.results`` (metadata
copied from SCORE_METADATA) for made-up models with chosen score values; one test reads a
real run of the built-in tiny model.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from benchmark import results as res
from submissions.leaderboard import data

# Model ids are Hub ids, builtin: / python: specs or local folder paths (submissions.validate);
# a folder path may hold any printable ASCII, so markup reaches the page through one.
XSS = "/<script>window.__xss=1</script><img src=x onerror=\"window.__xss=2\">"
GEP = data.value_column("gep_score_neutral")


def _ci(v: float, w: float = 0.02) -> dict:
    return {"low": max(v - w, 0.0) if 0 <= v <= 1 else v - w, "high": v + w, "confidence_level": 0.95, "n_resamples": 200, "method": "percentile"}


def _suite(name: str, status: str = "scored") -> dict:
    return {"name": name, "status": status, "reason": None if status == "scored" else "missing labels",
            "n_images": 40, "n_scored_images": 40 if status == "scored" else 0, "excluded": {}}


def make_doc(model_id: str, gep: float | None, *, created: str = "2025-01-01T00:00:00+00:00", family: str = "sd1",
             builtin: bool = False, extra: list | None = None, suites: tuple = ("gep_neutral",),
             revision: str | None = "main", submission: dict | None = None) -> dict:
    """A results document as the scoring stage writes it, with the chosen GEP (CLS) value."""
    scores = [res.score_entry("gep_score_neutral", "gep_neutral", gep, ci=_ci(gep) if gep is not None else None, n=40,
                              estimator="CLS", annotator="open_clip:ViT-L-14:openai",
                              reason=None if gep is not None else "no attribute is labelled for both groups"),
              # a second estimator of the same score: the CLS entry must be the one in the table
              res.score_entry("gep_score_neutral", "gep_neutral", 0.9, ci=_ci(0.9, 0.05), n=40, estimator="C",
                              annotator="open_clip:ViT-L-14:openai")]
    scores += extra or []
    doc = res.build_results(
        model={"id": model_id, "spec": model_id, "revision": revision, "builtin": builtin},
        package_version="0.1.0", suites=[_suite(s) for s in suites],
        settings={"family": family, "num_inference_steps": 50, "pipeline": "StableDiffusionPipeline"},
        seeds={"policy": res.SEED_POLICY, "bootstrap_random_state": 0},
        scoring={"confidence_level": 0.95, "n_resamples": 200, "ci_method": "percentile"},
        hardware={"platform": "linux", "python": "3.11", "torch": "2.4", "device": "cuda", "gpu": "H100"},
        timings={"generate": 10.0}, annotators=[], scores=scores, details={},
        notes=[f"note about {model_id}"], run={"n_images": 40 * len(suites), "n_nsfw_excluded": 0},
        created=created)
    if submission is not None:
        doc["submission"] = submission
    return doc


def submission_block(images: str | None, demo: bool = False) -> dict:
    """The `submission` object `t2ibench submit` adds (benchmark/results_schema.json)."""
    return {"submitted_at": "2025-01-03T00:00:00+00:00", "submitted_with": "t2i-bias-benchmark 0.1.0",
            "demo": demo, "results_repo": "org/results", "images_dataset": images}


def _write(root: Path, rel: str, doc) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1), encoding="utf-8")
    return path


# Expected order by GEP (neutral), lower is better, undefined after, demo last (though its 0.02 is lowest).
EXPECTED_ORDER = ["beta/model-b", "acme/model-a", XSS, "gamma/model-c", "delta/undefined", "builtin:tiny-sd"]
# The rows with a GEP value by value alone (what sorting the column gives), lowest first.
BY_GEP = ["builtin:tiny-sd", "beta/model-b", "acme/model-a", XSS, "gamma/model-c"]


def write_sample_results(root: Path, *, with_submission: bool = True) -> Path:
    """The sample folder of the tests (also used by the browser tests)."""
    mcas = [res.score_entry("mcas", "mcas_targets", -0.5, ci=_ci(-0.5, 0.1), n=40, estimator="tiny")]
    sts = [res.score_entry("sts_occupation_paired", "pst_paired_occupation", 20.0, ci=_ci(20.0, 5), n=40)]
    sub = submission_block("acme/model-a-images")
    _write(root, "results/acme__model-a/2025-01-02T00-00-00.json",
           make_doc("acme/model-a", 0.10, extra=mcas + sts, suites=("gep_neutral", "mcas_targets",
                                                                    "pst_paired_occupation"),
                    submission=sub if with_submission else None))
    _write(root, "results/beta__model-b/2025-01-01.json",
           make_doc("beta/model-b", 0.05, family="sdxl",
                    extra=[res.score_entry("mad_gender", "dalleval_bias", 0.2, ci=_ci(0.2), n=38),
                           # STS 5 vs acme's 20: sorts differently as numbers and as text
                           res.score_entry("sts_occupation_paired", "pst_paired_occupation", 5.0, ci=_ci(5.0, 2),
                                           n=40)],
                    suites=("gep_neutral", "dalleval_bias", "pst_paired_occupation")))
    # (two files of one model, revision and probe set are a conflict: see test_conflicting_files_keep_the_first)
    _write(root, "results/gamma__model-c/new.json", make_doc("gamma/model-c", 0.20, created="2025-02-01T00:00:00Z"))
    _write(root, "results/xss/1.json", make_doc(XSS, 0.15, family="sd2"))
    _write(root, "results/delta/1.json", make_doc("delta/undefined", None))
    _write(root, "results/demo/1.json", make_doc("builtin:tiny-sd", 0.02, builtin=True, family="tiny"))
    # invalid: GEP out of its range [0, 1], and a broken file
    _write(root, "results/bad/out_of_range.json", make_doc("bad/range", 3.0))
    _write(root, "results/bad/broken.json", '{"schema_version": "1.0", ')
    return root


@pytest.fixture()
def sample(tmp_path):
    return write_sample_results(tmp_path / "lb")


@pytest.fixture()
def board(sample):
    return data.load_folder(sample)


def test_sample_documents_are_valid_except_the_bad_ones(board):
    assert sorted(s.source for s in board.skipped) == ["results/bad/broken.json", "results/bad/out_of_range.json"]
    assert len(board.submissions) == 6
    by = {s.source: s.problem for s in board.skipped}
    assert "not valid JSON" in by["results/bad/broken.json"]
    assert "outside" in by["results/bad/out_of_range.json"] and "gep_score_neutral" in by[
        "results/bad/out_of_range.json"]


def test_one_row_per_model_revision_and_probe_set(board):
    rows = {r.latest.model_id: r for r in board.rows()}
    assert len(rows) == 6 and not any(r.older for r in rows.values()) and not board.conflicts
    # a different revision of one model id is another row, and so is another probe set
    extra = data.Submission(doc=make_doc("gamma/model-c", 0.3, revision="v2"), source="x.json", path=Path("x.json"),
                            run_dir=None)
    probes = make_doc("gamma/model-c", 0.3, revision="main")
    probes["probes"] = {"source": "org/probes", "revision": "abc123", "fingerprint": "0f" * 32}
    other = data.Submission(doc=probes, source="y.json", path=Path("y.json"), run_dir=None)
    assert other.key == "gamma/model-c@main#" + "0f" * 32
    assert len(data.model_rows(board.submissions + [extra, other])) == 8


def test_default_table_order_values_cis_and_badges(board):
    frame, datatype = data.leaderboard_table(board.rows())
    assert list(frame["Model"]) == EXPECTED_ORDER
    assert frame.columns[datatype.index("number")] == GEP and GEP.endswith("↓")
    row = frame.set_index("Model").loc["acme/model-a"]
    assert row[GEP] == pytest.approx(0.10)
    assert row[data.ci_column("gep_score_neutral")] == "[0.08, 0.12] CLS"  # CLS chosen over the C entry (0.9)
    assert row["Images"] == "[acme/model-a-images](https://huggingface.co/datasets/acme/model-a-images)"
    undefined = frame.set_index("Model").loc["delta/undefined"]
    assert math.isnan(undefined[GEP]) and undefined[data.ci_column("gep_score_neutral")] == "undefined"
    assert list(frame.loc[frame["Badge"] == "demo", "Model"]) == ["builtin:tiny-sd"]
    # headline columns: only those some file has, in metadata order, each with a CI column
    names = [c for c, t in zip(frame.columns, datatype) if t == "number"]
    assert names == [data.value_column(n) for n in ("gep_score_neutral", "mad_gender", "sts_occupation_paired",
                                                     "mcas")]
    assert frame.set_index("Model").loc["beta/model-b", data.value_column("mad_gender")] == pytest.approx(0.2)
    assert math.isnan(frame.set_index("Model").loc["acme/model-a", data.value_column("mad_gender")])


def test_rank_by_closest_to_ideal_score(tmp_path):
    root = tmp_path / "r"
    for name, v in (("a/plus", 30.0), ("a/minus", -10.0), ("a/far", -80.0)):
        sts = [res.score_entry("sts_occupation_paired", "pst_paired_occupation", v, ci=_ci(v, 3), n=10)]
        _write(root, f"{name}.json", make_doc(name, 0.1, extra=sts, suites=("gep_neutral", "pst_paired_occupation")))
    frame, _ = data.leaderboard_table(data.load_folder(root).rows(), sort_by="sts_occupation_paired")
    assert list(frame["Model"]) == ["a/minus", "a/plus", "a/far"]  # |STS| ascending: closest to 0 first
    assert data.value_column("sts_occupation_paired").endswith("→0")


def test_filters(board):
    rows = board.rows()

    def models(**kw):
        return list(data.leaderboard_table(rows, **kw)[0]["Model"])

    assert models(search="MODEL-") == ["beta/model-b", "acme/model-a", "gamma/model-c"]
    assert models(families=["sdxl", "sd2"]) == ["beta/model-b", XSS]
    assert "builtin:tiny-sd" not in models(show_demo=False) and len(models(show_demo=False)) == 5
    assert models(suites=["mcas_targets"]) == ["acme/model-a"]
    assert models(suites=["gep_neutral", "dalleval_bias"]) == ["beta/model-b"]
    frame, _ = data.leaderboard_table(rows, suites=["dalleval_bias"])
    assert [c for c in frame.columns if c.startswith("Gender MAD")] and GEP not in frame.columns
    assert data.all_families(rows) == ["sd1", "sd2", "sdxl", "tiny"]
    assert "pst_paired_occupation" in data.all_suites(rows)


def test_detail_tables_and_markdown(board):
    row = {r.latest.model_id: r for r in board.rows()}["acme/model-a"]
    tables = data.suite_tables(row.latest)
    assert list(tables) == ["gep_neutral", "mcas_targets", "pst_paired_occupation"]
    gep = tables["gep_neutral"]
    assert list(gep["Estimator"]) == ["CLS", "C"] and list(gep["In table"]) == ["yes", ""]
    assert list(gep["Value"]) == ["0.1", "0.9"]
    md = data.detail_markdown(row)
    assert "https://huggingface.co/datasets/acme/model-a-images" in md and "note about acme/model\\-a" in md
    undefined = {r.latest.model_id: r for r in board.rows()}["delta/undefined"]
    notes = data.suite_tables(undefined.latest)["gep_neutral"]["Notes"].iloc[0]
    assert "no attribute is labelled for both groups" in notes
    demo = {r.latest.model_id: r for r in board.rows()}["builtin:tiny-sd"]
    assert data.detail_markdown(demo).startswith("> **DEMO**")


def test_escaping_of_results_text(board):
    xss = {r.latest.model_id: r for r in board.rows()}[XSS]
    md = data.detail_markdown(xss)
    assert "<script>" not in md and "<img" not in md and "&lt;script&gt;" in md
    bad = data.Board(source="<b>src</b>", skipped=[data.Skipped("<i>f</i>.json", "x <script>y</script>", 2)])
    warn = data.warnings_markdown(bad)
    assert "<" not in warn.replace("&lt;", "") and "(and 1 more)" in warn
    assert data.md_escape("a*b_[c](d)") == "a\\*b\\_\\[c\\]\\(d\\)"


def test_images_link_only_for_valid_repo_ids(tmp_path):
    evil = make_doc("e/vil", 0.1, submission=submission_block("x/y) [click](javascript:alert(1)"))
    _write(tmp_path, "e.json", evil)
    rows = data.load_folder(tmp_path).rows()
    frame, _ = data.leaderboard_table(rows)
    assert frame["Images"].iloc[0] == ""
    assert "javascript" not in data.detail_markdown(rows[0]).replace("javascript\\:", "").split("Images")[0]
    assert "(not a valid dataset id, no link)" in data.detail_markdown(rows[0])


def test_folder_rules_run_folders_hidden_and_garbage(tmp_path):
    root = tmp_path / "r"
    run = root / "runs" / "one"
    _write(root, "runs/one/results.json", make_doc("run/model", 0.1))
    _write(root, "runs/one/run_config.json", {"model": "x"})  # a run folder's own files are not results
    _write(root, "runs/one/timings.json", {"generate": 1.0})
    _write(root, ".cache/huggingface/download/x.json", {"not": "results"})
    _write(root, "list.json", [1, 2])
    _write(root, "nan.json", '{"a": NaN}')
    board = data.load_folder(root)
    assert [s.source for s in board.submissions] == ["runs/one/results.json"]
    assert board.submissions[0].run_dir == run
    assert {s.source: s.problem for s in board.skipped} == {
        "list.json": "not a results document: the top level is a JSON array, not an object",
        "nan.json": "a: NaN is not valid JSON (use null)"}
    missing = data.load_folder(tmp_path / "nope")
    assert missing.errors and "is not a folder" in data.warnings_markdown(missing)


def test_submission_block_is_accepted(tmp_path):
    # the optional `submission` object written by `t2ibench submit` must not make a file invalid
    _write(tmp_path, "a.json", make_doc("a/b", 0.1, submission=submission_block("a/b-images")))
    board = data.load_folder(tmp_path)
    assert [s.problem for s in board.skipped] == [] and board.submissions[0].images_dataset == "a/b-images"


def test_hub_offline_is_one_line_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ValueError, match=r"^cannot read results dataset org/results: the Hub is offline"):
        data.download_results("org/results")
    with pytest.raises(ValueError, match="ORG/NAME"):
        data.download_results("not a repo")
    # in the app the same failure is a visible warning on an empty board
    from submissions.leaderboard.app import Source

    board = Source(repo="org/results").load()
    assert not board.submissions and "the Hub is offline" in data.warnings_markdown(board)


def test_cli_errors_are_one_line(tmp_path, capsys, monkeypatch):
    import huggingface_hub.constants as c

    from benchmark.cli import main

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert main(["leaderboard", "--repo", "org/results"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("t2ibench: error: cannot read results dataset org/results: the Hub is offline")
    assert err.count("\n") == 1

    assert main(["leaderboard", "--results", str(tmp_path / "missing")]) == 2
    assert "t2ibench: error: " in capsys.readouterr().err
    with pytest.raises(SystemExit):  # --results and --repo exclude each other (argparse)
        main(["leaderboard", "--results", str(tmp_path), "--repo", "a/b"])
    assert main(["leaderboard", "--results", str(tmp_path), "--port", "70000"]) == 2
    assert "port" in capsys.readouterr().err


def test_real_tiny_run_is_a_demo_row_with_plots(tmp_path_factory, cache, monkeypatch):
    """A real `t2ibench run` of the built-in tiny model: a demo row, and its report plots in the detail view."""
    from benchmark.cli import main
    from submissions.leaderboard.app import report_plots

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    root = tmp_path_factory.mktemp("lb_real")
    assert main(["run", "--model", "builtin:tiny-sd", "--suites", "gep_neutral", "--limit", "4",
                 "--n-resamples", "50", "--quiet", "--out", str(root / "runs" / "tiny")]) == 0
    board = data.load_folder(root)
    assert not board.skipped, board.skipped
    (row,) = board.rows()
    assert row.latest.demo and row.latest.family == "tiny" and row.latest.run_dir == root / "runs" / "tiny"
    frame, _ = data.leaderboard_table(board.rows())
    assert list(frame["Badge"]) == ["demo"]
    plots = report_plots(row.latest)
    assert plots and all(Path(p).is_file() and Path(p).suffix == ".png" for p, _ in plots)
    assert any("GEP vector" in c for _, c in plots)
    # without the detail tables the run's report/ PNGs are shown
    shutil.rmtree(root / "runs" / "tiny" / "scores")
    (root / "runs" / "tiny" / "results.json").touch()
    again = data.load_folder(root).rows()[0].latest
    assert [Path(p).parent.name for p, _ in report_plots(again)] == ["report"] * len(plots)


def _component(demo, elem_id: str):
    return next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)


def test_space_app_reads_env(sample, monkeypatch, tmp_path):
    """What `python app.py` builds in a Space: RESULTS_DIR, or RESULTS_REPO (offline here: a visible warning)."""
    from submissions.leaderboard.app import app_from_env

    demo = app_from_env({"RESULTS_DIR": str(sample)}.get)
    assert "6 model(s)" in _component(demo, "lb-source").value
    assert data.md_escape("results/bad/out_of_range.json") in _component(demo, "lb-warnings").value
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "hub"))
    demo = app_from_env({"RESULTS_REPO": "org/results"}.get)
    warning = _component(demo, "lb-warnings")
    assert warning.visible and "cannot read results dataset org/results: the Hub is offline" in warning.value

"""Leaderboard data: loading results folders (valid, invalid, run folders), one row per model,
headline columns with CIs, filters, order, detail tables, escaping, and the CLI's errors.

The documents are real results documents built with ``benchmark.contract.results`` (metadata
copied from SCORE_METADATA) for made-up models with chosen score values; one test reads a
real run of the built-in tiny model.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from benchmark.contract import results as res
from submissions.leaderboard import board_index, board_model, board_table, comparison, detail, results_files, score_columns, wording

# Model ids are Hub ids, builtin: / python: specs or local folder paths (submissions.validate);
# a folder path may hold any printable ASCII, so markup reaches the page through one.
XSS = "/<script>window.__xss=1</script><img src=x onerror=\"window.__xss=2\">"
GEP = score_columns.value_column("gep_score_neutral")


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
    audited = res.AuditedRun(
        model={"id": model_id, "spec": model_id, "revision": revision, "builtin": builtin}, package_version="0.1.0",
        settings={"family": family, "num_inference_steps": 50, "pipeline": "StableDiffusionPipeline"},
        seeds={"policy": res.SEED_POLICY, "bootstrap_random_state": 0},
        hardware={"platform": "linux", "python": "3.11", "torch": "2.4", "device": "cuda", "gpu": "H100"})
    scored = res.ScoredRun(
        suites=[_suite(s) for s in suites], scoring={"confidence_level": 0.95, "n_resamples": 200,
                                                    "ci_method": "percentile"},
        timings={"generate": 10.0}, annotators=[], scores=scores, details={}, notes=[f"note about {model_id}"],
        run={"n_images": 40 * len(suites), "n_nsfw_excluded": 0})
    doc = res.build_results(audited, scored, created=created)
    if submission is not None:
        doc["submission"] = submission
    return doc


def submission_block(images: str | None, demo: bool = False) -> dict:
    """The `submission` object `t2ibench submit` adds (benchmark/contract/results_schema.json)."""
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
    return results_files.load_folder(sample)


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
    extra = board_model.Submission(doc=make_doc("gamma/model-c", 0.3, revision="v2"), source="x.json", path=Path("x.json"),
                            run_dir=None)
    probes = make_doc("gamma/model-c", 0.3, revision="main")
    probes["probes"] = {"source": "org/probes", "revision": "abc123", "fingerprint": "0f" * 32}
    other = board_model.Submission(doc=probes, source="y.json", path=Path("y.json"), run_dir=None)
    assert other.key == "gamma/model-c@main#" + "0f" * 32
    assert len(board_model.model_rows(board.submissions + [extra, other])) == 8


def _mcas_doc(model_id: str, value: float, reference: str | None, gep: float = 0.1) -> dict:
    """A model's MCAS audit: the papers' protocol (reference None) or against the MCAS reference
    with that fingerprint (`t2ibench run --mcas-reference`)."""
    doc = make_doc(model_id, gep, suites=("gep_neutral", "mcas_targets"),
                   extra=[res.score_entry("mcas", "mcas_targets", value, ci=_ci(value, 0.01), n=40, estimator="tiny")])
    if reference is not None:
        doc["references"] = {"mcas": {"source": "org/mcas-reference", "revision": "1" * 40, "fingerprint": reference}}
    return doc


def test_each_mcas_reference_gets_its_own_row_and_ranking(tmp_path):
    ref_a, ref_b = "a" * 64, "b" * 64
    root = tmp_path / "lb"
    _write(root, "r/own.json", _mcas_doc("acme/model-a", -0.30, None))
    _write(root, "r/ref_a.json", _mcas_doc("acme/model-a", -0.20, ref_a))  # the same model audited both ways
    _write(root, "r/ref_b.json", _mcas_doc("acme/model-a", -0.01, ref_b))
    _write(root, "r/other_own.json", _mcas_doc("beta/model-b", -0.25, None, gep=0.05))
    _write(root, "r/other_ref_a.json", _mcas_doc("beta/model-b", -0.40, ref_a, gep=0.05))
    board = results_files.load_folder(root)
    assert not board.skipped and not board.conflicts  # other references: other rows, no conflict
    rows = board.rows()
    by_key = {r.key: r for r in rows}
    assert set(by_key) == {"acme/model-a@main", f"acme/model-a@main|mcas-reference={ref_a}",
                           f"acme/model-a@main|mcas-reference={ref_b}", "beta/model-b@main",
                           f"beta/model-b@main|mcas-reference={ref_a}"}
    assert by_key["acme/model-a@main"].latest.reference_fingerprint is None
    # marked: the Model cell names the reference, the badge says what it means
    labels = wording.model_labels(rows)
    assert labels["acme/model-a@main"] == "acme/model-a @ main"
    assert labels[f"acme/model-a@main|mcas-reference={ref_a}"] == "acme/model-a @ main [MCAS ref aaaaaaaa]"
    assert len(set(labels.values())) == len(rows)
    badges = wording.badges_html(by_key[f"acme/model-a@main|mcas-reference={ref_a}"].latest)
    assert 'class="lb-badge lb-badge-mcas-ref"' in badges and "org/mcas-reference @ " + "1" * 40 in badges
    assert wording.badges_html(by_key["acme/model-a@main"].latest) == ""
    md = detail.detail_markdown(by_key[f"acme/model-a@main|mcas-reference={ref_a}"])
    assert "**MCAS reference**: attribute images from org/mcas-reference" in md and "aaaaaaaaaaaa" in md
    assert "papers' protocol" in detail.detail_markdown(by_key["acme/model-a@main"])
    # ranked by MCAS (closest to 0 first): the papers' protocol, then each reference's rows among themselves,
    # though ref_b's -0.01 is the closest of all
    t = board_table.leaderboard_table(rows, names=["mcas"], sort_by="mcas")
    assert t.keys == ["beta/model-b@main", "acme/model-a@main", f"acme/model-a@main|mcas-reference={ref_a}",
                      f"beta/model-b@main|mcas-reference={ref_a}", f"acme/model-a@main|mcas-reference={ref_b}"]
    (panel,) = comparison.forest_panels(rows, ["mcas"])
    assert [r["label"] for r in panel["rows"]] == [labels[k] for k in t.keys]
    # a score the reference does not touch ranks every row together
    gep = board_table.leaderboard_table(rows, names=["gep_score_neutral"], sort_by="gep_score_neutral")
    assert [k.split("@")[0] for k in gep.keys] == ["beta/model-b"] * 2 + ["acme/model-a"] * 3


def _table(rows, **kw):
    return board_table.leaderboard_table(rows, view=score_columns.ALL_SCORES, **kw)


def test_default_table_order_values_cis_and_badges(board):
    t = _table(board.rows())
    frame, shown = t.frame(), t.shown()
    assert list(frame["Model"]) == EXPECTED_ORDER and t.keys[0] == "beta/model-b@main"
    assert t.headers[board_table.FIRST_SCORE] == GEP and GEP.endswith("↓") and t.datatype[board_table.FIRST_SCORE] == "number"
    row = frame.set_index("Model").loc["acme/model-a"]
    assert row[GEP] == pytest.approx(0.10)  # the number behind the cell: header menus sort by it
    # value and interval in one cell, from the CLS entry (not the C entry, 0.9)
    assert shown.set_index("Model").loc["acme/model-a", GEP] == "0.1 [0.08, 0.12]"
    assert shown.set_index("Model").loc["delta/undefined", GEP] == "undefined"
    assert t.values[t.keys.index("delta/undefined@main")][board_table.FIRST_SCORE] is None  # blank: sorts apart from numbers
    badges = shown.set_index("Model")["Badge"]
    assert 'class="lb-badge lb-badge-demo"' in badges["builtin:tiny-sd"] and ">demo</span>" in badges["builtin:tiny-sd"]
    assert {b for m, b in badges.items() if m != "builtin:tiny-sd"} == {""}
    # suites: the count, the names on hover
    suites = shown.set_index("Model").loc["acme/model-a", "Suites"]
    assert re.fullmatch(r'<span class="lb-suites" title="gep_neutral, mcas_targets, pst_paired_occupation">3</span>',
                        suites)
    # headline columns: only those some file has, in metadata order
    assert t.headers[board_table.FIRST_SCORE:] == [score_columns.value_column(n) for n in ("gep_score_neutral", "mad_gender",
                                                              "sts_occupation_paired", "mcas")]
    assert shown.set_index("Model").loc["beta/model-b", score_columns.value_column("mad_gender")] == "0.2 [0.18, 0.22]"
    # no entry of a score: "not scored", greyed, never a blank cell
    mad = t.headers.index(score_columns.value_column("mad_gender"))
    acme = t.keys.index("acme/model-a@main")
    assert t.display[acme][mad] == "not scored" and "italic" in t.styling[acme][mad] and t.values[acme][mad] is None
    # the name links to the model's Hub page; a model that is no Hub id links to its results file
    assert t.display[acme][0] == ('<a class="lb-model-link" href="https://huggingface.co/acme/model-a" target="_blank" '
                                  'rel="noopener noreferrer">acme/model-a</a>')
    demo = t.display[t.keys.index("builtin:tiny-sd@main")][0]
    assert demo == "builtin:tiny-sd"  # no folder given: nowhere to link
    value = t.gradio_value()
    assert value["data"] == t.values and value["metadata"]["display_value"] == t.display


def test_zero_width_and_missing_intervals_are_not_shown_as_intervals(tmp_path):
    flat = {"low": 0.3, "high": 0.3, "confidence_level": 0.95, "n_resamples": 200, "method": "percentile"}
    mad = [res.score_entry("mad_gender", "dalleval_bias", 0.3, ci=flat, n=4)]
    _write(tmp_path, "a.json", make_doc("a/flat", 0.1, extra=mad, suites=("gep_neutral", "dalleval_bias")))
    t = _table(results_files.load_folder(tmp_path).rows())
    assert t.shown().loc[0, score_columns.value_column("mad_gender")] == "0.3 (zero-width CI)"


def test_overview_keeps_one_score_per_paper(board):
    names = ["gep_score_neutral", "gep_score_explicit", "mad_gender", "mad_skin_tone", "sts_occupation_paired",
             "mcas", "diffusion_bias", "paintskills_object", "paintskills_count"]
    assert score_columns.view_names(names, score_columns.OVERVIEW) == ["gep_score_neutral", "mad_gender", "sts_occupation_paired",
                                                      "mcas", "diffusion_bias", "paintskills_object"]
    assert score_columns.view_names(names, "GEP") == ["gep_score_neutral", "gep_score_explicit"]
    assert score_columns.view_names(names, "PaintSkills") == ["paintskills_object", "paintskills_count"]
    assert score_columns.views(names) == [score_columns.OVERVIEW, "GEP", "DALL-Eval", "PST", "MCAS", "Diffusion Bias", "PaintSkills",
                                 score_columns.ALL_SCORES]
    # the default table shows the overview
    assert board_table.leaderboard_table(board.rows()).headers[board_table.FIRST_SCORE:] == [score_columns.value_column(n) for n in
                                                                 ("gep_score_neutral", "mad_gender",
                                                                  "sts_occupation_paired", "mcas")]


def test_rank_by_closest_to_ideal_score(tmp_path):
    root = tmp_path / "r"
    for name, v in (("a/plus", 30.0), ("a/minus", -10.0), ("a/far", -80.0)):
        sts = [res.score_entry("sts_occupation_paired", "pst_paired_occupation", v, ci=_ci(v, 3), n=10)]
        _write(root, f"{name}.json", make_doc(name, 0.1, extra=sts, suites=("gep_neutral", "pst_paired_occupation")))
    t = _table(results_files.load_folder(root).rows(), sort_by="sts_occupation_paired")
    assert list(t.frame()["Model"]) == ["a/minus", "a/plus", "a/far"]  # |STS| ascending: closest to 0 first
    assert score_columns.value_column("sts_occupation_paired").endswith("→0")


def test_filters(board):
    rows = board.rows()

    def models(**kw):
        return list(_table(rows, **kw).frame()["Model"])

    assert models(search="MODEL-") == ["beta/model-b", "acme/model-a", "gamma/model-c"]
    assert models(families=["sdxl", "sd2"]) == ["beta/model-b", XSS]
    assert "builtin:tiny-sd" not in models(show_demo=False) and len(models(show_demo=False)) == 5
    assert models(suites=["mcas_targets"]) == ["acme/model-a"]
    assert models(suites=["gep_neutral", "dalleval_bias"]) == ["beta/model-b"]
    t = _table(rows, suites=["dalleval_bias"])
    assert [c for c in t.headers if c.startswith("Gender MAD")] and GEP not in t.headers
    assert board_table.all_families(rows) == ["sd1", "sd2", "sdxl", "tiny"]
    assert "pst_paired_occupation" in board_table.all_suites(rows)


def test_model_cell_shows_the_revision_only_when_needed(board):
    extra = board_model.Submission(doc=make_doc("gamma/model-c", 0.3, revision="v2"), source="x.json", path=Path("x.json"),
                            run_dir=None)
    rows = board_model.model_rows(board.submissions + [extra])
    labels = wording.model_labels(rows)
    assert labels["acme/model-a@main"] == "acme/model-a"
    assert labels["gamma/model-c@main"] == "gamma/model-c @ main" and labels["gamma/model-c@v2"] == "gamma/model-c @ v2"


def test_no_two_rows_share_a_label(board):
    """Same id and revision, other probe sets: the probe set tells them apart."""
    subs = []
    for i, probes in enumerate(({"fingerprint": "f" * 64}, {"fingerprint": "e" * 64},
                                {"source": "org/probes", "revision": "v1"})):
        doc = make_doc("gamma/model-c", 0.3)
        doc["probes"] = probes
        subs.append(board_model.Submission(doc=doc, source=f"p{i}.json", path=Path(f"p{i}.json"), run_dir=None))
    rows = board_model.model_rows(board.submissions + subs)
    labels = wording.model_labels(rows)
    assert len(set(labels.values())) == len(rows)
    assert labels[f"gamma/model-c@main#{'f' * 64}"] == "gamma/model-c @ main [probes ffffffffffff]"
    assert labels["gamma/model-c@main"] == "gamma/model-c @ main [probes built-in]"
    table = board_table.leaderboard_table(rows)
    assert len(set(r[0] for r in table.values)) == len(table.values)


def test_badge_column_fits_every_badge(tmp_path):
    from types import SimpleNamespace

    from submissions.requests import WORKER_PREFIX

    doc = make_doc("builtin:tiny-sd", 0.1, builtin=True, family="tiny")
    doc.update(evaluated_by=f"{WORKER_PREFIX}gpu-1", request_id="builtin__tiny-sd@builtin-v1")
    doc["references"] = {"mcas": {"source": "org/ref", "revision": "1" * 40, "fingerprint": "a" * 64}}
    # evaluated only with the FINISHED request of the queue that names this file (issue 23)
    request = SimpleNamespace(model_id="builtin:tiny-sd", audited_model_id="builtin:tiny-sd", worker_id="gpu-1",
                              results_path="/srv/r/a/x.json")
    sub = board_model.Submission(doc=doc, source="a/x.json", path=Path("x.json"), run_dir=None,
                          finished={"builtin__tiny-sd@builtin-v1": request})
    names = [name for name, _ in wording.badges(sub)]
    assert names == ["demo", "evaluated", "mcas-ref"]
    width = int(board_table.leaderboard_table(board_model.model_rows([sub])).widths[board_table.FIRST_SCORE - 2].removesuffix("px"))
    assert width >= sum(len(n) * 7.5 + 24 for n in names)
    plain = board_model.Submission(doc=make_doc("acme/a", 0.1), source="y.json", path=Path("y.json"), run_dir=None)
    no_badge = board_table.leaderboard_table(board_model.model_rows([plain])).widths[board_table.FIRST_SCORE - 2]
    assert no_badge == f"{board_table.column_px([], board_table.BADGE_COLUMN)}px"  # as wide as its header


def test_forest_panels_and_compare_table(board):
    rows = board.rows()
    (gep,) = [p for p in comparison.forest_panels(rows, ["gep_score_neutral"])]
    labels = [r["label"] for r in gep["rows"]]
    # best first, undefined after, the demo row last and muted
    assert labels == ["beta/model-b", "acme/model-a", XSS, "gamma/model-c", "delta/undefined",
                      "builtin:tiny-sd (demo)"]
    assert [r["value"] for r in gep["rows"]][:4] == [0.05, 0.1, 0.15, 0.2] and gep["rows"][4]["value"] is None
    assert gep["rows"][-1]["muted"] and not gep["rows"][0]["muted"]
    assert gep["rows"][1]["low"] == pytest.approx(0.08) and gep["rows"][1]["high"] == pytest.approx(0.12)
    assert gep["ideal"] == 0.0 and gep["bounds"] == (0.0, 1.0)
    from submissions.leaderboard.figures import forest_figure

    fig = forest_figure(rows, ["gep_score_neutral", "mcas"])
    assert len([ax for ax in fig.axes if ax.get_visible() and ax.axison]) == 2
    pair = [r for r in rows if r.latest.model_id in ("acme/model-a", "beta/model-b")]
    cmp = comparison.compare_table(pair, ["gep_score_neutral", "mad_gender"])
    assert list(cmp.columns) == ["Score", "acme/model-a", "beta/model-b"]
    assert list(cmp["acme/model-a"]) == ["0.1 [0.08, 0.12]", "not scored"]
    assert list(cmp["beta/model-b"]) == ["0.05 [0.03, 0.07]", "0.2 [0.18, 0.22]"]
    # where an entry has no interval, the compare table says so in the plots' words
    flat = make_doc("flat/model", 0.1)
    flat["scores"][0]["ci"] = {**flat["scores"][0]["ci"], "low": 0.1, "high": 0.1}
    none = make_doc("none/model", 0.1)
    none["scores"][0]["ci"] = None
    subs = [board_model.Submission(doc=d, source=f"{i}.json", path=Path(f"{i}.json"), run_dir=None)
            for i, d in enumerate((flat, none))]
    cmp = comparison.compare_table(board_model.model_rows(subs), ["gep_score_neutral"])
    assert list(cmp.iloc[0])[1:] == ["0.1 (no interval: resamples all equal)", "0.1 (no interval)"]


def test_evaluated_badge_follows_the_queue(board):
    """A row is evaluated by the maintainers' workers only when a FINISHED request of the queue
    names its file (results_path) for its model; without a queue no row is (issue 23)."""
    from types import SimpleNamespace

    sub = board.submissions[0]
    assert board_model.evaluated_by(sub) is None and "evaluated" not in wording.badges_html(sub)
    doc = {**sub.doc, "evaluated_by": "maintainers' worker gpu-<b>1</b>", "request_id": "acme__m@abc"}
    marked = board_model.Submission(doc=doc, source=sub.source, path=sub.path, run_dir=None)
    assert board_model.evaluated_by(marked) is None  # no queue: the fields alone prove nothing
    request = SimpleNamespace(model_id=sub.model_id, audited_model_id=sub.model_id, worker_id="gpu-<b>1</b>",
                              results_path=f"/srv/r/{sub.source}")
    checked = board_model.Submission(doc=doc, source=sub.source, path=sub.path, run_dir=None,
                              finished={"acme__m@abc": request})
    assert board_model.evaluated_by(checked) == "maintainers' worker gpu-<b>1</b>"
    html_cell = wording.badges_html(checked)
    assert ">evaluated</span>" in html_cell and "<b>" not in html_cell and "&lt;b&gt;" in html_cell
    forged = board_model.Submission(doc=doc, source=sub.source, path=sub.path, run_dir=None, finished={})
    assert board_model.evaluated_by(forged) is None  # not a FINISHED request of the queue
    copied = board_model.Submission(doc=doc, source="elsewhere/copy.json", path=sub.path, run_dir=None,
                             finished={"acme__m@abc": request})
    assert board_model.evaluated_by(copied) is None  # the request names another file
    for claim in ({"evaluated_by": "self"}, {"evaluated_by": "maintainers' worker x"}):  # no request id
        assert board_model.evaluated_by(board_model.Submission(doc={**sub.doc, **claim}, source="s", path=sub.path,
                                                 run_dir=None, finished={"acme__m@abc": request})) is None
    rows = [board_model.ModelRow(checked), board_model.ModelRow(board.submissions[1])]  # two keys
    assert board_table.filter_rows(rows, provenance_filter="maintainers' worker")["key"].tolist() == [rows[0].key]
    assert board_table.filter_rows(rows, provenance_filter="self-reported")["key"].tolist() == [rows[1].key]


def test_detail_tables_and_markdown(board):
    row = {r.latest.model_id: r for r in board.rows()}["acme/model-a"]
    table, notes = detail.scores_table(row.latest)
    assert list(dict.fromkeys(table["Suite"])) == ["gep_neutral", "mcas_targets", "pst_paired_occupation"]
    gep = table[table["Suite"] == "gep_neutral"]
    assert list(gep["Estimator"]) == ["CLS", "C"] and list(gep["Score"]) == ["GEP (neutral) *", "GEP (neutral)"]
    assert list(gep["Value [CI]"]) == ["0.1 [0.08, 0.12]", "0.9 [0.85, 0.95]"]
    md = detail.detail_markdown(row)
    assert "https://huggingface.co/datasets/acme/model-a-images" in md and "note about acme/model-a" in md
    assert "Suites scored (3)" in md and "self-reported" in md
    undefined = {r.latest.model_id: r for r in board.rows()}["delta/undefined"]
    table, notes = detail.scores_table(undefined.latest)
    assert notes == ["undefined: no attribute is labelled for both groups"] and table["Notes"].iloc[0] == "[1]"
    assert "no attribute is labelled" not in " ".join(table.astype(str).to_numpy().ravel())
    assert detail.notes_markdown(notes) == "1. undefined: no attribute is labelled for both groups"
    demo = {r.latest.model_id: r for r in board.rows()}["builtin:tiny-sd"]
    assert detail.detail_markdown(demo).startswith("> **DEMO**")


def test_detail_notes_are_listed_once():
    doc = make_doc("a/b", 0.1)
    for e in doc["scores"]:
        e["ci_note"] = "the same long note"
    sub = board_model.Submission(doc=doc, source="a.json", path=Path("a.json"), run_dir=None)
    table, notes = detail.scores_table(sub)
    assert notes == ["interval: the same long note"] and set(table["Notes"]) == {"[1]"}


def test_escaping_of_results_text(board):
    xss = {r.latest.model_id: r for r in board.rows()}[XSS]
    md = detail.detail_markdown(xss)
    assert "<script>" not in md and "<img" not in md and "&lt;script&gt;" in md
    bad = board_index.Board(source="<b>src</b>", skipped=[board_model.Skipped("<i>f</i>.json", "x <script>y</script>", 2)])
    warn = wording.warnings_markdown(bad)
    assert "<" not in warn.replace("&lt;", "") and "(and 1 more)" in warn
    # one escaper for the project: the leaderboard's is benchmark.present.text's
    from benchmark.present import text

    assert wording.md_escape is text.md_escape
    assert wording.md_escape("a*b_[c](d)") == "a\\*b\\_\\[c\\](d)"
    # HTML cells escape suite names too
    doc = make_doc("s/uite", 0.1, suites=("gep_neutral", '"><script>x</script>'))
    sub = board_model.Submission(doc=doc, source="s.json", path=Path("s.json"), run_dir=None)
    assert "<script>" not in wording.suites_html(sub) and "&#34;&gt;&lt;script&gt;" in wording.suites_html(sub)


def test_images_link_only_for_valid_repo_ids(tmp_path):
    evil = make_doc("e/vil", 0.1, submission=submission_block("x/y) [click](javascript:alert(1)"))
    _write(tmp_path, "e.json", evil)
    rows = results_files.load_folder(tmp_path).rows()
    md = detail.detail_markdown(rows[0])
    assert not re.search(r"(?<!\\)\]\(javascript", md) and "(not a valid dataset id, no link)" in md
    from submissions.leaderboard.images import image_source

    assert image_source(rows[0].latest) is None


def test_folder_rules_run_folders_hidden_and_garbage(tmp_path):
    root = tmp_path / "r"
    run = root / "runs" / "one"
    _write(root, "runs/one/results.json", make_doc("run/model", 0.1))
    _write(root, "runs/one/run_config.json", {"model": "x"})  # a run folder's own files are not results
    _write(root, "runs/one/timings.json", {"generate": 1.0})
    _write(root, ".cache/huggingface/download/x.json", {"not": "results"})
    _write(root, "list.json", [1, 2])
    _write(root, "nan.json", '{"a": NaN}')
    board = results_files.load_folder(root)
    assert [s.source for s in board.submissions] == ["runs/one/results.json"]
    assert board.submissions[0].run_dir == run
    assert {s.source: s.problem for s in board.skipped} == {
        "list.json": "not a results document: the top level is a JSON array, not an object",
        "nan.json": "a: NaN is not valid JSON (use null)"}
    missing = results_files.load_folder(tmp_path / "nope")
    assert missing.errors and "is not a folder" in wording.warnings_markdown(missing)


def test_submission_block_is_accepted(tmp_path):
    # the optional `submission` object written by `t2ibench submit` must not make a file invalid
    _write(tmp_path, "a.json", make_doc("a/b", 0.1, submission=submission_block("a/b-images")))
    board = results_files.load_folder(tmp_path)
    assert [s.problem for s in board.skipped] == [] and board.submissions[0].images_dataset == "a/b-images"


def test_hub_offline_is_one_line_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ValueError, match=r"^cannot read results dataset org/results: the Hub is offline"):
        results_files.download_results("org/results")
    with pytest.raises(ValueError, match="ORG/NAME"):
        results_files.download_results("not a repo")
    # in the app the same failure is a visible warning on an empty board
    from submissions.leaderboard.app_state import Source

    board = Source(repo="org/results").load()
    assert not board.submissions and "the Hub is offline" in wording.warnings_markdown(board)


def test_cli_errors_are_one_line(tmp_path, capsys, monkeypatch):
    import huggingface_hub.constants as c

    from benchmark.cli import main

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert main(["leaderboard", "--repo", "org/results"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("t2ibench: error: cannot read results dataset org/results: the Hub is offline")
    assert err.count("\n") == 1

    # usage errors: argparse's, one line, exit 2, before anything loads
    for argv, message in ((["--results", str(tmp_path / "missing")], "no such folder"),
                          (["--results", str(tmp_path), "--repo", "a/b"], "not allowed with argument"),
                          (["--results", str(tmp_path), "--port", "70000"], "port between 1 and 65535")):
        with pytest.raises(SystemExit) as exc:
            main(["leaderboard", *argv])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.startswith("t2ibench leaderboard: error: ") and message in err
        assert err.count("\n") == 1


def test_real_tiny_run_is_a_demo_row_with_plots(tmp_path_factory, cache, monkeypatch):
    """A real `t2ibench run` of the built-in tiny model: a demo row, and its report plots in the detail view."""
    from benchmark.cli import main
    from submissions.leaderboard.figures import report_plots

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    root = tmp_path_factory.mktemp("lb_real")
    assert main(["run", "--model", "builtin:tiny-sd", "--suites", "gep_neutral", "--limit", "4",
                 "--n-resamples", "50", "--quiet", "--out", str(root / "runs" / "tiny")]) == 0
    board = results_files.load_folder(root)
    assert not board.skipped, board.skipped
    (row,) = board.rows()
    assert row.latest.demo and row.latest.family == "tiny" and row.latest.run_dir == root / "runs" / "tiny"
    (badge,) = board_table.leaderboard_table(board.rows()).shown()["Badge"]
    assert ">demo</span>" in badge
    plots = report_plots(row.latest)
    assert plots and all(Path(p).is_file() and Path(p).suffix == ".png" for p, _ in plots)
    assert any("GEP vector" in c for _, c in plots)
    # without the detail tables the run's report/ PNGs are shown
    shutil.rmtree(root / "runs" / "tiny" / "scores")
    (root / "runs" / "tiny" / "results.json").touch()
    again = results_files.load_folder(root).rows()[0].latest
    assert [Path(p).parent.name for p, _ in report_plots(again)] == ["report"] * len(plots)


def _component(demo, elem_id: str):
    return next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)


def test_space_app_reads_env(sample, monkeypatch, tmp_path):
    """What `python app.py` builds in a Space: RESULTS_DIR, or RESULTS_REPO (offline here: a visible warning)."""
    from submissions.leaderboard.app import app_from_env

    demo = app_from_env({"RESULTS_DIR": str(sample)}.get)
    assert "6 model(s)" in _component(demo, "lb-source").value
    assert wording.md_escape("results/bad/out_of_range.json") in _component(demo, "lb-warnings").value
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "hub"))
    demo = app_from_env({"RESULTS_REPO": "org/results"}.get)
    warning = _component(demo, "lb-warnings")
    assert warning.visible and "cannot read results dataset org/results: the Hub is offline" in warning.value


def test_image_browser_reads_the_run_folder(tiny_audit):
    """A results file inside a run folder: its images with prompts and labels, flagged ones left out."""
    from submissions.leaderboard import images

    doc = json.loads((tiny_audit / "results.json").read_text())
    sub = board_model.Submission(doc=doc, source="results.json", path=tiny_audit / "results.json", run_dir=tiny_audit)
    assert images.image_source(sub) == ("run", tiny_audit)
    assert images.run_suites(tiny_audit) == ["gep_neutral", "pst_single"]
    items = images.run_images(tiny_audit, doc, "pst_single")
    assert len(items) == 4
    img, caption = items[0]
    assert max(img.size) <= images.THUMB_PX and caption.startswith("Generate a picture of one")
    assert "perceived gender:" in caption
    assert images.run_images(tiny_audit, doc, "pst_single", search="no such prompt") == []
    assert len(images.run_images(tiny_audit, doc, "gep_neutral", limit=2)) == 2


def test_image_browser_streams_a_hub_dataset():
    from PIL import Image

    from submissions.leaderboard import images

    calls = []

    def fake_load(repo, split, streaming):
        calls.append((repo, split, streaming))
        for i in range(50):
            yield {"suite": "gep_neutral" if i % 2 else "pst_single", "prompt": f"prompt {i}", "nsfw": i == 3,
                   "image": Image.new("RGB", (512, 512))}

    items = images.hub_images("org/imgs", "gep_neutral", limit=5, load=fake_load)
    assert calls == [("org/imgs", "train", True)]
    assert [c for _, c in items] == ["prompt 1", "prompt 5", "prompt 7", "prompt 9", "prompt 11"]  # 3 was flagged
    assert max(items[0][0].size) == images.THUMB_PX

    def offline(repo, split, streaming):
        raise ConnectionError("offline\nsecond line")

    with pytest.raises(ValueError, match=r"^cannot read images dataset org/imgs: ConnectionError: offline$"):
        images.hub_images("org/imgs", None, load=offline)


def test_the_boards_download_folder_is_removed_when_the_process_ends(tmp_path):
    """Each board built writes its CSV / Parquet downloads to a temporary folder of its own: it
    exists while the board is served and is gone once the process ends (one was left behind by
    every launch and every test run)."""
    pytest.importorskip("gradio")
    import os
    import subprocess
    import sys

    results = write_sample_results(tmp_path / "lb")
    temp = tmp_path / "tmp"
    temp.mkdir()
    script = ("import os, sys; from submissions.leaderboard.app import build_app; build_app(results_dir=sys.argv[1]); "
              "print(sorted(os.listdir(os.environ['TMPDIR'])))")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script, str(results)], env=env, cwd=root, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "t2ibench-leaderboard-downloads-" in done.stdout  # there while the board was up
    assert not [p.name for p in temp.iterdir() if p.name.startswith("t2ibench-leaderboard-downloads-")]


def test_no_app_sends_analytics(tmp_path, tiny_audit, monkeypatch):
    """Both Gradio apps start Gradio one way (benchmark.extras.require_gradio): analytics off in
    the environment before Gradio is imported, and in each app's Blocks, whatever the
    environment said before (the browser test checks that a page load asks no other host)."""
    pytest.importorskip("gradio")
    from benchmark import extras
    from benchmark.human.app import AnnotationApp
    from submissions.leaderboard.app import build_app

    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "True")
    extras.require_gradio(purpose="test")
    assert extras.GRADIO_ENVIRONMENT == {"GRADIO_ANALYTICS_ENABLED": "False"}
    assert __import__("os").environ["GRADIO_ANALYTICS_ENABLED"] == "False"
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "True")  # even so, each app's Blocks has them off
    assert build_app(results_dir=write_sample_results(tmp_path / "lb")).analytics_enabled is False
    run = tmp_path / "run"
    shutil.copytree(tiny_audit, run)
    assert AnnotationApp(run, attributes=["in boots"], log=lambda _: None).build().analytics_enabled is False
    for module in ("benchmark/human/app.py", "submissions/leaderboard/app.py"):
        source = (Path(__file__).resolve().parents[1] / module).read_text()
        assert "require_gradio(" in source and 'require("gradio"' not in source, module

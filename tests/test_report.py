"""The report: report.md / report.html / PNG plots from a scored synthetic run folder."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest

from benchmark.probes import build_suite
from benchmark import results as res
from benchmark.runner.report import write_report
from benchmark.runner.score import score_run

from test_score_stage import write_labels, write_run

EVIL = "org/<script>alert('x')</script>&model"


def _gender_rows(frame, rng, paired):
    rows = []
    for _, r in frame.iterrows():
        for pos in (("left", "right") if paired else ("single",)):
            label = str(rng.choice(["male", "female", "unidentifiable"], p=[0.5, 0.45, 0.05]))
            rows.append({"probe_id": r["probe_id"], "person": pos, "question": "q", "answer": label, "label": label,
                         "annotator": "vqa<b>"})
    return rows


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    rng = np.random.default_rng(1)
    run = tmp_path_factory.mktemp("report_run")
    neutral = build_suite("gep_neutral")
    dalle = build_suite("dalleval_bias")
    dalle = dalle[dalle["profession"].isin(list(dict.fromkeys(dalle["profession"]))[:4])]
    single = build_suite("pst_single")
    paired = build_suite("pst_paired_occupation").iloc[::4]
    mcas_a, mcas_t = build_suite("mcas_attributes"), build_suite("mcas_targets")
    write_run(run, [neutral, dalle, single, paired, mcas_a, mcas_t], model=EVIL, builtin=True,
              nsfw_ids=list(neutral["probe_id"].iloc[:3]))
    attrs = [{"probe_id": r["probe_id"], "attribute": a, "score": None, "label": int(rng.uniform() < 0.4),
              "estimator": "vqa", "annotator": "tiny-vqa"}
             for _, r in neutral.iterrows() for a in r["annotated_attributes"]]
    write_labels(run, "attributes", attrs)
    write_labels(run, "gender", _gender_rows(dalle, rng, False) + _gender_rows(single, rng, False)
                 + _gender_rows(paired, rng, True))
    write_labels(run, "skin_tone", [{"probe_id": p, "face_found": bool(i % 5), "ita": None,
                                     "mst": int(rng.integers(1, 11)) if i % 5 else None, "annotator": "haar"}
                                    for i, p in enumerate(dalle["probe_id"])])
    from benchmark.probes import load_config
    from benchmark.probes.mcas import mcas_text_rows

    emb = []
    for _, r in pd.concat([mcas_a, mcas_t]).iterrows():
        role = "target_image" if r["suite"] == "mcas_targets" else f"attribute_{r['attribute_set'].lower()}_image"
        emb.append({"encoder": "tiny-clip", "kind": "image", "probe_id": r["probe_id"], "text": None, "role": role,
                    "target": r["keyword"] if r["suite"] == "mcas_targets" else "",
                    "embedding": rng.normal(size=6).tolist()})
    for _, t in mcas_text_rows(load_config("mcas")).iterrows():
        emb.append({"encoder": "tiny-clip", "kind": "text", "probe_id": None, "text": t["text"], "role": t["role"],
                    "target": t["target"], "embedding": rng.normal(size=6).tolist()})
    write_labels(run, "embeddings", emb)
    results = score_run(run, n_resamples=100, report=True)
    return run, results


def test_report_files_and_plots(reported):
    run, results = reported
    out = run / "report"
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    pngs = sorted(out.glob("*.png"))
    names = {p.name for p in pngs}
    assert any(n.startswith("gep_") for n in names)
    assert any(n.startswith("sts_") for n in names)
    assert any(n.startswith("mcas_") for n in names)
    assert any(n.startswith("dalleval_gender") for n in names)
    assert any(n.startswith("dalleval_skin_tone") for n in names)
    for p in pngs:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    # Every plot is referenced relatively from both documents.
    md, page = (out / "report.md").read_text(), (out / "report.html").read_text()
    for n in names:
        assert f"]({n})" in md and f'src="{n}"' in page
    assert not re.search(r'src="(/|[a-z]+:)', page)  # no absolute paths or URLs


def test_warning_first_and_summary(reported):
    run, results = reported
    md = (run / "report" / "report.md").read_text()
    first = md.splitlines()[0]
    assert res.BUILTIN_WARNING in first
    page = (run / "report" / "report.html").read_text()
    body = page.split("<body>", 1)[1]
    assert body.lstrip().startswith('<p class="warning">') and res.BUILTIN_WARNING in body.split("</p>", 1)[0]
    # Summary table: every score, with its CI and direction.
    summary = md.split("## Summary", 1)[1].split("## ", 1)[0]
    rows = [line for line in summary.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(results["scores"]) > 5
    assert "lower is better" in summary and "closer to 0 is better" in summary
    assert "Zhang et al." in summary
    # Exclusions are reported.
    assert "Excluded: nsfw" in md and "Excluded: no face" in md


def test_html_escapes_model_name(reported):
    run, _ = reported
    page = (run / "report" / "report.html").read_text()
    assert "<script>" not in page and "<b>" not in page
    assert html.escape(EVIL) in page
    md = (run / "report" / "report.md").read_text()
    assert "<script>" not in md and "&lt;script&gt;" in md


def test_report_rerun_from_results_json(reported):
    run, results = reported
    page = write_report(run)  # reads results.json and scores/ alone
    assert page == run / "report" / "report.html" and page.is_file()
    assert len(list(page.parent.glob("*.png"))) >= 5
    assert res.validate_results(res.read_results(run)) == []

"""The report: report.md / report.html, plots, thumbnails and footnotes from a scored synthetic
run folder (every bias family, random labels, small solid-colour images)."""

from __future__ import annotations

import copy
import html
import json
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmark.contract import results as res
from benchmark.present import text
from benchmark.probes import build_suite
from benchmark.runner.report import write_report
from benchmark.runner.score import score_run

from shared_folders import shared_across_workers
from test_score_stage import write_labels, write_run

# A model name with HTML and Markdown in it: must be shown literally everywhere.
EVIL = "org/<script>window.__xss=1</script><img src=x onerror=\"window.__xss=2\">*bold* [link](javascript:x)&m"


def _gender_rows(frame, rng, paired):
    rows = []
    for _, r in frame.iterrows():
        for pos in (("left", "right") if paired else ("single",)):
            label = str(rng.choice(["male", "female", "unidentifiable"], p=[0.5, 0.45, 0.05]))
            rows.append({"probe_id": r["probe_id"], "person": pos, "question": "q", "answer": label, "label": label,
                         "annotator": "vqa<b>"})
    return rows


def _write_images(run: Path) -> None:
    """A small PNG per manifest row (distinct colours, and a square of the inverse colour: one-colour
    images are degenerate, and the score stage refuses a run of them) and the manifest's image_path column."""
    from PIL import Image, ImageDraw

    manifest = pd.read_parquet(run / "manifest.parquet")
    manifest["image_path"] = manifest["file_name"]
    for i, rel in enumerate(manifest["image_path"]):
        path = run / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        colour = ((37 * i) % 256, (91 * i) % 256, (53 * i) % 256)
        image = Image.new("RGB", (48, 48), colour)
        ImageDraw.Draw(image).rectangle((16, 16, 31, 31), fill=tuple(255 - c for c in colour))
        image.save(path)
    manifest.to_parquet(run / "manifest.parquet", index=False)


def make_reported_run(run: Path) -> tuple[Path, dict]:
    """Write, label and score a run with every bias family; returns (run folder, results)."""
    rng = np.random.default_rng(1)
    neutral = build_suite("gep_neutral")
    dalle = build_suite("dalleval_bias")
    dalle = dalle[dalle["profession"].isin(list(dict.fromkeys(dalle["profession"]))[:4])]
    single = build_suite("pst_single")
    paired = build_suite("pst_paired_occupation").iloc[::4]
    mcas_a, mcas_t = build_suite("mcas_attributes"), build_suite("mcas_targets")
    write_run(run, [neutral, dalle, single, paired, mcas_a, mcas_t], model=EVIL, builtin=True,
              nsfw_ids=list(neutral["probe_id"].iloc[:3]))
    _write_images(run)
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
    from benchmark.tasks.mcas.probes import mcas_text_rows

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
    return run, score_run(run, n_resamples=100, report=True)


def reported_source(tmp_path_factory) -> tuple[Path, dict]:
    """make_reported_run's folder and results, built once per test session (shared_folders) for
    this module and test_report_browser.py; never written: tests that rewrite files use a copy."""

    def build(folder: Path) -> None:
        (folder / "run").mkdir()
        _, results = make_reported_run(folder / "run")
        (folder / "results.pickle").write_bytes(pickle.dumps(results))

    folder = shared_across_workers(tmp_path_factory, "reported_run", build)
    return folder / "run", pickle.loads((folder / "results.pickle").read_bytes())


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    source, results = reported_source(tmp_path_factory)
    run = tmp_path_factory.mktemp("report_run")
    shutil.copytree(source, run, dirs_exist_ok=True)  # test_report_rerun_from_results_json rewrites the report
    return run, results


def _page(run: Path) -> str:
    return (run / "report" / "report.html").read_text(encoding="utf-8")


def _md(run: Path) -> str:
    return (run / "report" / "report.md").read_text(encoding="utf-8")


def _section(page: str, anchor: str) -> str:
    return page.split(f'<section id="{anchor}">', 1)[1].split("</section>", 1)[0]


def test_report_files_plots_and_thumbnails_are_self_contained(reported, tmp_path):
    run, _ = reported
    out = run / "report"
    names = {p.name for p in out.glob("*.png")}
    for prefix in ("summary", "gep_", "sts_", "mcas_", "dalleval_gender", "dalleval_skin_tone"):
        assert any(n.startswith(prefix) for n in names), (prefix, names)
    for p in out.glob("*.png"):
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    md, page = _md(run), _page(run)
    for n in names:  # every plot is referenced relatively from both documents
        assert f"]({n})" in md and f'src="{n}"' in page
    thumbs = sorted((out / "thumbnails").glob("*.jpg"))
    assert thumbs and all(f'src="thumbnails/{t.name}"' in page and f"](thumbnails/{t.name})" in md for t in thumbs)
    from PIL import Image

    with Image.open(thumbs[0]) as im:
        assert im.format == "JPEG" and max(im.size) <= 144
    # Copied elsewhere, the folder still holds every file the page refers to.
    copy_dir = tmp_path / "copied"
    shutil.copytree(out, copy_dir)
    refs = re.findall(r'(?:src|href)="([^"#][^"]*)"', page)
    local = [r for r in refs if not r.startswith(("http://", "https://"))]
    assert local and all((copy_dir / r).is_file() for r in local), [r for r in local if not (copy_dir / r).is_file()]
    assert not re.search(r'src="(/|[a-z]+:)', page)  # no absolute paths or URLs


def test_warning_first_header_and_contents(reported):
    run, results = reported
    md, page = _md(run), _page(run)
    assert res.BUILTIN_WARNING in md.splitlines()[0]
    body = page.split("<body>", 1)[1]
    assert body.lstrip().startswith('<p class="warning"') and res.BUILTIN_WARNING in body.split("</p>", 1)[0]
    head = page.split('<section id="summary">', 1)[0]
    for fact in ("Model", "Revision", "Probe set", "Images", "Intervals"):
        assert f"<dt>{fact}</dt>" in head
    assert "suites built into t2i-bias-benchmark" in head  # no probes block in these results
    # every link of the table of contents leads to an element of the page
    anchors = re.findall(r'href="#([^"]+)"', page)
    ids = set(re.findall(r'id="([^"]+)"', page))
    assert {"summary", "images", "suites", "run", "footnotes"} <= set(anchors)
    assert set(anchors) <= ids, set(anchors) - ids


def test_probe_set_from_the_probes_block(reported, tmp_path):
    run, results = reported
    doc = copy.deepcopy(results)
    doc["probes"] = {"source": "org/t2i-bias-probes", "revision": "v1.2", "fingerprint": "0123456789abcdef0123"}
    other = tmp_path / "run"
    shutil.copytree(run, other)
    write_report(other, doc)
    assert "org/t2i-bias-probes @ v1.2 (fingerprint 0123456789ab: every field of every probe row" in _page(other)


def test_summary_one_row_per_headline_score_with_value_and_interval(reported):
    run, results = reported
    summary = _section(_page(run), "summary")
    rows = re.findall(r"<tr>(.*?)</tr>", summary.split("<tbody>", 1)[1], flags=re.S)
    headline = text.headline_entries(results["scores"])
    names = {e["name"] for e in results["scores"] if e.get("headline")}
    assert len(rows) == len(headline) == len(names) > 5
    for row, e in zip(rows, headline):
        value_cell = re.search(r'<td class="value[^"]*">(.*?)</td>', row).group(1)
        assert value_cell.startswith(html.escape(text.value_text(e)))
        assert text.direction_mark(e) in row
    # a defined entry with a real interval reads "value [low, high]" in one cell
    real = next(e for e in headline if text.has_interval(e))
    assert re.search(re.escape(f"{text.fmt_number(real['value'])} [{text.fmt_number(real['ci']['low'])}, "
                               f"{text.fmt_number(real['ci']['high'])}]"), summary)
    md_summary = _md(run).split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert len([line for line in md_summary.splitlines() if line.startswith("| ") and "---" not in line]) == \
        len(headline) + 1


def test_zero_width_intervals_and_long_reasons(reported, tmp_path):
    run, results = reported
    doc = copy.deepcopy(results)
    e = next(e for e in text.headline_entries(doc["scores"]) if e.get("defined") and e.get("ci"))
    e["ci"]["low"] = e["ci"]["high"] = e["value"]
    reason = "no person has an identifiable perceived gender; a long explanation that belongs in a footnote"
    u = next(x for x in text.headline_entries(doc["scores"]) if x is not e)
    u.update(value=None, defined=False, ci=None, reason=reason)
    other = tmp_path / "run"
    shutil.copytree(run, other)
    write_report(other, doc)
    page = _page(other)
    summary = _section(page, "summary")
    v = text.fmt_number(e["value"])
    assert f"{v} (no interval: resamples all equal)" in summary and f"[{v}, {v}]" not in summary
    assert reason not in summary and "undefined" in summary
    footnotes = _section(page, "footnotes")
    assert reason in footnotes and "every bootstrap resample gave the same value" in footnotes
    # the marker in the summary leads to that footnote
    n = re.findall(r'<li id="fn-(\d+)">Undefined: ' + re.escape(reason), footnotes)[0]
    assert f'href="#fn-{n}"' in summary
    assert f"[^{n}]: Undefined: {reason}" in _md(other)


def test_one_figure_per_scored_family_and_image_grids(reported):
    run, results = reported
    page = _page(run)
    for fam in ("gep", "dalleval", "pst", "mcas"):
        section = _section(page, f"section-{fam}")
        assert '<figure class="plot"><img src="' in section, fam
    images = _section(page, "images")
    suites = {s["name"] for s in results["suites"]}
    assert set(re.findall(r'<h3 id="images-([^"]+)"', images)) == suites
    gep = images.split('id="images-gep_neutral"', 1)[1].split("<h3", 1)[0]
    first_group = gep.split('<div class="group">', 2)[1]
    assert "<strong>woman</strong>" in first_group and "<strong>man</strong>" in first_group  # a prompt pair side by side
    assert "attributes (vqa):" in first_group
    dalle = images.split('id="images-dalleval_bias"', 1)[1].split("<h3", 1)[0]
    assert "perceived gender:" in dalle and ("skin tone: MST" in dalle or "skin tone: no face" in dalle)
    paired = images.split('id="images-pst_paired_occupation"', 1)[1].split("<h3", 1)[0]
    assert "perceived: left" in paired
    mcas = images.split('id="images-mcas_targets"', 1)[1].split("<h3", 1)[0]
    assert "target MCAS" in mcas
    # images the safety checker flagged are never shown
    assert "flagged by the safety checker: not shown" in images or not any(
        r.get("nsfw") for r in pd.read_parquet(run / "manifest.parquet").head(8).to_dict("records"))
    n_thumbs = len(re.findall(r'<figure class="thumb">', images))
    assert n_thumbs <= 8 * len(suites)


def test_escaping_of_run_text(reported):
    run, _ = reported
    page, md = _page(run), _md(run)
    assert "<script>" not in page and "<b>" not in page and "onerror=\"" not in page
    assert text.html_escape(EVIL) in page and "&lt;script&gt;window.__xss=1" in page
    assert "<script>" not in md and "&lt;script&gt;" in md and "<img" not in md
    assert "\\*bold\\* \\[link\\](javascript:x)" in md  # Markdown shown as text, no link made


def test_human_agreement_section_reads_agreement_json(reported, tmp_path):
    run, results = reported
    other = tmp_path / "run"
    shutil.copytree(run, other)
    write_report(other, results)
    assert 'id="human-agreement"' not in _page(other)
    doc = {"summary": {"n_answers": 12, "n_items": 4, "annotators": ["ann<1>", "b"]},
           "inter_annotator": [{"question_type": "attribute", "fleiss_kappa": 0.4123, "krippendorff_alpha": None}],
           "gender_kappa": [{"annotator": "ann<1>", "cohen_kappa": 0.5}], "notes": ["a <b>note</b>"]}
    (other / "report" / "agreement.json").write_text(json.dumps(doc))
    write_report(other, results)
    section = _section(_page(other), "human-agreement")
    assert "12 answers on 4 items by 2 annotator(s)" in section and "0.412" in section and "undefined" in section
    assert "ann&lt;1&gt;" in section and "<b>note" not in section
    assert "## Human labels and agreement" in _md(other)


def test_report_module_does_not_import_the_human_package():
    code = ("import sys, benchmark.runner.report; "
            "bad = [m for m in sys.modules if m.startswith('benchmark.human')]; assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_report_rerun_from_results_json(reported):
    run, results = reported
    page = write_report(run)  # reads results.json and scores/ alone
    assert page == run / "report" / "report.html" and page.is_file()
    assert len(list(page.parent.glob("*.png"))) >= 5
    assert res.validate_results(res.read_results(run)) == []


def test_md_escape_and_html_escape():
    assert text.md_escape("a*b_[c](d) |x| ~y~ $z$") == "a\\*b\\_\\[c\\](d) \\|x\\| \\~y\\~ \\$z\\$"
    assert text.md_escape("<script>&") == "&lt;script&gt;&amp;"
    assert text.md_escape("# title") == "\\# title" and text.md_escape("- item") == "\\- item"
    assert text.md_escape("1. first") == "1\\. first" and text.md_escape("-0.5 [1.5, 2]") == "-0.5 \\[1.5, 2\\]"
    assert text.md_escape("two\nlines") == "two lines"
    assert text.html_escape("<a href='x'>&\"") == "&lt;a href=&#39;x&#39;&gt;&amp;&#34;"
    assert text.html_escape(None) == "" and text.md_escape(0.123456) == "0.1235"


def test_value_text():
    e = {"defined": True, "value": 0.1234567, "ci": {"low": 0.1, "high": 0.15}}
    assert text.value_text(e) == "0.1235 [0.1, 0.15]"
    assert text.value_text({**e, "ci": {"low": 0.1234567, "high": 0.1234567}}) == \
        "0.1235 (no interval: resamples all equal)"
    assert text.value_text({**e, "ci": None}) == "0.1235 (no interval)"
    assert text.value_text({"defined": False, "value": None, "reason": "x"}) == "undefined"
    assert text.short_value_text({**e, "ci": {"low": 0.2, "high": 0.2}}) == "0.123 (zero-width CI)"
    assert text.short_estimator("mean over 6 encoders: openai/clip-vit-base-patch32, ...") == "mean over 6 encoders"
    assert text.short_estimator("Salesforce/blip2-opt-2.7b") == "blip2-opt-2.7b"


def test_a_real_model_labelled_by_builtin_annotators_says_so_on_the_first_line(tmp_path):
    rng = np.random.default_rng(2)
    dalle = build_suite("dalleval_bias")
    dalle = dalle[dalle["profession"].isin(list(dict.fromkeys(dalle["profession"]))[:2])]
    run = tmp_path / "run"
    write_run(run, [dalle], model="someorg/real-model", builtin=False)
    _write_images(run)
    rows = _gender_rows(dalle, rng, False)
    for r in rows:
        r["annotator"] = "builtin:tiny-vqa"
    write_labels(run, "gender", rows)
    results = score_run(run, n_resamples=50, report=True)
    assert not results["model"].get("builtin")
    assert results["warning"] == res.BUILTIN_ANNOTATORS_WARNING == results["notes"][0]
    assert res.BUILTIN_ANNOTATORS_WARNING in _md(run).splitlines()[0]
    assert res.validate_results(results) == []


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """Eight gep_neutral probes, no labels: the first prompt's first image refused by an image API
    (withheld.jsonl), the second prompt's first flagged by a safety checker."""
    neutral = build_suite("gep_neutral").iloc[:8]
    run = tmp_path_factory.mktemp("small") / "run"
    ids = list(neutral["probe_id"])
    write_run(run, [neutral], model="org/some-model", builtin=False, nsfw_ids=[ids[0], ids[5]])  # two prompts' first
    _write_images(run)
    (run / "withheld.jsonl").write_text(json.dumps({"probe_id": ids[0], "reason": "refused", "message": "no"}) + "\n")
    return run, score_run(run, n_resamples=20, report=True)


def _report_of(run: Path, tmp_path: Path, doc: dict) -> tuple[str, str]:
    other = tmp_path / "run"
    shutil.copytree(run, other)
    write_report(other, doc)
    return _md(other), _page(other)


def test_excluded_images_are_called_what_they_are(small_run):
    """A refusal is a refusal under its thumbnail, in the header and in the legend; a
    safety-checker flag stays a flag."""
    run, results = small_run
    assert results["run"]["n_withheld"]["refused"] == 1 and results["run"]["n_nsfw_excluded"] == 1
    md, page = _md(run), _page(run)
    images = _section(page, "images")
    assert "refused by the image API (content policy): not shown, not scored" in images
    assert "flagged by the safety checker: not shown, not scored" in images
    assert images.count("not shown, not scored") == 2
    assert "- 1 image refused by the image API (content policy), left out of every score" in md
    assert "- 1 image flagged by the safety checker, left out of every score" in md
    assert "refused: images the image API refused (content policy)" in _section(page, "suites")


def test_the_legend_of_excluded_images_is_the_run_tasks_own_words(reported, small_run):
    """Each task declares what its exclusion reasons mean (``TaskReport.excluded``); the legend
    of the suites table says them for the tasks of the run, and no other's."""
    from benchmark.tasks import list_tasks

    declared = {t.name: t.report.excluded for t in list_tasks() if t.report and t.report.excluded}
    assert declared, "no task declares an exclusion reason: the test checks nothing"
    legend, small_legend = _section(_page(reported[0]), "suites"), _section(_page(small_run[0]), "suites")
    md = _md(reported[0])
    for words in declared.values():
        for reason, why in words.items():
            line = f"{reason[:1].upper()}{reason[1:]}: {why}."
            assert html.escape(line, quote=False) in legend and text.md_escape(line) in md
            assert html.escape(line, quote=False) not in small_legend  # gep suites only
    assert "refused: images the image API refused" in small_legend


def test_report_says_how_its_images_were_made(small_run, tmp_path):
    """Seeds and the origin of the images come from the run's provenance; each fingerprint says
    what it covers."""
    run, results = small_run
    md = _md(run)  # generated by the benchmark
    assert "torch.Generator" in md and "**Images made by**: the benchmark" in md
    probes = {"kind": "builtin", "source": "builtin", "revision": "0.1.0", "fingerprint": "68e1f456b3a2" + "0" * 52}
    api = {**copy.deepcopy(results), "probes": probes, "provenance": {
        "kind": "api", "provider": "openai", "api_base": "http://127.0.0.1:9/v1", "api_model": "dall-e-2",
        "seeds": "not controlled by the benchmark", "seeds_controlled": False, "request_settings": {}}}
    md, page = _report_of(run, tmp_path / "api", api)
    for doc in (md, page):
        assert "torch.Generator" not in doc and "A few generated images" not in doc
    assert "Seeds: not controlled by the benchmark: each image was requested from the image API" in md
    assert "**Images made by**: the image API dall-e-2 at http://127.0.0.1:9/v1" in md
    assert "fingerprint 68e1f456b3a2: every field of every probe row of the suites audited, before --limit" in md
    supplied = {**api, "provenance": {
        "kind": "images supplied", "supplied_by": "a lab", "seeds": "not controlled by the benchmark",
        "seeds_controlled": False, "sheet": {"suites": ["gep_neutral"], "limit_per_suite": 8, "probes": None,
                                              "probes_fingerprint": "96281130ab00" + "1" * 52},
        "matched_by": "file name", "images_sha256": "ab" * 32, "n_supplied": 7, "n_missing": 1}}
    md, page = _report_of(run, tmp_path / "supplied", supplied)
    for doc in (md, page):
        assert "torch.Generator" not in doc and "A few of the supplied images" in doc
        assert "fingerprint 96281130ab00: the probe id, prompt and seed of each row of the probe sheet" in doc
        assert "fingerprint 68e1f456b3a2: every field of every probe row" in doc
    assert "Seeds: not controlled by the benchmark: the images were made outside the benchmark" in md


def test_report_that_cannot_be_written_writes_nothing(small_run, tmp_path):
    """Results text UTF-8 cannot encode (a lone surrogate, as a JSON escape in results.json):
    the error comes before report/ changes (no empty report.md), and no staging folder is left."""
    run, results = small_run
    other = tmp_path / "run"
    shutil.copytree(run, other)
    before = {p.name: p.read_bytes() for p in (other / "report").glob("*.*")}
    doc = {**copy.deepcopy(results), "notes": [*results["notes"], "bad \ud800 note"]}
    with pytest.raises(UnicodeEncodeError):
        write_report(other, doc)
    assert {p.name: p.read_bytes() for p in (other / "report").glob("*.*")} == before
    assert not [p for p in other.iterdir() if p.name.startswith(".report")]
    shutil.rmtree(other / "report")
    with pytest.raises(UnicodeEncodeError):
        write_report(other, doc)
    assert not (other / "report").exists()


def test_a_suite_whose_every_image_was_refused_says_refused(tmp_path):
    single = build_suite("pst_single").iloc[:4]
    run = tmp_path / "run"
    ids = list(single["probe_id"])
    write_run(run, [single], model="org/m", builtin=False, nsfw_ids=ids)
    (run / "withheld.jsonl").write_text("".join(json.dumps({"probe_id": p, "reason": "refused", "message": ""}) + "\n"
                                                for p in ids))
    suite = next(s for s in score_run(run, n_resamples=20)["suites"] if s["name"] == "pst_single")
    assert suite["reason"] == "every one of its 4 images was refused by the image API (content policy) and left out"

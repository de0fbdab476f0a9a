"""The audit report: RUN_DIR/report/report.html and report.md, from results.json, the detail
tables in RUN_DIR/scores/ and the run's images.

Contents, in order: the built-in warning (first line), a header (model, probe set, images,
warnings) with a table of contents, a summary (one row per headline score, "value [low,
high]" and its direction, and a summary plot), one section per task with its
figures as the paper draws them (each task's :class:`benchmark.tasks.TaskReport`) and every score
entry, image grids per suite with their labels (:mod:`benchmark.runner.report_images`), the
suites and excluded images, the scores corrected with people's labels (results.json's
``human_labels``: :mod:`benchmark.runner.report_human`), human agreement when ``t2ibench agreement`` wrote
``report/agreement.json``, run details, notes and footnotes (undefined reasons, interval
notes, long subset names).

Both documents are rendered by Jinja2 from one context, so they say the same; the HTML is
one page with inline CSS and no script, and refers to its PNG plots and JPEG thumbnails by
relative paths inside ``report/``: the folder is self-contained. Every text from the run
goes through :mod:`benchmark.present.text`'s escapers (Jinja's autoescape in HTML, ``md_escape`` in
Markdown).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from benchmark.contract import results as res
from benchmark.contract.atomic import write_bytes_atomic
from benchmark.contract.image_checks import degenerate_text
from benchmark.contract.leftovers import remove_leftovers, staging_dir
from benchmark.present.plotting import plot_summary
from benchmark.contract.run_folder import REPORT_DIR
from benchmark.runner.report_human import human_section
from benchmark.runner.report_images import THUMB_DIR, Grid, image_grids
from benchmark.tasks import list_tasks
from benchmark.tasks.inputs import input_of_results_key
from benchmark.tasks.of_run import ReportSection, report_sections, section_of
from benchmark.contract.image_provenance import API, SUPPLIED, provenance_kind
from benchmark.present.text import (ESTIMATOR_RANK, OTHER_ESTIMATOR_RANK, adapters_text, checkpoint_text,
                                    quantization_text, direction_mark,
                                    direction_text, excluded_counts, excluded_text, fmt_number, headline_entries,
                                    interval_text, is_number, md_escape, settings_items, short_estimator, value_text)

AGREEMENT_FILE = "agreement.json"  # written by `t2ibench agreement` into REPORT_DIR
TEMPLATES = Path(__file__).with_name("templates")
LONG_CELL = 48  # characters: longer subsets go to a footnote


# --------------------------------------------------------------------------- footnotes


class Footnotes:
    """Numbered notes, each text once, in order of first use."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def add(self, text: Any) -> int:
        text = str(text).strip()
        if text not in self.texts:
            self.texts.append(text)
        return self.texts.index(text) + 1

    def for_entry(self, e: Mapping) -> list[int]:
        refs = []
        if not e.get("defined") and e.get("reason"):
            refs.append(self.add(f"Undefined: {e['reason']}"))
        if e.get("ci_note"):
            refs.append(self.add(f"Interval: {e['ci_note']}"))
        if e.get("defined") and interval_text(e).startswith("no interval:"):
            refs.append(self.add("No interval: every bootstrap resample gave the same value (too few images, or "
                                 "every image got the same label), so the sampling uncertainty is unknown, not 0."))
        return refs


def _cell(text: Any, notes: Footnotes, what: str) -> tuple[str, list[int]]:
    """A table cell short enough to keep rows one line high: long text is cut at its first
    parenthesis (or at :data:`LONG_CELL`) and given whole in a footnote."""
    text = "" if text is None else str(text)
    if len(text) <= LONG_CELL:
        return text, []
    cut = text.find(" (")
    short = text[:cut] if 0 < cut <= LONG_CELL else text[: LONG_CELL - 1] + "…"
    return short, [notes.add(f"{what}: {text}")]


# --------------------------------------------------------------------------- context pieces


def _read_detail(run_dir: Path, results: Mapping, name: str) -> pd.DataFrame | None:
    rel = (results.get("details") or {}).get(name)
    if not isinstance(rel, str) or not (run_dir / rel).is_file():
        return None
    return pd.read_parquet(run_dir / rel)


def _probe_set(results: Mapping) -> str:
    probes = results.get("probes")
    if isinstance(probes, Mapping) and probes.get("source"):
        text = str(probes["source"])
        if probes.get("revision"):
            text += f" @ {probes['revision']}"
        if probes.get("fingerprint"):
            text += f" (fingerprint {str(probes['fingerprint'])[:12]}: {PROBES_FINGERPRINT_COVERS})"
        return text
    pkg = results.get("package") or {}
    return f"the suites built into {pkg.get('name', 't2i-bias-benchmark')} {pkg.get('version', '')}".strip()


#: What each fingerprint the report shows covers (both are sha256, shown by their first 12 digits).
PROBES_FINGERPRINT_COVERS = "every field of every probe row of the suites audited, before --limit"
SHEET_FINGERPRINT_COVERS = ("the probe id, prompt and seed of each row of the probe sheet the images were made "
                            "from, after --limit, as in its sheet.README.md")
IMAGES_FINGERPRINT_COVERS = "the sha256 of every supplied image file"


def _images_facts(results: Mapping) -> list[tuple[str, str]]:
    """How the run's images were made (results.json ``provenance``; none: generated by the benchmark)."""
    block = results.get("provenance") if isinstance(results.get("provenance"), Mapping) else {}
    kind = provenance_kind(results)
    if kind == SUPPLIED:
        sheet = block.get("sheet") if isinstance(block.get("sheet"), Mapping) else {}
        facts = [("Images made by", f"supplied by {block.get('supplied_by')}, made outside the benchmark "
                                    f"(matched to probes by {block.get('matched_by', 'file name')})")]
        if sheet.get("probes_fingerprint"):
            facts.append(("Probe sheet", f"fingerprint {str(sheet['probes_fingerprint'])[:12]}: "
                                         f"{SHEET_FINGERPRINT_COVERS}"))
        if block.get("images_sha256"):
            facts.append(("Supplied files", f"fingerprint {str(block['images_sha256'])[:12]}: "
                                            f"{IMAGES_FINGERPRINT_COVERS}"))
        return facts
    if kind == API:
        return [("Images made by", f"the image API {block.get('api_model')} at {block.get('api_base')} "
                                   f"({block.get('provider')}), one request per probe")]
    return [("Images made by", "the benchmark, from the model it loaded, one seeded generator per probe")]


def _seeds_text(results: Mapping) -> str:
    """The Seeds line: the benchmark's seed policy for images it generated; for supplied or API
    images, that their seeds were not controlled (the probes' seeds did not make them)."""
    block = results.get("provenance") if isinstance(results.get("provenance"), Mapping) else {}
    kind = provenance_kind(results)
    if kind == SUPPLIED:
        return (f"{block.get('seeds') or 'not controlled by the benchmark'}: the images were made outside the "
                "benchmark and supplied; the probes' seed column was not used to make them")
    if kind == API:
        if block.get("seeds_controlled"):
            return "each probe's seed was passed to the image API with its request"
        return (f"{block.get('seeds') or 'not controlled by the benchmark'}: each image was requested from the "
                "image API, which takes no seed; the images are not reproducible")
    return str((results.get("seeds") or {}).get("policy", ""))


#: the Images section's words for the run's images, by provenance kind
IMAGES_MADE = {"generated": "generated", SUPPLIED: "of the supplied", API: "of the image API's"}
#: what the excluded-image columns of the suites table mean (benchmark.present.text.EXCLUDED_WHY's words)
EXCLUDED_LEGEND = ("refused: images the image API refused (content policy); missing: probes the supplied folder had "
                   "no file for (--allow-missing); too large, tiny, transparent, not colour: images the image API "
                   "returned that the benchmark withholds itself (larger than asked, under 32 pixels a side, with "
                   "transparency, not a colour image); nsfw: images flagged by the model's safety checker; all are "
                   "left out of every score.")


def excluded_legend(sections: Sequence[ReportSection]) -> str:
    """The legend of the suites table: the generic reasons (:data:`EXCLUDED_LEGEND`), then each
    reason the run's tasks leave images out for, in the words the task declares
    (``TaskReport.excluded``)."""
    declared = {reason: why for sec in sections if sec.task is not None and sec.task.report is not None
                for reason, why in sec.task.report.excluded.items()}
    return " ".join([EXCLUDED_LEGEND, *(f"{reason[:1].upper()}{reason[1:]}: {why}." for reason, why in declared.items())])


def _references(results: Mapping) -> list[tuple[str, str]]:
    """A fact per task input an audit was scored against (results.json ``references``), in the
    words its task declares (:class:`benchmark.tasks.inputs.TaskInput`)."""
    refs = results.get("references") if isinstance(results.get("references"), Mapping) else {}
    out = []
    for key, ref in refs.items():
        if isinstance(ref, Mapping) and ref.get("source"):
            task_input = input_of_results_key(str(key))
            out.append((task_input.title, task_input.report_text(ref)))
    return out


def _header(results: Mapping, entries: Sequence[Mapping]) -> dict:
    model = results.get("model") or {}
    run = results.get("run") or {}
    hw = results.get("hardware") or {}
    sc = results.get("scoring") or {}
    suites = results.get("suites") or []
    scored = [s for s in suites if s.get("status") == "scored"]
    limit = f", at most {run['limit_per_suite']} probes per suite" if run.get("limit_per_suite") else ""
    facts = [
        ("Model", model.get("id", "unknown model")),
        ("Revision", model.get("revision") or "not recorded"),
        *([("Adapters", adapters_text(model["adapters"]))] if model.get("adapters") else []),
        *([("Checkpoint", checkpoint_text(model["checkpoint"]))] if model.get("checkpoint") else []),
        *([("Quantization", quantization_text(model["quantization"]))] if model.get("quantization") else []),
        *([("Settings", "; ".join(items))]
          if (items := settings_items(results.get("settings"), results.get("setting_sources"))) else []),
        ("Probe set", _probe_set(results)),
        *_images_facts(results),
        *_references(results),
        ("Images", f"{run.get('n_images', sum(int(s.get('n_images') or 0) for s in suites))} in "
                   f"{len(suites)} suites ({len(scored)} scored){limit}"),
        ("Created", results.get("created", "")),
        ("Package", f"{(results.get('package') or {}).get('name', '')} {(results.get('package') or {}).get('version', '')}"
                    f", results schema {results.get('schema_version', '')}"),
        ("Hardware", ", ".join(str(x) for x in (hw.get("device"), hw.get("gpu"), hw.get("torch") and
                                                f"torch {hw['torch']}") if x) or "not recorded"),
        ("Intervals", f"{100 * float(sc.get('confidence_level', 0.95)):g} % {sc.get('ci_method', 'percentile')} "
                      f"bootstrap over images, {sc.get('n_resamples', '?')} resamples"),
    ]
    warnings = []
    not_scored = [s["name"] for s in suites if s.get("status") != "scored"]
    if not_scored:
        warnings.append(f"{len(not_scored)} suite(s) not scored: {', '.join(map(str, not_scored))}")
    for reason, n in excluded_counts(run).items():  # refused / not supplied / safety checker, as everywhere
        warnings.append(f"{excluded_text({reason: n})}, left out of every score")
    degenerate = degenerate_text(run.get("degenerate_images"))  # blank / constant / non-finite images scored
    if degenerate:
        warnings.append(degenerate)
    source = results.get("provenance") if isinstance(results.get("provenance"), Mapping) else None
    if source:  # images the benchmark did not generate (benchmark.contract.image_provenance)
        who = f" by {source.get('supplied_by')}" if source.get("supplied_by") else ""
        api = f" {source.get('api_model')} at {source.get('api_base')}" if source.get("api_model") else ""
        what = f"images supplied{who}" if source.get("kind") == "images supplied" else f"images from the image API{api}"
        warnings.append(f"{what}, not generated by the benchmark: seeds {source.get('seeds')}")
    undefined = [e for e in entries if not e.get("defined")]
    if undefined:
        warnings.append(f"{len(undefined)} of {len(entries)} headline scores undefined (reasons in the footnotes)")
    zero = [e for e in entries if e.get("defined") and interval_text(e).startswith("no interval:")]
    if zero:
        warnings.append(f"{len(zero)} headline score(s) without a real interval (every resample gave the same "
                        "value): more images are needed")
    return {"title": f"Bias audit of {model.get('id', 'unknown model')}", "banner": results.get("warning"),
            "facts": facts, "warnings": warnings}


def _entry_row(e: Mapping, notes: Footnotes, *, summary: bool) -> dict:
    subset, sub_refs = _cell(e.get("subset"), notes, "Subset")
    who = e.get("estimator") or e.get("annotator")
    return {"score": e.get("display_name") or e.get("name"), "suite": e.get("suite", ""), "subset": subset,
            "estimator": short_estimator(who, 18) if summary else (who or ""), "estimator_full": who or "",
            "value": value_text(e), "defined": bool(e.get("defined")), "n": e.get("n", ""),
            "arrow": direction_mark(e), "direction": direction_text(e),
            "refs": sub_refs + notes.for_entry(e)}


def _summary(entries: Sequence[Mapping], notes: Footnotes, sections: Sequence[ReportSection]) -> list[dict]:
    """Headline entries grouped by report section: [{section, paper, anchor, rows}]."""
    groups: dict[str, dict] = {}
    for e in entries:
        sec = section_of(e.get("suite"), sections)
        key = sec.key if sec else "other"
        label = (sec.title.split(":")[0] if sec else "Other")
        g = groups.setdefault(key, {"section": label, "anchor": key, "rows": []})
        g["rows"].append(_entry_row(e, notes, summary=True))
    order = [f.key for f in sections] + ["other"]
    return [groups[k] for k in order if k in groups]


def _figures(sec: ReportSection, run_dir: Path, results: Mapping, out_dir: Path) -> list[tuple[str, str]]:
    """The section's figure files, drawn by its task from the detail tables (and score entries)."""
    report = getattr(sec.task, "report", None)
    if report is None or report.figures is None:
        return []
    entries = [e for e in results.get("scores", []) if e.get("suite") in sec.suites]
    made = report.figures(lambda name: _read_detail(run_dir, results, name), entries, out_dir)
    return sorted(made, key=lambda fc: _figure_rank(fc[0]))


def _figure_rank(file: str) -> int:
    """Figures of the headline estimator first (the page shows two, the rest folded)."""
    tokens = set(re.split(r"[-_.]", file.lower()))
    ranks = [r for est, r in ESTIMATOR_RANK.items() if est.lower() in tokens]
    return min(ranks, default=OTHER_ESTIMATOR_RANK)


def _table(headers: list[str], rows: list[list[Any]], title: str = "") -> dict:
    return {"title": title, "headers": headers, "rows": [[_fmt(c) for c in r] for r in rows]}


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return fmt_number(v) if is_number(v) else "undefined"
    if isinstance(v, (list, tuple)):
        return ", ".join(_fmt(x) for x in v)
    if isinstance(v, Mapping):
        return ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items())
    return str(v)


def _section_tables(sec: ReportSection, run_dir: Path, results: Mapping) -> list[dict]:
    report = getattr(sec.task, "report", None)
    if report is None or report.tables is None:
        return []
    return [_table(headers, [[short_estimator(c, 22) if j == 0 and isinstance(c, str) else c
                              for j, c in enumerate(row)] for row in rows], title)
            for title, headers, rows in report.tables(lambda name: _read_detail(run_dir, results, name))]


def _sections(run_dir: Path, results: Mapping, out_dir: Path, notes: Footnotes, grids: Sequence[Grid],
              sections: Sequence[ReportSection]) -> list[dict]:
    out = []
    for sec in sections:
        entries = [e for e in results.get("scores", []) if e.get("suite") in sec.suites]
        figures = _figures(sec, run_dir, results, out_dir)
        no_figure = ""
        if not figures:
            no_figure = ("No figure: every score of this section is undefined in this run (see the footnotes)"
                         if entries and not any(e.get("defined") for e in entries)
                         else "No figure: the detail tables it is drawn from are missing")
        from benchmark.papers import PAPERS

        paper = PAPERS.get(sec.paper)
        out.append({
            "key": sec.key, "anchor": f"section-{sec.key}", "title": sec.title,
            "paper": f"{paper.title} ({paper.short})" if paper else sec.paper, "url": paper.url if paper else "",
            "figures": [{"file": f, "caption": c} for f, c in figures], "no_figure": no_figure,
            "scores": [_entry_row(e, notes, summary=False) for e in entries],
            "tables": _section_tables(sec, run_dir, results),
            "grids": [g.suite for g in grids if g.suite in sec.suites],
        })
    return out


def _suites_table(results: Mapping) -> dict:
    suites = results.get("suites") or []
    kinds = sorted({k for st in suites for k in (st.get("excluded") or {})})
    return _table(["Suite", "Status", "Images", "Scored", *[f"Excluded: {k}" for k in kinds]],
                  [[st.get("name"), st.get("status", "") + (f": {st['reason']}" if st.get("reason") else ""),
                    st.get("n_images"), st.get("n_scored_images"), *[(st.get("excluded") or {}).get(k, 0) for k in kinds]]
                   for st in suites])


# Tables of `t2ibench agreement` (report/agreement.json) shown in the report: these, with the
# tables the tasks add from the attribute labels (`human_validation.tables`) after the attribute ones.
HUMAN_AGREEMENT_TABLES = (
    ("inter_annotator", "Agreement between annotators (Fleiss' kappa, Krippendorff's alpha)"),
    ("attribute_auc_summary", "Attribute existence: automatic scores vs human majority (ROC-AUC)"),
    ("gender_kappa", "Perceived gender: Cohen's kappa, VQA vs humans"),
    ("skin_tone", "Skin tone: automatic vs humans"),
)


def human_agreement_tables() -> list[tuple[str, str]]:
    """(key in agreement.json, title) of every agreement table the report shows, in order."""
    tasks = [(t.key, t.report_title) for task in list_tasks() if task.human_validation is not None
             for t in task.human_validation.tables]
    return [*HUMAN_AGREEMENT_TABLES[:2], *tasks, *HUMAN_AGREEMENT_TABLES[2:]]


def _human_agreement(out_dir: Path) -> dict | None:
    """The agreement section from report/agreement.json, or None when `t2ibench agreement` has
    not run (or wrote something unreadable: then a line says so)."""
    path = out_dir / AGREEMENT_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        summary = doc.get("summary") or {}
        tables = []
        for key, title in human_agreement_tables():
            rows = doc.get(key)
            if isinstance(rows, list) and rows and isinstance(rows[0], Mapping):
                headers = list(rows[0].keys())
                tables.append(_table(headers, [[_agreement_cell(r.get(h)) for h in headers] for r in rows], title))
        text = (f"{summary.get('n_answers', '?')} answers on {summary.get('n_items', '?')} items by "
                f"{len(summary.get('annotators') or [])} annotator(s), from {AGREEMENT_FILE} (written by "
                "`t2ibench agreement RUN_DIR`, which also lists the disagreements in agreement.md)."
                f"{summary.get('skipped_sentence') or ''}")
        return {"text": text, "tables": tables, "notes": [str(n) for n in doc.get("notes") or []]}
    except (ValueError, AttributeError, TypeError) as exc:
        return {"text": f"{AGREEMENT_FILE} could not be read ({type(exc).__name__}); run `t2ibench agreement "
                        "RUN_DIR` again.", "tables": [], "notes": []}


def _agreement_cell(v: Any) -> str:
    if v is None:
        return "undefined"
    if isinstance(v, float):
        return f"{v:.3f}"
    return _fmt(v)


def _run_details(results: Mapping) -> dict:
    t = results.get("timings") or {}
    ann = results.get("annotators") or []
    return {
        "timings": _table(["Stage", "Seconds"], [[k, v] for k, v in t.items()]) if t else None,
        "annotators": _table(["Label file", "Annotator / encoder", "Estimator", "Rows"],
                             [[a.get("file"), a.get("annotator") or a.get("encoder") or "", a.get("estimator") or "",
                               a.get("n_rows")] for a in ann]) if ann else None,
        "seeds": _seeds_text(results),
        "details": list((results.get("details") or {}).values()),
    }


def build_context(run_dir: str | Path, results: Mapping, out_dir: str | Path,
                  agreement_dir: str | Path | None = None) -> dict:
    """Everything the templates show (plain data; plots and thumbnails written to ``out_dir``;
    ``agreement.json`` read from ``agreement_dir``, default ``out_dir``)."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    notes = Footnotes()
    entries = headline_entries(results.get("scores", []))
    header = _header(results, entries)
    report_secs = report_sections(run_dir, results)
    summary = _summary(entries, notes, report_secs)
    summary_plot = [{"file": f, "caption": c} for f, c in plot_summary(entries, out_dir)]
    grids = image_grids(run_dir, results, out_dir, {s: f.task for f in report_secs for s in f.suites})
    sections = _sections(run_dir, results, out_dir, notes, grids, report_secs)
    agreement = _human_agreement(Path(agreement_dir) if agreement_dir is not None else out_dir)
    corrected = human_section(results, out_dir)
    run_notes = [n for n in results.get("notes", []) if n != results.get("warning")]
    toc = [("summary", "Summary")] + [(f["anchor"], f["title"]) for f in sections]
    if grids:
        toc.append(("images", f"Images ({sum(g.n_shown for g in grids)} of "
                              f"{sum(g.n_images for g in grids)}, per suite)"))
    toc += [("suites", "Suites and excluded images")]
    if corrected:
        toc.append(("human-corrected", "Scores corrected with people's labels"))
    if agreement:
        toc.append(("human-agreement", "Human labels and agreement"))
    toc += [("run", "Run details")]
    if run_notes:
        toc.append(("notes", "Notes"))
    if notes.texts:
        toc.append(("footnotes", "Footnotes"))
    return {
        "header": header, "toc": toc, "summary": summary, "summary_plot": summary_plot,
        "ci_label": f"{100 * float((results.get('scoring') or {}).get('confidence_level', 0.95)):g} % CI",
        "sections": sections, "grids": grids, "suites": _suites_table(results), "agreement": agreement,
        "corrected": corrected,
        "run": _run_details(results), "notes": run_notes, "footnotes": notes.texts,
        "images_made": IMAGES_MADE.get(provenance_kind(results), "generated"),
        "excluded_legend": excluded_legend(report_secs),
    }


# --------------------------------------------------------------------------- rendering


class MdSafe(str):
    """Markdown the report made itself (links to its own files): not escaped again."""


_SAFE_PATH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


def _relative_url(path: Any) -> str:
    """A path inside report/ for src / href: only plain relative names (the report writes no other)."""
    path = str(path)
    if not _SAFE_PATH.match(path) or ".." in path:
        raise ValueError(f"not a plain relative path inside the report folder: {path!r}")
    return MdSafe(path)


def _environment(markdown: bool):
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    if markdown:
        env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=False, undefined=StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                          finalize=lambda v: v if isinstance(v, MdSafe) else md_escape(v))
    else:
        env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True)
    env.filters["url"] = _relative_url
    env.filters["trusted"] = MdSafe  # a macro's output: its values were escaped inside it
    return env


def render(context: Mapping) -> tuple[str, str]:
    """(report.md, report.html) text of a context from :func:`build_context`."""
    md = _environment(True).get_template("report.md.j2").render(**context)
    page = _environment(False).get_template("report.html.j2").render(**context)
    return md, page


def write_report(run_dir: str | Path, results: Mapping | None = None) -> Path:
    """Write RUN_DIR/report/{report.md, report.html, *.png, thumbnails/} from results.json (or
    ``results``), the detail tables and the images; returns the path of report.html.

    Everything is drawn and rendered into a staging folder first and both documents encoded
    before anything in report/ changes: a report that cannot be written (text UTF-8 cannot
    encode, such as a lone surrogate in a results file; a plot that fails) leaves report/ as it
    was, with no empty or half-written file. report.md and report.html are then replaced
    atomically, each. What a stopped stage left in RUN_DIR (a staging folder of a report killed
    while drawing) is removed first (:func:`benchmark.contract.leftovers.remove_leftovers`)."""
    run_dir = Path(run_dir)
    results = res.read_results(run_dir) if results is None else results
    out_dir = run_dir / REPORT_DIR
    remove_leftovers(run_dir)
    staging = staging_dir(run_dir, "report")
    try:
        context = build_context(run_dir, results, staging, agreement_dir=out_dir)
        md, page = (text.encode("utf-8") for text in render(context))  # fails here, before report/ changes
        out_dir.mkdir(parents=True, exist_ok=True)
        for old in out_dir.glob("*.png"):
            old.unlink()
        shutil.rmtree(out_dir / THUMB_DIR, ignore_errors=True)
        for made in sorted(staging.iterdir()):
            os.replace(made, out_dir / made.name)
        write_bytes_atomic(out_dir / "report.md", md)
        html_path = write_bytes_atomic(out_dir / "report.html", page)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return html_path


__all__ = ["REPORT_DIR", "AGREEMENT_FILE", "ReportSection", "report_sections", "write_report", "build_context", "render"]

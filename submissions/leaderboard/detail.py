"""The detail view of one model: its header (provenance, settings, conflicts, notes), every
score entry in one table with numbered notes, and its suites' status (all results text escaped).
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from benchmark.present import text
from benchmark.present.text import md_escape
from benchmark.scores.metadata import SCORE_METADATA
from benchmark.tasks.inputs import declared_inputs, input_of_results_key
from submissions.leaderboard.board_model import HUB_DATASETS, ModelRow, Submission, evaluated_by, hidden_because
from submissions.leaderboard.links import Links, adapter_name, adapter_url
from submissions.leaderboard.score_columns import REFERENCED_PAPERS, direction_mark, headline_entry, headline_names
from submissions.leaderboard.wording import images_text

DETAIL_COLUMNS = ["Suite", "Score", "Subset", "Estimator", "Value [CI]", "n", "Better", "Notes"]
DETAIL_WIDTHS = ["150px", "170px", "150px", "120px", "200px", "56px", "64px", "70px"]


def scores_table(sub: Submission) -> tuple[pd.DataFrame, list[str]]:
    """Every score entry of ``sub`` in one table (suites in file order) and its notes: each
    distinct reason / interval note / long subset once, referred to as [n] in the Notes column."""
    shown = {id(headline_entry(sub, n)) for n in headline_names([sub])}
    notes: list[str] = []

    def ref(note: str) -> str:
        if note not in notes:
            notes.append(note)
        return f"[{notes.index(note) + 1}]"

    order = [str(s.get("name")) for s in sub.doc.get("suites", [])]
    entries = sorted(enumerate(sub.scores), key=lambda ie: (order.index(str(ie[1].get("suite")))
                                                          if str(ie[1].get("suite")) in order else len(order), ie[0]))
    records = []
    for _, e in entries:
        marks = []
        if not e.get("defined") and e.get("reason"):
            marks.append(ref(f"undefined: {e['reason']}"))
        if e.get("ci_note"):
            marks.append(ref(f"interval: {e['ci_note']}"))
        subset = str(e.get("subset") or "")
        if len(subset) > 40:
            marks.append(ref(f"subset: {subset}"))
            subset = subset[:39] + "…"
        est = e.get("estimator") or e.get("annotator") or ""
        records.append({
            "Suite": str(e.get("suite")), "Score": str(e.get("display_name") or e.get("name")) +
            (" *" if id(e) in shown else ""), "Subset": subset, "Estimator": text.short_estimator(est, 20),
            "Value [CI]": text.value_text(e), "n": int(e.get("n") or 0), "Better": direction_mark(str(e.get("name")))
            if e.get("name") in SCORE_METADATA else "", "Notes": " ".join(marks)})
    return pd.DataFrame(records, columns=DETAIL_COLUMNS), notes


def suites_status_table(sub: Submission) -> pd.DataFrame:
    rows = []
    for st in sub.doc.get("suites", []):
        excluded = ", ".join(f"{k}: {v}" for k, v in (st.get("excluded") or {}).items())
        rows.append({"Suite": str(st.get("name")), "Status": str(st.get("status")),
                     "Reason": str(st.get("reason") or ""), "Images": int(st.get("n_images") or 0),
                     "Scored images": int(st.get("n_scored_images") or 0), "Excluded": excluded})
    return pd.DataFrame(rows, columns=["Suite", "Status", "Reason", "Images", "Scored images", "Excluded"])


def notes_markdown(notes: Sequence[str]) -> str:
    """The detail table's notes as a numbered list (results text: escaped)."""
    return "\n".join(f"{i}. {md_escape(n)}" for i, n in enumerate(notes, 1))


def _link(text: str, url: str | None) -> str:
    """A Markdown link (``text`` escaped; ``url`` built from validated ids and quoted) or the text alone."""
    return f"[{md_escape(text)}]({url})" if url else md_escape(text)


def links_markdown(s: Submission, links: Links) -> list[str]:
    """The detail view's links: the model's page, its results file, the run's report when there is
    one, the contents table the board was read from."""
    lines = []
    model_url = links.model(s.model_id, None)
    if model_url:
        lines.append(f"- **Model page**: {_link(s.model_id, model_url)}")
    lines.append(f"- **Results file**: {_link(s.source, links.results_file(s.source))}")
    report = links.report(s.run_dir)
    if report:
        lines.append(f"- **Report**: {_link('report.html', report)}")
    contents = links.contents()
    if contents:
        lines.append(f"- **Contents table** (every model of this board): {_link('contents', contents)}")
    return lines


def adapters_markdown(adapters: list[dict]) -> str:
    """The adapters, each by its name (linked to its Hub repo when there is one), scale and sha256."""
    out = []
    for a in adapters:
        what = "LoRA" if a.get("kind") == "lora" else f"{a.get('component') or a.get('kind')} checkpoint"
        scale = f" at scale {a['scale']:g}" if isinstance(a.get("scale"), (int, float)) else ""
        out.append(f"{what} {_link(adapter_name(a), adapter_url(a))}{scale} (sha256 {md_escape(str(a.get('sha256'))[:12])}"
                   f"; {md_escape(a.get('id') or a.get('path') or '')})")
    return "; ".join(out)


def detail_markdown(row: ModelRow, links: Links | None = None) -> str:
    """The detail page's header: provenance, links, settings, notes (all results text escaped)."""
    s = row.latest
    doc = s.doc
    lines = []
    if s.demo:
        lines.append(f"> **DEMO**: {md_escape(doc.get('warning') or 'submission marked demo')}")
        lines.append("")
    lines.append(f"### {md_escape(s.model_id)}")
    pkg = doc.get("package") or {}
    hw = doc.get("hardware") or {}
    who = evaluated_by(s)
    facts = [
        ("Revision", s.revision or "not recorded"), ("Spec", s.model.get("spec") or ""), ("Family", s.family),
        ("Created", doc.get("created")), ("Package", f"{pkg.get('name')} {pkg.get('version')}"),
        ("Hardware", " / ".join(str(x) for x in (hw.get("device"), hw.get("gpu"), hw.get("torch")) if x)),
        ("Evaluated by", who or "the submitter (self-reported)"), ("Images", images_text(s)),
        *([("Left out of every score", left_out)]
          if (left_out := text.excluded_text(text.excluded_counts(doc.get("run")))) else []),
        (f"Suites scored ({len(s.suites)})", ", ".join(s.suites) or "none"),
    ]
    for key, ref in s.references.items():
        task_input = input_of_results_key(key)
        facts.append((task_input.title, task_input.detail_text(ref)))
    if not s.references and any(SCORE_METADATA[e["name"]].paper in REFERENCED_PAPERS for e in s.scores
                                if e.get("name") in SCORE_METADATA):
        facts += [(task_input.title, task_input.detail_text(None)) for task_input in declared_inputs()]
    sub = s.submission
    if sub.get("submitted_at"):
        facts.append(("Submitted", sub["submitted_at"]))
    lines += [f"- **{k}**: {md_escape(v)}" for k, v in facts]
    lines += links_markdown(s, links or Links())
    if s.images_dataset:
        lines.append(f"- **Images**: [{s.images_dataset}]({HUB_DATASETS}{s.images_dataset})")
    elif sub.get("images_dataset"):
        lines.append(f"- **Images**: {md_escape(sub['images_dataset'])} (not a valid dataset id, no link)")
    if s.adapters:
        lines.append(f"- **Adapters**: {adapters_markdown(s.adapters)}")
    shown = text.settings_items(doc.get("settings"), doc.get("setting_sources"))
    if shown:
        lines.append(f"- **Settings** (value and where it came from): {md_escape('; '.join(shown))}")
    if row.older:
        lines.append("- **Conflicting files** (same model, revision, probes and references; not shown): "
                     + md_escape(", ".join(f"{o.doc.get('created')} ({o.source}: {hidden_because(o, row.latest)})"
                                           for o in row.older)))
    notes = [n for n in doc.get("notes", []) if n != doc.get("warning")]
    if notes:
        lines += ["", "**Notes**", ""] + [f"- {md_escape(n)}" for n in notes]
    return "\n".join(lines)

"""What the board says about itself, made from the scores' own metadata (:data:`SCORE_METADATA`:
display name, description, direction, ideal value, range, paper) and the papers' registry
(:data:`benchmark.papers.PAPERS`): the hover text of every header (:func:`header_help`) and the
About tab (:func:`about_markdown`: the scores, how an audit is made, how to read ranks, tiers and
intervals, the overall view, the badges, the downloads and shared links, the citation). No
paper, suite or score is named here: every name comes from the registries.
"""

from __future__ import annotations

import importlib.metadata
import pyarrow.compute as pc

import benchmark
from benchmark.contract.results import PACKAGE_NAME
from benchmark.contract.values import flag_array
from benchmark.papers import PAPERS, paper_label
from benchmark.present.text import direction_text, markdown_table, md_escape, range_text
from benchmark.scores.metadata import SCORE_METADATA
from submissions.leaderboard.board_columns import COLUMNS, MODEL, PEOPLE_MARK, RANK
from submissions.leaderboard.board_index import BoardIndex
from submissions.leaderboard.score_columns import value_column
from submissions.leaderboard.wording import (DEGENERATE_BADGE, DEMO_BADGE, EVALUATED_BADGE, HUMAN_CHECKED_BADGE,
                                             IMAGES_BADGES)

SCORE_CLICK = "Click: order by the value, best first; again: worst first."
#: what a score cell marked board_columns.PEOPLE_MARK holds
PEOPLE_CELL = ("the value and interval corrected with people's labels of a random sample of the images, ranked and "
               "ordered apart from automatic-only rows (first)")


def _meta_dict(name: str) -> dict:
    m = SCORE_METADATA[name]
    return {"lower_is_better": m.lower_is_better, "ideal": m.ideal}


def score_help(name: str) -> str:
    """The hover text of a score's header: what it measures, which way is better, its ideal value
    and range, its paper, what a cell holds and what a click does."""
    m = SCORE_METADATA[name]
    paper = PAPERS.get(m.paper)
    unit = f" {m.unit}" if m.unit else ""
    ideal = f"; ideal {m.ideal:g}{unit}" if m.ideal is not None else ""
    cited = f"{paper_label(m.paper)} ({paper.short})" if paper else paper_label(m.paper)
    return (f"{m.display_name}: {m.description} {direction_text(_meta_dict(name)).capitalize()}{ideal}; "
            f"range {range_text(m)}{unit}. Paper: {cited}. Cell: value [95 % bootstrap interval over images]; "
            f"{PEOPLE_MARK}: {PEOPLE_CELL}. {SCORE_CLICK}")


def header_help() -> dict[str, str]:
    """Header text -> its hover text, for every column the table can show (every headline score's)."""
    out = {c.header: c.help for c in (MODEL, RANK, *COLUMNS.values())}
    out.update({value_column(n): score_help(n) for n, m in SCORE_METADATA.items() if m.headline})
    return out


def _estimators(index: BoardIndex | None, name: str) -> str:
    """The estimators of ``name``'s cells on the board, with how many rows each (most first)."""
    column = f"{name}_estimator"
    if index is None or column not in index.table.schema.names or not index.table.num_rows:
        return ""
    counts = pc.value_counts(index.table.column(column).drop_null()).to_pylist()
    counts.sort(key=lambda c: -c["counts"])
    return ", ".join(f"{md_escape(c['values'])} ({c['counts']:,})" for c in counts)


def scores_table(index: BoardIndex | None = None) -> str:
    """One row per headline score: what it measures, direction, ideal, range, paper, the estimators
    of the board's cells."""
    rows = []
    for name, m in SCORE_METADATA.items():
        if not m.headline:
            continue
        paper = PAPERS.get(m.paper)
        cite = f"[{paper_label(m.paper)}]({paper.url})" if paper and paper.url else md_escape(paper_label(m.paper))
        unit = f" {m.unit}" if m.unit else ""
        ideal = f" (ideal {m.ideal:g}{unit})" if m.ideal is not None else ""
        rows.append([md_escape(value_column(name)), md_escape(m.description),
                     direction_text(_meta_dict(name)) + ideal, f"{range_text(m)}{unit}", cite,
                     _estimators(index, name) or "-"])
    return markdown_table(["Score", "What it measures", "Which way is better", "Range", "Paper",
                           "Estimator of the cells here (rows)"], rows)


def _package_url() -> str | None:
    try:
        urls = importlib.metadata.metadata(PACKAGE_NAME).get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    return next((u.split(",", 1)[1].strip() for u in urls if u.lower().startswith("repository")), None)


def citation_markdown() -> str:
    """How to cite: the benchmark (package and version) and each paper whose probes and scores it runs."""
    url = _package_url()
    where = f"\n  url       = {{{url}}}," if url else ""
    own = (f"@software{{t2i_bias_benchmark,\n  title     = {{{PACKAGE_NAME}: social-bias and skill audits of "
           f"text-to-image models}},\n  version   = {{{benchmark.__version__}}},{where}\n}}")
    papers = "\n\n".join(p.bibtex for p in PAPERS.values() if p.bibtex)
    return ("Cite the benchmark and the paper of every score you use (the dataset and metric cards carry the same "
            "entries):\n\n```bibtex\n" + own + "\n\n" + papers + "\n```")


def people_markdown(index: BoardIndex | None = None) -> str:
    """How scores corrected with people's labels are shown and ranked, and how many rows of the board have one."""
    rows = 0
    if index is not None and "human_checked" in index.table.schema.names and index.table.num_rows:
        rows = int(flag_array(index.row_frame()["human_checked"]).sum())
    count = (f"On this board {rows:,} of {len(index):,} rows have such a score." if index is not None and rows else
             "No row of this board has one yet.")
    return (f"An audit may correct a score with people's labels of a random sample of its images (prediction-powered "
            f"inference: the annotator's labels of every image, corrected by its errors on the sample people "
            f"labelled). Such a row carries the **{HUMAN_CHECKED_BADGE}** badge and its cell reads "
            f"\"value [low, high] {PEOPLE_MARK}\": the corrected value and interval, which its rank and the order use. "
            "A corrected score and an automatic one measure different things (people's perception against the "
            "annotator's), so such rows are ranked and ordered apart, first, and never ranked above another row by "
            "comparing the two. The *Human-checked* column (column picker) marks them, and the downloads carry the "
            "corrected columns (`NAME_people`, `NAME_people_low`, `NAME_people_high`, `NAME_people_n`: the "
            f"people-labelled images) beside the automatic ones. {count}")


def about_markdown(index: BoardIndex | None = None) -> str:
    """The About tab: every section made from the registries (``index``: the board, for the estimators
    its cells use)."""
    papers = ", ".join(f"[{p.label or p.key}]({p.url}) ({md_escape(p.short)})" for p in PAPERS.values())
    badge_words = {DEMO_BADGE: "built-in tiny random-weight model or annotators: its scores are meaningless (it ranks "
                               "last, it is never ranked)",
                   DEGENERATE_BADGE: "some of the audit's images were degenerate (blank, one colour, or black from "
                                     "non-finite output) and were scored all the same, under the 1 % that stops an "
                                     "audit or with --allow-degenerate (hover: how many, of which kind; the "
                                     "Degenerate column counts them)",
                   EVALUATED_BADGE: "audited by the maintainers' workers from a request of the queue, not self-reported",
                   HUMAN_CHECKED_BADGE: f"some score is corrected with people's labels of a random sample of the "
                                        f"images (cells marked {PEOPLE_MARK}; see below)",
                   **{b: f"images the benchmark did not generate ({b}): seeds not controlled by the benchmark"
                      for b in IMAGES_BADGES.values()},
                   "…-ref": "scores made against a reference dataset (ranked only among rows of the same reference)"}
    return "\n\n".join([
        "## About this leaderboard",
        f"Social-bias and skill audits of text-to-image models with the probes and scores of {papers}. "
        "Every row is one audit: one model (with its revision and adapters) on one probe set.",
        "### How an audit is made",
        "1. The probes (each paper's prompts, with a fixed seed per image) are sent to the model: `t2ibench run "
        "--model ORG/NAME` generates every image, seeded per probe, and records the settings used.\n"
        "2. Automatic annotators label the images (CLIP encoders, visual question answering, an object detector, a "
        "skin-tone estimator); where human labels exist they are used first.\n"
        "3. Each score is computed with its paper's formula, with a 95 % bootstrap interval over the images (none of "
        "the papers reports one).\n"
        "4. The results file (`results.json`) is checked against the schema before the board shows it; files the "
        "maintainers' workers made from a queued request carry the *evaluated* badge.",
        "### The scores",
        scores_table(index),
        "When a score has several entries (estimators, encoders), the cell shows one: human labels, then the "
        "calibrated classifier, then VQA, then others, raw CLIP cosines last; every entry is in the model's details.",
        "### Reading ranks, tiers and intervals",
        "- **Rank**: the position in the order shown. *By value* (the default, and what a score header's click "
        "gives) ranks by the value; *conservative* by each interval's worse end (the upper end of a lower-is-better "
        "score), so a model audited on few images cannot lead on a lucky value; intervals cut at a score's limit "
        "share that end and are told apart by their value.\n"
        "- **Tier**: the groups the intervals cannot order. Tier 1 holds the models tied with the leader: no model's "
        "interval is entirely better than theirs. Tier k holds the models that only models of tiers 1 to k-1 are "
        "surely better than. If every interval holds its model's true value, a model of tier k has at least k-1 "
        "models truly better than it.\n"
        "- **Range** (in the column picker): the ranks the intervals allow, as Chatbot Arena shows ranks.\n"
        "- **What the intervals do not adjust for**: each interval is a per-model 95 % interval, not adjusted for "
        "the number of models. Among many models about 1 in 20 intervals misses its true value, and truly equal "
        "models fall in different tiers by chance: a tier is a description of the audit's precision, not a test. "
        "To tell two models apart, use the paired test (Compare tab, `t2ibench compare`), which pairs the same "
        "probes and seeds and corrects for the scores tested.",
        "### An overall view",
        "*Mean win rate* (column picker, and an order), as HEIM reports it: for each score column shown, the share of "
        "the other ranked models a model's value beats (ties count half), averaged over the scores it has. It uses "
        "the values only, not their intervals, and it averages scores of different kinds (social biases and "
        "compositional skills in the overview): read it per view (pick one paper's columns) and as a summary, not "
        "as a ranking the audit supports; the tiers of each score say which differences the audit can see.",
        "### Scores checked by people",
        people_markdown(index),
        "### Badges",
        "\n".join(f"- **{md_escape(k)}**: {v}" for k, v in badge_words.items()),
        "### Downloads and shared links",
        "The *Download CSV* and *Download parquet* buttons give the board as filtered and ordered: every row that "
        "matches (not just the page shown), every column of the contents table, the ranks, tiers and win rates "
        "shown, and the contents revision the board was read from. The address bar holds the view (search, "
        "order, filters, columns, page): copy it to share exactly this view.",
        "### Citation",
        citation_markdown(),
    ])

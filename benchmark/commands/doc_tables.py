"""The docs' tables that the registries declare, generated from them: the scores of
docs/results.md (``SCORE_METADATA``, also ``t2ibench scores --markdown``), the scores reference
of docs/scores.md (each score's definition, paper, range, direction and the annotators that
estimate it) and the evaluate modules of docs/evaluate_modules.md (``EVALUATE_MODULES``: each
module's row as its task folder declares it). A new score or module is written in its folder
only; these pages follow. And docs/compare.md's calibration tables, from the committed output of
bench/compare_calibration.py (bench/measured/compare_calibration/: a new run's folder replaces
the old one, the tables follow).

    python -m benchmark.commands.doc_tables           # rewrite the generated blocks of docs/
    python -m benchmark.commands.doc_tables --check   # exit 1 naming each stale table, write nothing

Each table stands between a ``<!-- generated: NAME ... -->`` line and an ``<!-- end: NAME -->``
line; the text between them is replaced, the rest of the file kept.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import benchmark
from benchmark.annotate.kinds import get_annotator_kind
from benchmark.papers import paper_label
from benchmark.present.calibration_tables import TABLE_OF_PART, pooled_power, power_models_table, runs_table
from benchmark.present.terminal import print_error
from benchmark.present.text import better_text, markdown_table, md_escape, range_text
from benchmark.registries import EVALUATE_MODULES, PAPERS, SCORE_METADATA, TASKS
from benchmark.scores.bootstrap import bootstrap_ci
from benchmark.scores.metadata import column_group

__all__ = ["score_table", "score_reference", "module_table", "calibration_table", "TABLES", "stale_tables",
           "write_tables", "main"]

#: where a module's card is read on the web (the cards live beside the modules, outside docs/)
MODULE_CARD_URL = "https://github.com/t2i-bias-benchmark/t2i-bias-benchmark/blob/main/metrics/{name}/README.md"


def score_table(metadata: Mapping | None = None) -> str:
    """Every registered score (in registry order) as a Markdown table: name, paper, range,
    better direction, headline or not, and what it measures."""
    benchmark.load_tasks()
    metadata = SCORE_METADATA if metadata is None else metadata
    return markdown_table(["score", "paper", "range", "better", "headline", "what it measures"],
                          [[f"`{m.name}`", md_escape(paper_label(m.paper)), range_text(m), better_text(m),
                            "yes" if m.headline else "", md_escape(m.description)] for m in metadata.values()])


#: the defaults of every score's interval
BOOTSTRAP = inspect.signature(bootstrap_ci).parameters


def _estimators(meta) -> list:
    """The tasks that score ``meta``: the one its folder declares beside it, else those citing its paper."""
    same_folder = [t for name, t in TASKS.items() if TASKS.place(name) == SCORE_METADATA.place(meta.name)]
    return same_folder or [t for t in TASKS.values() if meta.paper in t.papers]


def _reference_entry(meta) -> str:
    """One score of the reference: its heading (the anchor ``scores.md#NAME``), definition and facts."""
    paper = PAPERS.get(meta.paper)
    cited = (f"{md_escape(paper_label(meta.paper))}: {md_escape(paper.authors)}, *{md_escape(paper.title)}*, "
             f"{md_escape(paper.venue)} ([paper]({paper.url}))") if paper else md_escape(meta.paper)
    direction = {True: "lower is better (↓)", False: "higher is better (↑)"}.get(
        meta.lower_is_better, f"closer to {meta.ideal:g} is better (→{meta.ideal:g})" if meta.ideal is not None
        else "no direction: described, never ranked")
    estimated = "; ".join(
        f"task `{t.name}`: " + ", ".join(f"`{kind}` (`--{get_annotator_kind(kind).option.replace('_', '-')}`: "
                                         f"{md_escape(get_annotator_kind(kind).help)})" for kind in t.annotators)
        for t in _estimators(meta)) or "no registered task"
    facts = [("paper", cited),
             ("range", range_text(meta) + (f" {md_escape(meta.unit)}" if meta.unit else "")),
             ("direction", direction),
             ("headline", f"yes: a leaderboard column ({md_escape(column_group(meta.name))})" if meta.headline
              else "no: in results.json, the report and the model's page"),
             ("groups", "fixed by its definition: " + ", ".join(meta.categories) if meta.categories
              else "those of the probe config"),
             ("estimated from", estimated),
             ("interval", f"{BOOTSTRAP['confidence_level'].default:.0%} bootstrap over images "
                          f"({BOOTSTRAP['n_resamples'].default:,} resamples by default)"
              + ("; an absolute value: near 0 the interval may sit above the estimate" if meta.absolute_value else ""))]
    return "\n".join([f"### `{meta.name}`", "", f"**{md_escape(meta.display_name)}**: {md_escape(meta.description)}",
                      "", *[f"- **{k}**: {v}" for k, v in facts], ""])


def score_reference(metadata: Mapping | None = None) -> str:
    """Every registered score (in registry order) under its column group: the heading
    ``### `NAME` `` (so ``scores.md#NAME`` links to it), its definition, paper, range,
    direction, whether it is a headline score, its groups, the task and annotators that estimate
    it and its interval."""
    benchmark.load_tasks()
    metadata = SCORE_METADATA if metadata is None else metadata
    groups: dict[str, list[str]] = {}
    for meta in metadata.values():
        groups.setdefault(column_group(meta.name), []).append(_reference_entry(meta))
    return "\n".join(f"## {md_escape(group)}\n\n" + "\n".join(entries) for group, entries in groups.items()).rstrip("\n")


def module_table(modules: Mapping | None = None) -> str:
    """Every evaluate module (in registry order) as a Markdown table: a link to its card, the
    inputs, keyword arguments, main outputs and citation its task folders declare."""
    benchmark.load_tasks()
    modules = EVALUATE_MODULES if modules is None else modules
    return markdown_table(["module", "inputs (per row)", "keyword arguments", "main outputs", "paper"],
                          [[f"[`{s.name}`]({MODULE_CARD_URL.format(name=s.name)})", s.inputs, s.keywords, s.outputs,
                            s.cites] for s in modules.values()])


#: the runs of bench/compare_calibration.py whose tables docs/compare.md shows: each folder the
#: script's ``--out``, committed as the script wrote it
CALIBRATION_RUNS = "bench/measured/compare_calibration"


def _calibration_path(root: Path, run: str) -> Path:
    """Where a measured run's JSON lies in the checkout ``root``."""
    return Path(root) / CALIBRATION_RUNS / run / "compare_calibration.json"


def _calibration_doc(root: Path, run: str) -> dict:
    """The JSON of a measured run, as the script wrote it."""
    path = _calibration_path(root, run)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read as the calibration script's output: {exc}") from exc


def _calibration_run(root: Path, run: str, *fields: str) -> list:
    """The ``fields`` of a measured run's JSON: its rows of a part (null, power, pilot, detect), its
    ``seed`` (the model its truth drew)."""
    doc = _calibration_doc(root, run)
    missing = [field for field in fields if field not in doc]
    if missing:
        raise ValueError(f"{_calibration_path(root, run)} cannot be read as the calibration script's output: "
                         f"it has no {', '.join(missing)}")
    return [doc[field] for field in fields]


def calibration_runs_table(runs: tuple[str, ...]) -> Callable[[Path], str]:
    """The writer of the list of the measured ``runs``: what, seed, commit, day and minutes of each."""
    def make(root: Path) -> str:
        return runs_table([(run, _calibration_doc(root, run)) for run in runs])
    return make


def calibration_table(runs: tuple[str, ...], part: str) -> Callable[[Path], str]:
    """The writer of one ``part`` table (null, power, pilot or detect) of the measured ``runs``' rows, in order."""
    def make(root: Path) -> str:
        return TABLE_OF_PART[part]([r for run in runs for r in _calibration_run(root, run, part)[0]])
    return make


def calibration_power_table(runs: tuple[str, ...]) -> Callable[[Path], str]:
    """The writer of the power table over several models: the measured ``runs`` (each one model,
    its seed; in order) pooled per size and score
    (:func:`~benchmark.present.calibration_tables.pooled_power`)."""
    def make(root: Path) -> str:
        measured = [_calibration_run(root, run, "seed", "power") for run in runs]
        return power_models_table(pooled_power([(f"seed {seed}", rows) for seed, rows in measured]))
    return make


#: the power runs docs/compare.md pools: seven models at the recipe's size (--seed 0-6), five at full (--seed 0-4)
POWER_RUNS = ("power-recipe", "power-recipe-s1", "power-recipe-s2", "power-recipe-s3", "power-recipe-s4",
              "power-recipe-s5", "power-recipe-s6", "power-full", "power-full-s1", "power-full-s2", "power-full-s3",
              "power-full-s4")
#: the pilot runs: a pilot at the recipe's size and one at --limit 300, each planning the full suites
PILOT_RUNS = ("pilot-recipe-full", "pilot-300-full")
#: the --detect run: comparisons at the recipe's size scaled to 4 and 9 images per prompt
DETECT_RUNS = ("detect",)
#: --detect again on one suite (--suites), after compare's MDD of a score with an ideal value took B - A's spread
DETECT_AFTER_RUNS = ("detect-one-suite-4", "detect-one-suite-9")
#: power where a score sits at its ideal: a model at parity (--parity), one suite at the recipe's size
PARITY_RUNS = ("parity-recipe",)
#: every measured run the page's tables read, in the order the page lists them
MEASURED_RUNS = ("null", *POWER_RUNS, *PILOT_RUNS, *DETECT_RUNS, *DETECT_AFTER_RUNS, *PARITY_RUNS)

#: (file relative to the checkout, table name, what writes it from the checkout's root)
TABLES: list[tuple[str, str, Callable[[Path], str]]] = [
    ("docs/results.md", "scores", lambda root: score_table()),
    ("docs/scores.md", "scores-reference", lambda root: score_reference()),
    ("docs/evaluate_modules.md", "evaluate-modules", lambda root: module_table()),
    ("docs/compare.md", "calibration-runs", calibration_runs_table(MEASURED_RUNS)),
    ("docs/compare.md", "calibration-null", calibration_table(("null",), "null")),
    ("docs/compare.md", "calibration-power", calibration_power_table(POWER_RUNS)),
    ("docs/compare.md", "calibration-pilot", calibration_table(PILOT_RUNS, "pilot")),
    ("docs/compare.md", "calibration-detect", calibration_table(DETECT_RUNS, "detect")),
    ("docs/compare.md", "calibration-detect-one-suite", calibration_table(DETECT_AFTER_RUNS, "detect")),
    ("docs/compare.md", "calibration-parity", calibration_table(PARITY_RUNS, "power")),
]


def _block(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- generated: {re.escape(name)}\b[^\n]*-->\n)(.*?)(<!-- end: {re.escape(name)} -->)", re.S)


def _updated(text: str, name: str, table: str, where: str) -> str:
    found = _block(name).findall(text)
    if len(found) != 1:
        raise ValueError(f"{where} needs one '<!-- generated: {name} -->' ... '<!-- end: {name} -->' block, "
                         f"found {len(found)}")
    return _block(name).sub(lambda m: m.group(1) + table + "\n" + m.group(3), text)


def _rewritten(root: Path) -> dict[str, tuple[str, list[str]]]:
    """Per file with generated tables: (its text with every table written anew, the tables that changed)."""
    out: dict[str, tuple[str, list[str]]] = {}
    for rel, name, make in TABLES:
        text, changed = out.get(rel) or ((root / rel).read_text(encoding="utf-8"), [])
        new = _updated(text, name, make(root), rel)
        out[rel] = (new, changed + [name] * (new != text))
    return out


def stale_tables(root: str | Path) -> list[str]:
    """``file: table`` of every generated table of ``root``'s docs that differs from what writes it."""
    return [f"{rel}: {name}" for rel, (_, changed) in _rewritten(Path(root)).items() for name in changed]


def write_tables(root: str | Path) -> list[str]:
    """Rewrite the generated tables of ``root``'s docs; returns those that changed."""
    rewritten = _rewritten(Path(root))
    for rel, (text, _) in rewritten.items():
        (Path(root) / rel).write_text(text, encoding="utf-8")
    return [f"{rel}: {name}" for rel, (_, changed) in rewritten.items() for name in changed]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark.commands.doc_tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only name the stale tables (exit 1), write nothing")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[2]), help="the checkout (default: this one)")
    args = parser.parse_args(argv)
    try:
        stale = stale_tables(args.root) if args.check else write_tables(args.root)
    except (OSError, ValueError) as exc:
        print_error(exc)
        return 2
    for line in stale:
        print(f"{'stale' if args.check else 'rewrote'} {line}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())

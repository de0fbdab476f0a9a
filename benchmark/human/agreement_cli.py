"""``t2ibench agreement RUN_DIR``: human agreement and validation of the automatic labels.

Reads RUN_DIR/human_labels/answers.jsonl (the annotation app's answers, annotators who did
not pass the qualification test left out unless ``--include-flagged``; malformed lines and
answers about items the run does not have are skipped and counted in the summary) and
RUN_DIR's label files, prints the tables and writes them to RUN_DIR/report/agreement.md and
agreement.json:

* inter-annotator agreement per question type (Fleiss' kappa, Krippendorff's alpha) and
  the items annotators disagree on (:mod:`benchmark.human.stats`);
* automatic vs human majority: attribute ROC-AUC, the tasks' own tables (GEP vectors),
  perceived gender, skin tone (:mod:`benchmark.human.validation`);
* the tasks' analyses built on the attribute labels, e.g. GEP's estimators on the
  artificial datasets of GEP App. C (:mod:`benchmark.tasks.gep.artificial`), and their
  sections of agreement.md (``Task.human_validation``).

:func:`agreement_markdown` returns the same Markdown for embedding in the run's report.
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmark.human import stats, validation
from benchmark.present.text import frame_table
from benchmark.human.answers_file import answers_path, skipped_text
from benchmark.human.items import run_item_ids
from benchmark.human.qualification import flagged_annotators
from benchmark.human.replay import read_answers
from benchmark.contract.results import json_safe
from benchmark.contract.run_folder import REPORT_DIR
from benchmark.scores.agreement import UndefinedStatisticWarning
from benchmark.tasks import AgreementTable, list_tasks

MAX_DISAGREEMENTS = 25  # listed in the report; agreement.json has them all


# --------------------------------------------------------------------------- data


def load_answers(run_dir: str | Path, include_flagged: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """The run's human answers and the annotators left out (qualification not passed).

    Only answers about the run's own items count; ``answers.attrs["skipped_lines"]`` counts the
    lines skipped, by reason (malformed, or ``"unknown item"``)."""
    run_dir = Path(run_dir)
    if not (run_dir / "manifest.parquet").is_file():
        raise ValueError(f"{run_dir} is not a run folder (no manifest.parquet)")
    if not answers_path(run_dir).is_file():
        raise ValueError(f"{run_dir} has no human labels yet ({answers_path(run_dir)} is missing); "
                         f"label images with `t2ibench annotate-ui {run_dir}`")
    answers = read_answers(run_dir, items=run_item_ids(run_dir))
    skipped = answers.attrs["skipped_lines"]
    flagged = [] if include_flagged else sorted(flagged_annotators(run_dir))
    if flagged:
        answers = answers[~answers["annotator"].isin(flagged)].reset_index(drop=True)
        answers.attrs["skipped_lines"] = skipped
    if answers.empty:
        why = f" after leaving out {len(flagged)} flagged annotator(s) (--include-flagged keeps them)" if flagged else ""
        why += f"; {skipped_text(skipped)}" if skipped else ""
        raise ValueError(f"{run_dir} has no human answers{why}")
    return answers, flagged


def skipped_sentence(summary: dict) -> str:
    """The summary's skipped lines as a sentence with a leading space, e.g.
    ``" 3 lines of answers.jsonl skipped (2 not JSON, 1 unknown item)."``; "" when none were."""
    text = skipped_text(summary.get("skipped_lines") or {})
    return f" {text[0].upper()}{text[1:]}." if text else ""


def agreement_tables(run_dir: str | Path, *, include_flagged: bool = False, artificial: bool = True,
                     random_state: int = 0) -> dict:
    """Every table as DataFrames (plus ``summary`` and ``notes``). ``artificial``: run the
    tasks' analyses built on the attribute labels (``human_validation.attribute_analyses``:
    GEP's artificial datasets), with ``random_state``."""
    run_dir = Path(run_dir)
    answers, flagged = load_answers(run_dir, include_flagged)
    with warnings.catch_warnings():
        # every undefined statistic is NaN with its reason in a notes column
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        majorities = stats.item_majorities(answers)
        out: dict[str, Any] = {
            "summary": {"run_dir": str(run_dir), "n_answers": int(len(answers)),
                        "n_items": int(majorities["item_id"].nunique()),
                        "annotators": sorted(answers["annotator"].unique().tolist()),
                        "flagged_annotators_left_out": flagged, "include_flagged": include_flagged,
                        "skipped_lines": dict(answers.attrs.get("skipped_lines", {})),
                        # the sentence the report prints (the report reads agreement.json, not this package)
                        "skipped_sentence": skipped_sentence({"skipped_lines": answers.attrs.get("skipped_lines")})},
            "inter_annotator": stats.agreement_by_question_type(answers),
            "majorities": majorities,
            "disagreements": stats.disagreements(majorities),
        }
        v = validation.validate_run(run_dir, answers, majorities)
        out["notes"] = list(v.pop("notes"))
        out.update(v)
        if artificial and "attribute" in set(majorities["question_type"]):
            human = validation.human_attribute_labels(majorities)
            for task in list_tasks():
                hv = task.human_validation
                if hv is not None and hv.attribute_analyses is not None:
                    tables, notes = hv.attribute_analyses(run_dir, human, random_state)
                    out.update(tables)
                    out["notes"] += notes
    return out


# --------------------------------------------------------------------------- formatting


def plain_cell(v: Any) -> str:
    """A table value as plain text (NaN -> "undefined", 3 decimals, lists and dicts joined)."""
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        return "undefined" if math.isnan(v) else f"{v:.3f}"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {plain_cell(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple, np.ndarray)):
        return ", ".join(plain_cell(x) for x in v)
    return str(v)


def format_cell(v: Any) -> str:
    """:func:`plain_cell` escaped for a Markdown table (text from answers is untrusted)."""
    text = plain_cell(v)
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"), ("\n", " ")):
        text = text.replace(a, b)
    return text


def answers_table(df: pd.DataFrame, columns: list[str] | None = None) -> str:
    """``df``'s ``columns`` (those it has) as a Markdown table, each cell through :func:`format_cell`."""
    return frame_table(df, columns, format_cell)


def task_tables() -> list[AgreementTable]:
    """The tables the tasks add to the agreement (``human_validation.tables``), in task order."""
    return [table for task in list_tasks() if task.human_validation is not None
            for table in task.human_validation.tables]


def _answers_text(answers: list[dict]) -> str:
    return "; ".join(f"{a['annotator']}: {a['answer']}" for a in answers)


def format_markdown(t: dict) -> str:
    """The tables of :func:`agreement_tables` as one Markdown section."""
    s = t["summary"]
    parts = ["## Human labels and agreement",
             f"{s['n_answers']} answers on {s['n_items']} items by {len(s['annotators'])} annotator(s)"
             + (f"; left out (qualification not passed): {', '.join(s['flagged_annotators_left_out'])}"
                if s["flagged_annotators_left_out"] else "") + "." + skipped_sentence(s)]
    parts += ["### Agreement between annotators",
              "Fleiss' kappa (statsmodels) over the items answered by `fleiss_raters` annotators; Krippendorff's "
              "alpha (krippendorff) over every answer; skin tone also at the ordinal level.",
              answers_table(t["inter_annotator"], ["question_type", "n_items", "n_items_multi", "n_annotators",
                                                    "n_answers", "fleiss_kappa", "fleiss_items", "fleiss_raters",
                                                    "alpha_nominal", "alpha_ordinal", "n_ties", "n_disagreements",
                                                    "notes"])]
    dis = t["disagreements"]
    parts.append(f"### Disagreements ({len(dis)} items{', first ' + str(MAX_DISAGREEMENTS) if len(dis) > MAX_DISAGREEMENTS else ''})")
    if len(dis):
        d = dis.head(MAX_DISAGREEMENTS).assign(answers=lambda x: x["answers"].map(_answers_text))
        parts.append(answers_table(d, ["item_id", "answers", "majority", "tie", "agreement"]))
    else:
        parts.append("None: every item answered alike.")
    if "attribute_auc_summary" in t:
        parts += ["### Attribute existence: automatic scores vs human majority",
                  "ROC-AUC per attribute averaged over attributes; Cohen's kappa and accuracy "
                  "of the 0/1 label.",
                  answers_table(t["attribute_auc_summary"])]
        per = t["attribute_auc"]
        if len(per):
            # blank where an estimator never scored the attribute (GEP vs DALL-Eval attributes)
            cells = per.assign(cell=per["roc_auc"].map(format_cell))
            wide = cells.pivot_table(index="attribute", columns="estimator", values="cell", aggfunc="first",
                                     sort=False).fillna("").reset_index()
            parts += ["ROC-AUC per attribute:", answers_table(wide)]
    for table in task_tables():
        if table.key in t:
            parts += [f"### {table.heading}", answers_table(t[table.key])]
    if "gender_kappa" in t:
        parts += ["### Perceived gender: Cohen's kappa, VQA vs humans",
                  "`kappa_mean` averages the kappa with each human annotator (the paper's number).",
                  answers_table(t["gender_kappa"])]
    if "skin_tone" in t:
        parts += ["### Skin tone (Monk Skin Tone): automatic vs humans", answers_table(t["skin_tone"])]
    for task in list_tasks():
        if task.human_validation is not None and task.human_validation.markdown is not None:
            parts += [answers_table(p) if isinstance(p, pd.DataFrame) else p
                      for p in task.human_validation.markdown(t)]
    if t.get("notes"):
        parts += ["### Notes", "\n".join(f"- {format_cell(n)}" for n in t["notes"])]
    return "\n\n".join(parts) + "\n"


def agreement_markdown(run_dir: str | Path, *, include_flagged: bool = False) -> str:
    """The Markdown section the run's report embeds (raises ``ValueError`` without answers)."""
    return format_markdown(agreement_tables(run_dir, include_flagged=include_flagged))


def agreement_json(t: dict) -> dict:
    """The tables as plain JSON (NaN -> null)."""
    return json_safe(t)


# --------------------------------------------------------------------------- command


def run_agreement(args: argparse.Namespace) -> int:
    """``t2ibench agreement`` (its options: :mod:`benchmark.human.agreement_command`)."""
    run_dir = Path(args.run_dir)
    tables = agreement_tables(run_dir, include_flagged=args.include_flagged, artificial=not args.no_artificial,
                              random_state=args.seed)
    text = format_markdown(tables)
    out = Path(args.out) if args.out else run_dir / REPORT_DIR / "agreement.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(agreement_json(tables), indent=1, allow_nan=False) + "\n",
                                        encoding="utf-8")
    print(text)
    print(f"written: {out} and {out.with_suffix('.json')}")
    return 0

"""The human-labels dataset builder (registered in :mod:`benchmark.human` as
``human_labels``): a run's human labels as a Hub dataset, one row per item (an image and a
question) with every annotator's answer, the majority and the agreement, plus the raw
answers, and a card with the instructions the annotators saw. What the card says of each
paper's questions (their wording, the paper's annotation setting, the citation) is its task's
(``HumanValidation.labels_card``, :class:`benchmark.tasks.human_validation.LabelsCard`).

    python -m dataset_builders.human_labels RUN_DIR --out DIR [--image-references]
        [--include-flagged] [--license cc-by-4.0] [--setting TEXT] [--pay TEXT]
        [--push-to-hub ORG/NAME [--create-pr]]

``datasets.load_dataset(DIR, "items", split="train")`` and ``(DIR, "answers", ...)`` then load it
offline. Images are embedded (``datasets.Image``) unless ``--image-references``, which stores
the image's path inside the run folder and its sha256 instead (for a run already pushed
as its own dataset).
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from pathlib import Path

import datasets
import numpy as np
import pandas as pd

import benchmark
from benchmark.cli_types import output_folder
from benchmark.hub.access import push_folder
from benchmark.hub.dataset_layout import clear_folder, configs_yaml, size_category, write_card, write_split
from benchmark.contract.human_sample import SAMPLE_FILE, read_sample, sample_path
from benchmark.contract.results import RESULTS_FILE, load_results_file
from benchmark.human.agreement_cli import answers_table, load_answers
from benchmark.human.answers_file import read_events
from benchmark.human.question_types import QUESTION_TYPES
from benchmark.human.stats import agreement_by_question_type, item_majorities
from benchmark.papers import PAPERS
from benchmark.registries import SUITES
from benchmark.scores.agreement import UndefinedStatisticWarning
from benchmark.tasks import LabelsCard, list_tasks

SPLIT = "train"
DEFAULT_LICENSE = "cc-by-4.0"
DEFAULT_SETTING = "volunteers in the t2i-bias-benchmark annotation app (`t2ibench annotate-ui`)"
DEFAULT_PAY = "no pay recorded"
PROBE_KEYS = ("prompt", "seed", "sample_index", "model_id", "revision")


def _plain(v):
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _present(v) -> bool:
    if v is None:
        return False
    if isinstance(v, float) and math.isnan(v):
        return False
    return not (isinstance(v, str) and v == "")


def _questions_by_item(run_dir: Path) -> dict[str, str]:
    """item_id -> the question text the annotator was shown (the events record it)."""
    ev = read_events(run_dir)
    out: dict[str, str] = {}
    for item, question in zip(ev["item_id"], ev["question"]):
        if isinstance(question, str) and question:
            out[item] = question
    return out


def build_tables(run_dir: str | Path, *, embed_images: bool = True,
                 include_flagged: bool = False) -> tuple[datasets.Dataset, datasets.Dataset, dict]:
    """(items, answers, info) for RUN_DIR; ``info`` carries what the card reports."""
    run_dir = Path(run_dir)
    answers, flagged = load_answers(run_dir, include_flagged)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        maj = item_majorities(answers)
        agreement = agreement_by_question_type(answers)
    manifest = pd.read_parquet(run_dir / "manifest.parquet")
    probes = {str(r["probe_id"]): r for r in manifest.to_dict("records")}
    questions = _questions_by_item(run_dir)
    record, _ = read_sample(run_dir)
    sampled = {p for rec in ((record or {}).get("suites") or {}).values() for p in rec.get("probe_ids") or []}
    missing = sorted(set(maj["probe_id"]) - set(probes))
    if missing:
        raise ValueError(f"answers name probe {missing[0]!r}, which is not in {run_dir}/manifest.parquet")

    rows = []
    for r in maj.to_dict("records"):
        probe = probes[r["probe_id"]]
        rel = str(probe.get("image_path") or "")
        path = run_dir / rel
        if not rel or not path.is_file():
            raise ValueError(f"the image of {r['probe_id']!r} is missing ({path}); the dataset needs the run's images")
        fields = {k: _plain(v) for k, v in probe.items() if _present(_plain(v)) if not isinstance(_plain(v), list)
                  or len(_plain(v))}
        row = {"item_id": r["item_id"], "probe_id": r["probe_id"], "suite": r["suite"],
               "prompt": str(probe.get("prompt", "")), "seed": int(probe["seed"]) if _present(probe.get("seed")) else None,
               "question_type": r["question_type"], "question_key": r["question_key"],
               "question": questions.get(r["item_id"], ""),
               "answers": r["answers"], "n_answers": int(r["n_answers"]),
               "majority": r["majority"] if isinstance(r["majority"], str) else None, "tie": bool(r["tie"]),
               "tied_answers": list(r["tied_answers"]), "agreement": float(r["agreement"]),
               "unanimous": bool(r["unanimous"]), "in_sample": r["probe_id"] in sampled,
               "probe": json.dumps({k: v for k, v in fields.items() if k not in ("batch", "batch_seconds", "rank")},
                                   default=str, sort_keys=True)}
        if embed_images:
            row["image"] = {"bytes": path.read_bytes(), "path": Path(rel).name}
        else:
            row["image_file"] = rel
            row["image_sha256"] = str(probe.get("sha256") or "")
        rows.append(row)

    answer_struct = {"annotator": datasets.Value("string"), "answer": datasets.Value("string")}
    item_features = {
        "item_id": datasets.Value("string"), "probe_id": datasets.Value("string"), "suite": datasets.Value("string"),
        "prompt": datasets.Value("string"), "seed": datasets.Value("int64"),
        "question_type": datasets.Value("string"), "question_key": datasets.Value("string"),
        "question": datasets.Value("string"), "answers": datasets.List(answer_struct),
        "n_answers": datasets.Value("int32"), "majority": datasets.Value("string"), "tie": datasets.Value("bool"),
        "tied_answers": datasets.List(datasets.Value("string")), "agreement": datasets.Value("float64"),
        "unanimous": datasets.Value("bool"), "in_sample": datasets.Value("bool"), "probe": datasets.Value("string"),
    }
    if embed_images:
        item_features["image"] = datasets.Image()
    else:
        item_features["image_file"] = datasets.Value("string")
        item_features["image_sha256"] = datasets.Value("string")
    features = datasets.Features(item_features)
    items = datasets.Dataset.from_list(rows, features=features)

    raw = answers.copy()
    raw["question"] = raw["item_id"].map(lambda i: questions.get(i, ""))
    raw["time"] = raw["time"].astype(str)
    raw_cols = ["item_id", "probe_id", "suite", "question_type", "question_key", "question", "answer", "annotator",
                "time", "qualification"]
    raw_features = datasets.Features({c: datasets.Value("bool" if c == "qualification" else "string")
                                      for c in raw_cols})
    raw_ds = datasets.Dataset.from_pandas(raw[raw_cols].astype({"qualification": bool}), features=raw_features,
                                          preserve_index=False)
    cfg = {}
    cfg_path = run_dir / "run_config.json"
    if cfg_path.is_file():
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    info = {"agreement": agreement, "flagged": flagged, "annotators": sorted(answers["annotator"].unique()),
            "suites": sorted(set(maj["suite"])), "question_types": sorted(set(maj["question_type"])),
            "model": (cfg.get("model") or {}), "n_items": len(rows), "n_answers": len(raw),
            "sample": record, "corrected": _corrected_scores(run_dir)}
    return items, raw_ds, info


def _corrected_scores(run_dir: Path) -> dict | None:
    """results.json's people's-label part (each entry with its ``human_corrected``, ``human_labels``),
    when the run was scored with people's labels."""
    try:
        doc = load_results_file(run_dir / RESULTS_FILE)
    except ValueError:
        return None
    if not isinstance(doc.get("human_labels"), dict):
        return None
    keep = ("name", "display_name", "suite", "subset", "estimator", "annotator", "value", "ci", "n", "human_corrected")
    return {"scores": [{k: e.get(k) for k in keep} for e in doc.get("scores") or [] if isinstance(e, dict)
                       and isinstance(e.get("human_corrected"), dict)],
            "human_labels": doc["human_labels"]}


def _corrected_md(info: dict) -> list[str]:
    """The card's section on the calibration sample and the scores corrected with these labels."""
    sample, corrected = info.get("sample"), info.get("corrected")
    if not sample and not corrected:
        return []
    parts = ["## Calibration sample and corrected scores"]
    if sample:
        sizes = ", ".join(f"{s}: {r.get('size')} of {r.get('population')}" for s, r in (sample.get("suites") or {}).items())
        parts.append(f"Items whose `in_sample` is true are about the calibration sample: images drawn at random before "
                     f"labelling ({sample.get('method')}; seed {sample.get('seed')}; {sizes}), recorded in "
                     f"`{SAMPLE_FILE}` beside this card. Only they (or a suite labelled completely) correct the "
                     "automatic scores; the other labels measure agreement.")
    if corrected and corrected["scores"]:
        rows = [[e.get("display_name"), e.get("suite"), e.get("estimator") or e.get("annotator") or "",
                 e.get("value"), (e["human_corrected"] or {}).get("value"),
                 "" if not (e["human_corrected"] or {}).get("ci") else
                 f"[{e['human_corrected']['ci']['low']:.4g}, {e['human_corrected']['ci']['high']:.4g}]",
                 (e["human_corrected"] or {}).get("n_human"), (e["human_corrected"] or {}).get("reason") or ""]
                for e in corrected["scores"]]
        parts.append("The run's scores, automatic and corrected with these labels by prediction-powered inference "
                     "(t2i-bias-benchmark docs/human_correction.md):")
        parts.append(answers_table(pd.DataFrame(rows, columns=["score", "suite", "annotator", "automatic", "corrected",
                                                               "95 % CI", "people-labelled images", "why none"])))
        errors = [r for r in corrected["human_labels"].get("annotator_errors") or [] if r.get("by") != "all"]
        if errors:
            parts.append("The annotator's error rate on the sampled images, per group (Wilson 95 % intervals):")
            parts.append(answers_table(pd.DataFrame(errors), ["file", "suite", "annotator", "by", "group", "rate", "low",
                                                              "high", "n"]))
    return parts


def _cards() -> list[tuple[str, LabelsCard]]:
    """(probe family, what its task says of its questions on the card), in the card's order."""
    cards = [(t.family, t.human_validation.labels_card) for t in list_tasks()
             if t.human_validation is not None and t.human_validation.labels_card is not None]
    return sorted(cards, key=lambda fc: fc[1].order)


def _instructions_md(question_types: list[str], suites: list[str]) -> str:
    """The questions and instructions shown, quoted from the tasks' questions (the papers' wording);
    each task is given the dataset's suites of its own probe family."""
    family = {s: spec.family for s in suites if (spec := SUITES.get(s)) is not None}
    parts = [p for fam, card in _cards()
             for p in card.instructions(question_types, [s for s in suites if family.get(s) == fam])]
    return "\n\n".join(parts) or "No question of the papers' annotation tasks was answered."


def _named(names: list[str]) -> str:
    """``"A, B and C"``."""
    return " and ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else "".join(names)


def labels_card(info: dict, *, license: str, setting: str, pay: str, embed_images: bool) -> tuple[dict, str]:
    """(YAML header, Markdown body) of the dataset card."""
    model = info["model"] or {}
    model_id = model.get("model_id") or model.get("spec") or "unknown"
    n = info["n_items"]
    header = {
        "pretty_name": f"Human labels of text-to-image bias probes ({model_id})",
        "license": license,
        "language": ["en"],
        "task_categories": ["image-classification"],
        "tags": ["bias", "fairness", "human-annotation", "text-to-image", "t2i-bias-benchmark"],
        "size_categories": [size_category(n)],
        "configs": configs_yaml({"items": [SPLIT], "answers": [SPLIT]}, default="items"),
    }
    cards = [c for _, c in _cards()]
    papers = [PAPERS[k] for k in dict.fromkeys(c.paper for c in cards) if k in PAPERS]  # a paper once
    settings = [c.setting for c in cards if c.setting]
    image_note = ("embedded as PNG (`image`)" if embed_images else
                  "referenced by their path in the run folder (`image_file`) and sha256 (`image_sha256`)")
    body = [
        f"# Human labels of text-to-image bias probes ({model_id})",
        f"Human answers to the annotation questions of the {_named([p.label or p.key for p in papers])} papers "
        "about images generated by "
        f"`{model_id}` (revision `{model.get('revision')}`), collected with the `t2i-bias-benchmark` annotation app "
        f"(package version {benchmark.__version__}). {n} items (an image and a question), {info['n_answers']} "
        f"answers by {len(info['annotators'])} annotators. Images are {image_note}.",
        "## Load",
        "```python\nfrom datasets import load_dataset\n\nitems = load_dataset(\"ORG/NAME\", \"items\", split=\"train\")"
        "     # one row per item\nanswers = load_dataset(\"ORG/NAME\", \"answers\", split=\"train\")  # one row per answer\n```",
        "## Configs",
        "**items**: `item_id` (`probe_id|question_type|question_key`), `probe_id`, `suite`, `prompt`, `seed`, "
        f"`question_type` ({', '.join(QUESTION_TYPES)}), `question_key` (attribute, left / "
        "right, the part of the prompt asked about, or empty), `question` (as shown), `answers` (list of {annotator, answer}), `n_answers`, `majority` "
        "(null on a tie), `tie`, `tied_answers`, `agreement` (share of answers equal to the most frequent), "
        "`unanimous`, `in_sample` (about an image of the calibration sample), `probe` (every probe field, JSON), "
        "and the image.",
        "**answers**: one row per answer: `item_id`, `probe_id`, `suite`, `question_type`, `question_key`, "
        "`question`, `answer`, `annotator`, `time` (ISO 8601), `qualification` (an answer to a qualification item).",
        "## Annotation instructions",
        "The annotators saw each image with the question and the instructions below, in the papers' wording.",
        _instructions_md(info["question_types"], info["suites"]),
        "## Annotators, setting and pay",
        f"- Setting: {setting}.",
        f"- Pay: {pay}.",
        f"- Annotators: {len(info['annotators'])}, named by the pseudonym they entered.",
        ("- Annotators who did not pass the qualification test are left out: "
         f"{len(info['flagged'])}." if info["flagged"] else
         "- No annotator was left out for the qualification test (none failed, or none was given)."),
        *([f"- The papers' setting for comparison: {'; '.join(settings)}."] if settings else []),
        "## Agreement",
        "Majority of the answers per item (ties kept as null); Fleiss' kappa (statsmodels) and Krippendorff's "
        "alpha (krippendorff) per question type, computed by `t2ibench agreement`:",
        answers_table(info["agreement"], ["question_type", "n_items", "n_annotators", "n_answers", "fleiss_kappa",
                                           "alpha_nominal", "alpha_ordinal", "n_ties", "n_disagreements"]),
        *_corrected_md(info),
        "## Licence",
        f"The labels (answers, majorities) are released under **{license}**. The images were generated by "
        f"`{model_id}` and inherit that model's licence and terms of use; check them before reusing the images.",
        "## Limitations",
        "Perceived gender and skin tone are annotators' perceptions of generated images, not anyone's identity. "
        "The papers' gender categories are binary (plus Cannot Identify); they do not cover non-binary "
        "presentations. Small numbers of annotators or items make the agreement statistics uncertain.",
        "## Citation",
        "Please cite the papers whose questions were asked:",
        "```bibtex\n" + "\n\n".join(p.bibtex for p in papers) + "\n```",
    ]
    return header, "\n\n".join(body)


def build_labels_dataset(run_dir: str | Path, out: str | Path, *, embed_images: bool = True,
                         include_flagged: bool = False, license: str = DEFAULT_LICENSE,
                         setting: str = DEFAULT_SETTING, pay: str = DEFAULT_PAY) -> dict:
    """Write the Hub-layout folder ``out`` (configs ``items`` and ``answers``, README card)."""
    items, raw, info = build_tables(run_dir, embed_images=embed_images, include_flagged=include_flagged)
    folder = clear_folder(out)
    write_split(folder, "items", SPLIT, items)
    write_split(folder, "answers", SPLIT, raw)
    if info.get("sample"):  # the record that makes the sampled labels a random sample, checkable by anyone
        (folder / SAMPLE_FILE).write_bytes(sample_path(run_dir).read_bytes())
    header, body = labels_card(info, license=license, setting=setting, pay=pay, embed_images=embed_images)
    write_card(folder, header, body)
    return info


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run folder with human labels")
    parser.add_argument("--out", required=True, type=output_folder, help="output folder (Hub layout)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--embed-images", dest="embed_images", action="store_true", default=True,
                       help="embed the PNG images (default)")
    group.add_argument("--image-references", dest="embed_images", action="store_false",
                       help="store each image's path in the run folder and sha256 instead of the image")
    parser.add_argument("--include-flagged", action="store_true",
                        help="keep annotators who did not pass the qualification test")
    parser.add_argument("--license", default=DEFAULT_LICENSE, help=f"licence of the labels (default {DEFAULT_LICENSE})")
    parser.add_argument("--setting", default=DEFAULT_SETTING, help="who annotated and how (for the card)")
    parser.add_argument("--pay", default=DEFAULT_PAY, help="what annotators were paid (for the card)")
    parser.add_argument("--push-to-hub", metavar="ORG/NAME", help="upload the folder as a dataset repo")
    parser.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing")


def run(args: argparse.Namespace) -> int:
    if args.license.strip().lower() == "other":
        # The Hub then needs license_name and license_link, which only a licence file can give.
        raise ValueError("--license other is not supported: give the labels' licence by its Hub id "
                         "(for example cc-by-4.0, cc0-1.0, mit)")
    info = build_labels_dataset(args.run_dir, args.out, embed_images=args.embed_images,
                                include_flagged=args.include_flagged, license=args.license, setting=args.setting,
                                pay=args.pay)
    print(f"wrote {info['n_items']:,} items and {info['n_answers']:,} answers to {args.out}")
    if args.push_to_hub:
        url = push_folder(args.out, args.push_to_hub, create_pr=args.create_pr,
                          commit_message="Upload human labels with t2i-bias-benchmark")
        print(f"pushed to {url}")
    return 0

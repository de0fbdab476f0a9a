"""People's labels as the score stage corrects scores with them (:class:`benchmark.runner.human_correction.HumanLabels`):
which answers count, which images they cover, and why the others do not.

An answer is **refused** (counted by reason, never used) when it is about an item the run does not
have (``unknown item``), about an image that changed since it was answered (``changed image``: the
sha256 recorded with the answer is not the manifest's), or by an annotator who did not pass the
qualification test (``qualification not passed``). The rest count for agreement; they count for
**correction** only where the images people labelled are a random sample:

* ``census``: every eligible image of the suite has a majority answer to every question people
  were asked about its images; no sample record needed;
* ``sample``: the suite's images in the recorded calibration sample (``human_labels/sample.json``,
  checked against the run: the seeded draw again, the images' digest) that people answered
  completely; answers about images outside the sample count for agreement only;
* ``agreement only``: neither (no sample record, or one that does not match the run), with the reason.

An image's answers are complete when each question asked about it in its suite (each question type
and key that people answered there) has a majority; ties are left out and counted. People's labels
are written nowhere: the run's label files are never touched.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmark.contract.human_sample import check_suite, read_sample, sample_path
from benchmark.contract.run_folder import HUMAN_LABELS_DIR
from benchmark.human import questions as q
from benchmark.human.answers_file import ANSWERS_FILE, answers_path, read_lines
from benchmark.human.items import Item, build_items, read_run_manifest
from benchmark.human.qualification import flagged_annotators
from benchmark.human.replay import ANSWER_COLUMNS, effective_events
from benchmark.human.sample import eligible_images
from benchmark.human.stats import item_majorities
from benchmark.runner.human_correction import HumanLabels, HumanTable
from benchmark.scores.ppi import MIN_HUMAN_LABELS, MIN_PER_GROUP
from benchmark.tasks.of_run import tasks_of_run

__all__ = ["REFUSALS", "ASKABLE", "human_labels", "kept_answers"]

REFUSALS = ("unknown item", "changed image", "qualification not passed")
#: the label files the generic question types' answers stand for (:func:`_tables`); a task adds the
#: one its ``HumanValidation.answers_as_labels`` stands for (:func:`_task_tables`)
ASKABLE = frozenset({"gender", "attributes", "skin_tone"})


def kept_answers(run_dir: str | Path, items: dict[str, Item]) -> tuple[pd.DataFrame, dict[str, int], list[str]]:
    """(the answers that count, refused answers by reason, annotators left out): qualification
    answers aside, after replay (undo, later answers replacing earlier ones)."""
    events, skipped = read_lines(answers_path(run_dir))
    refused = {r: 0 for r in REFUSALS}
    if skipped:
        refused["malformed line"] = sum(skipped.values())
    kept = []
    for ev in events:
        if ev["qualification"]:
            continue
        item = items.get(ev["item_id"])
        if item is None:
            refused["unknown item"] += 1
        elif ev.get("image_sha256") and item.image_sha256 and ev["image_sha256"] != item.image_sha256:
            refused["changed image"] += 1
        else:
            kept.append(ev)
    answers = [ev for ev in effective_events(kept).values() if ev["event"] == "answer"]
    flagged = sorted(flagged_annotators(run_dir))
    refused["qualification not passed"] = sum(ev["annotator"] in flagged for ev in answers)
    rows = [{c: ev[c] for c in ANSWER_COLUMNS} for ev in answers if ev["annotator"] not in flagged]
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS), refused, flagged


def _complete(majorities: pd.DataFrame, items: list[Item]) -> tuple[set[str], int]:
    """(images whose every question asked in their suite has a majority, ties met)."""
    answered = majorities[~majorities["tie"].astype(bool)]
    have = set(answered["item_id"])
    asked = {(s, t, k) for s, t, k in zip(majorities["suite"], majorities["question_type"], majorities["question_key"])}
    per_image: dict[str, bool] = {}
    for it in items:
        if (it.suite, it.question_type, it.question_key) in asked:
            per_image[it.probe_id] = per_image.get(it.probe_id, True) and it.item_id in have
    return {p for p, ok in per_image.items() if ok}, int(majorities["tie"].astype(bool).sum())


def _tables(majorities: pd.DataFrame, used: set[str]) -> dict[str, HumanTable]:
    """People's majority labels of the ``used`` images in the label files' shapes."""
    m = majorities[majorities["probe_id"].isin(used) & ~majorities["tie"].astype(bool)]
    out = {}
    gender = m[m["question_type"].isin(["gender_single", "gender_paired"])]
    if len(gender):
        frame = pd.DataFrame({"probe_id": gender["probe_id"].to_numpy(),
                              "person": ["single" if t == "gender_single" else k for t, k in
                                         zip(gender["question_type"], gender["question_key"])],
                              "label": [q.AUTOMATIC_LABEL[a] for a in gender["majority"]]})
        out["gender"] = HumanTable("gender", ("probe_id", "person"), ("label",), frame, shares=True)
    attrs = m[m["question_type"] == "attribute"]
    if len(attrs):
        label = [int(q.AUTOMATIC_LABEL[a]) for a in attrs["majority"]]
        frame = pd.DataFrame({"probe_id": attrs["probe_id"].to_numpy(), "attribute": attrs["question_key"].to_numpy(),
                              "label": label, "score": [float(v) for v in label]})
        out["attributes"] = HumanTable("attributes", ("probe_id", "attribute"), ("label", "score"), frame)
    tone = m[m["question_type"] == "skin_tone"]
    if len(tone):
        frame = pd.DataFrame({"probe_id": tone["probe_id"].to_numpy(),
                              "mst": [int(q.AUTOMATIC_LABEL[a]) for a in tone["majority"]], "face_found": True})
        out["skin_tone"] = HumanTable("skin_tone", ("probe_id",), ("mst", "face_found"), frame, tolerance=1.0,
                                      shares=True)
    return out


def _task_tables(run_dir: Path, majorities: pd.DataFrame, used: set[str],
                 manifest: pd.DataFrame) -> tuple[dict[str, HumanTable], set[str]]:
    """(people's labels of the ``used`` images in the label files the run's tasks turn their answers
    into, every label file a task of the run can be asked about): the tasks'
    ``HumanValidation.answers_as_labels``."""
    out, askable = {}, set()
    m = majorities[majorities["probe_id"].isin(used) & ~majorities["tie"].astype(bool)]
    for task, suites in tasks_of_run(run_dir, list(dict.fromkeys(manifest["suite"].astype(str)))):
        spec = task.human_validation.answers_as_labels if task.human_validation else None
        if spec is None:
            continue
        askable.add(spec.label_file)
        mine = m[m["suite"].isin(suites) & m["question_type"].isin(spec.question_types)]
        if mine.empty:
            continue
        frame = spec.rows(mine, manifest[manifest["probe_id"].isin(set(mine["probe_id"]))])
        if len(frame):
            out[spec.label_file] = HumanTable(spec.label_file, spec.keys, spec.values, frame, judged=spec.judged,
                                              family=task.family, annotator_column=spec.annotator_column)
    return out, askable


def _suite_row(suite: str, eligible: list, complete: set[str], labelled_any: set[str], record: dict | None,
               problem: str | None) -> tuple[dict, set[str]]:
    """(the suite's row of ``human_labels.suites``, the images whose labels count for correction)."""
    ids = {im.probe_id for im in eligible}
    done = complete & ids
    row = {"suite": suite, "population": len(ids), "labelled": len(labelled_any & ids), "complete": len(done),
           "sampled": 0, "used": 0, "outside_sample": 0, "mode": "agreement only", "reason": None}
    if ids and done == ids:
        row.update(mode="census", used=len(ids))
        return row, ids
    why = problem or (None if record is not None else "no calibration sample recorded (t2ibench annotate-ui "
                      "--sample N draws one before labelling); labels chosen by people count for agreement only")
    if why is None:
        why = check_suite(record, suite, eligible)
    if why:
        row["reason"] = why
        return row, set()
    sampled = set(record["suites"][suite]["probe_ids"])
    used = done & sampled
    row.update(mode="sample", sampled=len(sampled), used=len(used), outside_sample=len((labelled_any & ids) - sampled))
    if len(used) < len(sampled):
        row["reason"] = (f"{len(sampled) - len(used)} sampled images not (completely) labelled: left out; the estimate "
                         "assumes they were left for reasons unrelated to what they show")
    return row, used


def human_labels(run_dir: str | Path) -> HumanLabels | None:
    """People's labels of RUN_DIR for the score stage, or None when it has no answers file."""
    run_dir = Path(run_dir)
    if not answers_path(run_dir).is_file():
        return None
    manifest = read_run_manifest(run_dir)
    all_items = build_items(run_dir)
    items = {it.item_id: it for it in all_items}
    answers, refused, flagged = kept_answers(run_dir, items)
    majorities = item_majorities(answers) if len(answers) else pd.DataFrame(
        columns=["item_id", "probe_id", "suite", "question_type", "question_key", "majority", "tie"])
    complete, ties = _complete(majorities, all_items)
    record, problem = read_sample(run_dir)
    types = record.get("question_types") if record else None
    labelled_any = set(majorities["probe_id"])
    rows, labelled = [], {}
    for suite, eligible in eligible_images(run_dir, types).items():
        row, used = _suite_row(suite, eligible, complete, labelled_any, record, problem)
        rows.append(row)
        if used:
            labelled[suite] = used
    summary = {
        "answers_file": f"{HUMAN_LABELS_DIR}/{ANSWERS_FILE}", "n_answers": int(len(answers)),
        "annotators": sorted(set(answers["annotator"])), "flagged_annotators": flagged, "refused": refused,
        "ties": ties, "sample": None if record is None else {
            "file": f"{HUMAN_LABELS_DIR}/{sample_path(run_dir).name}", "seed": record.get("seed"),
            "size_per_suite": record.get("size_per_suite"), "method": record.get("method"),
            "created": record.get("created"), "question_types": record.get("question_types")},
        "sample_problem": problem, "suites": rows,
        "minimum": {"labels": MIN_HUMAN_LABELS, "per_group": MIN_PER_GROUP},
    }
    used = set().union(*labelled.values()) if labelled else set()
    tasks_own, askable = _task_tables(run_dir, majorities, used, manifest)
    return HumanLabels(tables={**_tables(majorities, used), **tasks_own}, labelled=labelled,
                       census={r["suite"] for r in rows if r["mode"] == "census"},
                       population={r["suite"]: r["population"] for r in rows}, summary=summary,
                       askable=ASKABLE | askable)

"""PaintSkills accuracies corrected with people's labels, end to end on a real tiny run folder:
`t2ibench run --model builtin:tiny-sd` on the three PaintSkills suites, read by the built-in tiny
detector (random weights: it gets every image wrong), people's answers to the skill questions
(DALL-Eval Sec. 4.1, Fig. 5b) written as the app writes them, then `t2ibench score`.

The run: 36 object scenes, 8 count scenes (two per N) and 8 spatial scenes (two per relation), from a
probe config of this test. The test's "people" say yes to 70 % of the questions (a fixed rule on the
probe id and question), so the automatic accuracies (0 %) are systematically wrong and people's
value is known: the census of their labels, and the direct count of their answers.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_here import run_here as cli
from cli_here import run_process as t2ibench
from shared_folders import shared_across_workers

from benchmark.human.answers_file import append_event
from benchmark.human.items import build_items, event_for
from benchmark.human.qualification import QualItem, qualification_items
from benchmark.human.sample import run_sample, sample_items
from benchmark.tasks.paintskills.people_labels import answers_as_detections, people_detections
from benchmark.tasks.paintskills.scores import image_outcome

REPO = Path(__file__).resolve().parents[1]
SUITES = ("paintskills_object", "paintskills_count", "paintskills_spatial")
SCENES = {"object": 36, "count": 8, "spatial": 8}
SAMPLE = 30  # of the 36 object images; count and spatial hold fewer, so all of theirs are drawn (a census)


# --------------------------------------------------------------------------- the answers as detections


def _truths():
    yield {"probe_id": "o", "skill": "object", "target": "dog", "count": 1, "relation": None, "target_b": None}
    for n in (1, 2, 3, 4):
        yield {"probe_id": f"c{n}", "skill": "count", "target": "bus", "count": n, "relation": None, "target_b": None}
    for rel in ("left", "right", "above", "below"):
        yield {"probe_id": rel, "skill": "spatial", "target": "dog", "count": pd.NA, "relation": rel,
               "target_b": "chair"}
        yield {"probe_id": f"{rel}-same", "skill": "spatial", "target": "dog", "count": None, "relation": rel,
               "target_b": "dog"}  # one class twice: the rule checks only the axis


KEYS = {"object": ("",), "count": ("", "number"), "spatial": ("objects", "")}


@pytest.mark.parametrize("threshold,object_threshold", [(0.7, True), (0.0, False), (0.99, True)])
def test_people_detections_give_their_answers_under_every_rule(threshold, object_threshold):
    for truth in _truths():
        keys = KEYS[truth["skill"]]
        for answers in itertools.product([True, False], repeat=len(keys)):
            said = dict(zip(keys, answers))
            out = image_outcome(truth["skill"], people_detections(truth, said), truth, threshold=threshold,
                                object_threshold=object_threshold)
            expected = all(answers) if truth["skill"] != "count" else said[""]
            assert out["correct"] == expected, (truth, said, out)
            if truth["skill"] == "count":
                assert out["count_right"] == said["number"], (truth, said, out)
            if truth["skill"] == "spatial":
                assert out["objects_correct"] == said["objects"], (truth, said, out)
    with pytest.raises(ValueError, match="no answer to"):
        people_detections(next(t for t in _truths() if t["skill"] == "count"), {"": True})


def test_only_images_answered_completely_become_rows():
    probes = pd.DataFrame(list(_truths()))
    answers = pd.DataFrame([("o", "prompt_match", "", "yes"), ("c2", "prompt_match", "", "no"),
                            ("left", "prompt_match", "objects", "yes"), ("left", "prompt_match", "", "no"),
                            ("c3", "attribute", "number", "yes")],
                           columns=["probe_id", "question_type", "question_key", "majority"])
    rows = answers_as_detections(answers, probes)
    assert list(rows["probe_id"]) == ["o", "left"]  # c2 lacks its number answer; c3's is another question type
    assert rows.iloc[0]["query_labels"] == ["dog"] and rows.iloc[1]["n_queries"] == 2


# --------------------------------------------------------------------------- a real tiny run


def _build(folder: Path) -> None:
    text = (REPO / "benchmark/tasks/paintskills/probes.yaml").read_text(encoding="utf-8")
    text = re.sub(r"n_scenes:\n(  .*\n)+", "n_scenes:\n" + "".join(f"  {k}: {v}\n" for k, v in SCENES.items()), text)
    (folder / "paintskills.yaml").write_text(text, encoding="utf-8")
    cli("probes", "build", "--out", str(folder / "probes"), "--suites", *SUITES, "--config",
        f"paintskills={folder / 'paintskills.yaml'}")
    t2ibench("run", "--model", "builtin:tiny-sd", "--probes", str(folder / "probes"), "--suites", *SUITES, "--out",
             str(folder / "run"), "--quiet", "--n-resamples", "200", "--set", "num_inference_steps=1", root=folder)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return shared_across_workers(tmp_path_factory, "paintskills-correction-run", _build) / "run"


def says_yes(probe_id: str, key: str) -> bool:
    """The test's people: yes to 70 % of the questions, by a fixed rule on the image and question."""
    return int(hashlib.sha256(f"{probe_id}|{key}".encode()).hexdigest(), 16) % 10 < 7


def answer(run: Path, items) -> None:
    for it in items:
        append_event(run, event_for(it, "answer", "alice", "yes" if says_yes(it.probe_id, it.question_key) else "no"))


def score(run: Path) -> dict:
    cli("score", str(run), "--n-resamples", "300")
    return json.loads((run / "results.json").read_text())


def entries(results: dict) -> dict:
    return {(e["name"], e["subset"]): e for e in results["scores"]}


def people_accuracy(manifest: pd.DataFrame) -> dict:
    """Every PaintSkills accuracy as people's answers give it, counted directly (percent)."""
    m = manifest.set_index("probe_id")
    yes = {k: np.array([says_yes(p, k) for p in m.index]) for k in ("", "number", "objects")}
    right = np.where(m["skill"] == "spatial", yes[""] & yes["objects"], yes[""])
    out = {}
    for skill in ("object", "count", "spatial"):
        mine = (m["skill"] == skill).to_numpy()
        out[(f"paintskills_{skill}", None)] = 100 * right[mine].mean()
        split = {"count": "count", "spatial": "relation"}.get(skill)
        for value in sorted(set(m.loc[mine, split])) if split else []:
            sub = mine & (m[split] == value).to_numpy()
            out[(f"paintskills_{skill}", f"N = {int(value)}" if skill == "count" else f"relation: {value}")] = \
                100 * right[sub].mean()
    out[("paintskills_count_number", None)] = 100 * yes["number"][(m["skill"] == "count").to_numpy()].mean()
    out[("paintskills_spatial_objects", None)] = 100 * yes["objects"][(m["skill"] == "spatial").to_numpy()].mean()
    out[("paintskills_average", "mean of object, count, spatial")] = np.mean(
        [out[(f"paintskills_{s}", None)] for s in ("object", "count", "spatial")])
    return out


@pytest.fixture(scope="module")
def census(built, tmp_path_factory) -> dict:
    """People's values: every image labelled (a census), scored."""
    run = Path(shutil.copytree(built, tmp_path_factory.mktemp("ps-census") / "run"))
    answer(run, build_items(run))
    return score(run)


def test_a_census_gives_peoples_accuracies_per_skill_and_split(census, built):
    expected = people_accuracy(pd.read_parquet(built / "manifest.parquet"))
    got = entries(census)
    assert set(expected) <= set(got) and len(expected) == 14
    for key, value in expected.items():
        hc = got[key]["human_corrected"]
        assert got[key]["value"] == 0.0 and hc["method"].startswith("census"), key  # the tiny detector: all wrong
        assert hc["value"] == pytest.approx(value), key
        assert hc["n_human"] == hc["n_population"] == got[key]["n"], key
    assert [s["mode"] for s in census["human_labels"]["suites"]] == ["census"] * 3


def test_a_sample_corrects_the_accuracies_the_detector_gets_wrong(built, census, tmp_path):
    run = Path(shutil.copytree(built, tmp_path / "run"))
    record = run_sample(run, SAMPLE, seed=1)  # what `t2ibench annotate-ui RUN --sample 30` draws and records
    assert {s: r["size"] for s, r in record["suites"].items()} == {"paintskills_object": SAMPLE,
                                                                  "paintskills_count": 8, "paintskills_spatial": 8}
    answer(run, sample_items(build_items(run), record))
    results = score(run)
    got, people = entries(results), entries(census)
    obj = got[("paintskills_object", None)]
    hc, truth = obj["human_corrected"], people[("paintskills_object", None)]["human_corrected"]["value"]
    assert obj["value"] == 0.0
    assert hc["n_human"] == SAMPLE and hc["n_population"] == 36 and hc["method"].startswith("prediction-powered")
    assert hc["ci"]["low"] <= truth <= hc["ci"]["high"]  # covers people's value
    assert not hc["ci"]["low"] <= obj["value"] <= hc["ci"]["high"]  # and excludes the automatic one
    modes = {s["suite"]: s["mode"] for s in results["human_labels"]["suites"]}
    assert modes == {"paintskills_object": "sample", "paintskills_count": "census", "paintskills_spatial": "census"}
    for key in [k for k in got if k[0] in ("paintskills_count", "paintskills_count_number", "paintskills_spatial",
                                           "paintskills_spatial_objects")]:
        assert got[key]["human_corrected"]["value"] == people[key]["human_corrected"]["value"], key
    # the mean over skills rests on the object sample too: not a census, and 8 labels in its smallest skill
    avg = got[("paintskills_average", "mean of object, count, spatial")]["human_corrected"]
    assert avg["value"] is None and avg["reason"].startswith("not enough human labels (46 of 52)")
    assert "the smallest holds 8" in avg["reason"]
    # the detector's errors against people, image by image under the skill's rule
    errors = [r for r in results["human_labels"]["annotator_errors"] if r["file"] == "labels/detections.parquet"]
    missed = next(r for r in errors if r["suite"] == "paintskills_object" and r["group"] == "right")
    assert missed["annotator"] == "builtin:tiny-detr" and missed["rate"] == 1.0 and missed["n"] > 10
    assert "ok" in cli("validate", "--allow-demo", str(run / "results.json")).stdout


def test_the_skill_questions_are_asked_and_qualify(built):
    items = build_items(built)
    by_skill = {}
    for it in items:
        by_skill.setdefault(it.suite, set()).add((it.question_type, it.question_key))
    assert by_skill == {"paintskills_object": {("prompt_match", "")},
                        "paintskills_count": {("prompt_match", ""), ("prompt_match", "number")},
                        "paintskills_spatial": {("prompt_match", "objects"), ("prompt_match", "")}}
    assert all(it.options == ("yes", "no") for it in items)
    spatial = next(it for it in items if it.suite == "paintskills_spatial" and it.question_key == "")
    assert re.fullmatch(r"Is the [a-z ]+ (to the left of|to the right of|above|below) the [a-z ]+\?", spatial.question)
    # a qualification item about an image of the run is asked as the app asks it about that image
    (qual,) = qualification_items(built, [QualItem("q1", "prompt_match", "", "yes", probe_id=spatial.probe_id)])
    assert qual.question == spatial.question and qual.options == ("yes", "no")

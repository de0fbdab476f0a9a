"""PaintSkills evaluation (DALL-Eval Sec. 4.1, Table 2): the official rules on constructed
detections, the ground-truth detector (oracle 100 %, shuffled near chance) on rendered
scenes, a tiny random DETR loaded through from_pretrained, the evaluate module, the
commands, and the suites inside `t2ibench run`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmark.models.detector import COCO_NAMES, Detections, DetrDetector
from benchmark.tasks.paintskills.detector.ground_truth import GroundTruthDetector
from benchmark.tasks.paintskills.scenes import build_scenes
from benchmark.tasks.paintskills.scores import (
    count_outcome,
    image_outcome,
    object_correct,
    relation_of,
    shuffled_chance,
    skill_accuracy,
    spatial_outcome,
)

ROOT = Path(__file__).resolve().parents[1]


def dets(rows, class_names=None):
    """Detections from [(label, prob, (cx, cy))]: the query's top class gets ``prob``, the rest
    of its mass goes to the first other class."""
    names = tuple(class_names or ("dog", "cat", "person", "chair"))
    probs = np.zeros((len(rows), len(names)), np.float32)
    boxes = np.zeros((len(rows), 4), np.float32)
    for q, (label, p, (cx, cy)) in enumerate(rows):
        probs[q, names.index(label)] = p
        other = next(i for i, n in enumerate(names) if n != label)
        probs[q, other] = min(1 - p, p * 0.99)
        boxes[q] = [cx, cy, 0.1, 0.1]
    return Detections.from_probs(probs, boxes, names)


# --------------------------------------------------------------------------- rules


def test_object_rule_top_query_and_threshold():
    d = dets([("cat", 0.6, (0.5, 0.5)), ("dog", 0.9, (0.2, 0.2))])
    assert object_correct(d.scores, d.labels, "dog")
    assert not object_correct(d.scores, d.labels, "cat")  # only the most confident query counts
    low = dets([("dog", 0.65, (0.5, 0.5))])
    assert not object_correct(low.scores, low.labels, "dog")  # 0.65 < 0.7 (the release's p_threshold)
    assert object_correct(low.scores, low.labels, "dog", apply_threshold=False)  # released eval_object
    assert object_correct(low.scores, low.labels, "dog", threshold=0.5)


def test_count_rule_is_the_released_one():
    two_dogs = dets([("dog", 0.9, (0.2, 0.2)), ("dog", 0.8, (0.7, 0.7)), ("cat", 0.1, (0.5, 0.5))])
    out = count_outcome(two_dogs.scores, two_dogs.labels, two_dogs.prob_of("dog"), "dog", 2)
    assert out.correct and out.count_right and out.n_detected == 2
    assert not count_outcome(two_dogs.scores, two_dogs.labels, two_dogs.prob_of("dog"), "dog", 3).correct
    assert not count_outcome(two_dogs.scores, two_dogs.labels, two_dogs.prob_of("cat"), "cat", 2).correct
    # 3 queries above the threshold, 2 of them dogs: N_pred != N but the top-3 queries by dog
    # probability hold exactly 2 dogs, which the release counts as correct.
    extra = dets([("dog", 0.9, (0.2, 0.2)), ("dog", 0.8, (0.7, 0.7)), ("cat", 0.95, (0.5, 0.5))])
    out = count_outcome(extra.scores, extra.labels, extra.prob_of("dog"), "dog", 2)
    assert out.correct and not out.count_right and out.n_detected == 3
    # fewer detections than objects is always wrong
    one = dets([("dog", 0.9, (0.2, 0.2)), ("dog", 0.5, (0.7, 0.7))])
    assert not count_outcome(one.scores, one.labels, one.prob_of("dog"), "dog", 2).correct


def test_spatial_rule_reads_relation_of_b_to_a_from_box_centres():
    # dog (objA) at left, cat (objB) at right: "the cat is to the right of the dog"
    d = dets([("dog", 0.9, (0.2, 0.5)), ("cat", 0.8, (0.8, 0.55)), ("person", 0.1, (0.5, 0.1))])
    assert spatial_outcome(d.scores, d.labels, d.boxes, "dog", "cat", "right").correct
    assert not spatial_outcome(d.scores, d.labels, d.boxes, "dog", "cat", "left").correct
    # objects given the other way round: "the dog is to the left of the cat"
    assert spatial_outcome(d.scores, d.labels, d.boxes, "cat", "dog", "left").correct
    # y grows downwards: B above A when its centre has the smaller y
    v = dets([("dog", 0.9, (0.5, 0.8)), ("cat", 0.8, (0.52, 0.2))])
    assert spatial_outcome(v.scores, v.labels, v.boxes, "dog", "cat", "above").correct
    assert spatial_outcome(v.scores, v.labels, v.boxes, "cat", "dog", "below").correct
    # wrong classes among the top-2 queries (the person is more confident than the cat)
    w = dets([("dog", 0.9, (0.2, 0.5)), ("person", 0.85, (0.5, 0.5)), ("cat", 0.8, (0.8, 0.5))])
    out = spatial_outcome(w.scores, w.labels, w.boxes, "dog", "cat", "right")
    assert not out.correct and not out.objects_correct and out.predicted_relation is None
    # one class twice: only the axis is checked (the release cannot tell the objects apart)
    s = dets([("dog", 0.9, (0.2, 0.5)), ("dog", 0.8, (0.8, 0.5))])
    assert spatial_outcome(s.scores, s.labels, s.boxes, "dog", "dog", "left").correct
    assert not spatial_outcome(s.scores, s.labels, s.boxes, "dog", "dog", "above").correct
    assert relation_of((0.5, 0.5), (0.1, 0.45)) == "left" and relation_of((0.5, 0.5), (0.5, 0.9)) == "below"


def test_rules_reject_bad_input():
    d = dets([("dog", 0.9, (0.2, 0.5))])
    with pytest.raises(ValueError, match="relation must be one of"):
        spatial_outcome(d.scores, d.labels, d.boxes, "dog", "cat", "behind")
    with pytest.raises(ValueError, match="queries"):
        object_correct([0.5, 0.4], ["dog"], "dog")
    with pytest.raises(ValueError, match="probabilities"):
        object_correct([1.5], ["dog"], "dog")
    with pytest.raises(ValueError, match="threshold"):
        object_correct([0.5], ["dog"], "dog", threshold=1.0)
    with pytest.raises(ValueError, match="count must be"):
        count_outcome(d.scores, d.labels, d.prob_of("dog"), "dog", 0)
    with pytest.raises(ValueError, match="unknown skill"):
        image_outcome("color", d, {"target": "dog"})
    with pytest.raises(ValueError, match="target"):
        image_outcome("object", d, {"target": None})


def test_accuracy_per_split_and_interval():
    correct = [True, False, True, True, False, False, True, True]
    splits = ["1", "1", "2", "2", "3", "3", "4", "4"]
    out = skill_accuracy(correct, splits, n_resamples=200)
    assert out["accuracy"] == pytest.approx(62.5) and out["n_correct"] == 5
    assert list(out["per_split"]) == ["1", "2", "3", "4"]
    assert [v["accuracy"] for v in out["per_split"].values()] == [50.0, 100.0, 0.0, 100.0]
    ci = out["accuracy_ci"]
    assert 0 <= ci["low"] <= 62.5 <= ci["high"] <= 100 and ci["high"] > ci["low"]
    assert skill_accuracy([1, 1, 1], n_resamples=0)["accuracy_ci"] is None
    with pytest.raises(ValueError, match="non-empty"):
        skill_accuracy([])
    with pytest.raises(ValueError, match="splits has"):
        skill_accuracy([True, False], ["1"])


def test_shuffled_chance_is_the_collision_probability():
    # object: uniform over 15 classes -> 1/15; count: 60 cells -> 1/60 (paper: 6.3, 1.7)
    obj = build_scenes("object", "test", n=150)
    assert shuffled_chance("object", obj) == pytest.approx(100 / 15)
    cnt = build_scenes("count", "test", n=120)
    assert shuffled_chance("count", cnt) == pytest.approx(100 / 60)
    # spatial: an ordered pair matches itself, or its swap with the inverse relation
    sp = [{"target": "dog", "target_b": "cat", "relation": "left"},
          {"target": "cat", "target_b": "dog", "relation": "right"}]
    assert shuffled_chance("spatial", sp) == pytest.approx(100.0)
    sp.append({"target": "cat", "target_b": "dog", "relation": "left"})
    assert shuffled_chance("spatial", sp) == pytest.approx(100 * (2 * 2 + 1) / 9)


# --------------------------------------------------------------------------- detectors


def rendered(skill, n, size=64):
    from benchmark.tasks.paintskills.render import render_scene

    out = []
    for s in build_scenes(skill, "test", n=n):
        image, scene = render_scene(s, size=size)
        out.append((image, scene))
    return out


def test_ground_truth_detector_returns_the_scene_boxes():
    (image, scene), = rendered("spatial", 1, size=128)
    det = GroundTruthDetector([scene], image_size=128).detect([scene["id"]])[0]
    assert det.labels == (scene["target"], scene["target_b"])
    assert np.all(det.scores == 1.0)
    x, y, w, h = scene["objects"][1]["box"]
    np.testing.assert_allclose(det.boxes[1], [(x + w / 2) / 128, (y + h / 2) / 128, w / 128, h / 128], rtol=1e-6)
    assert det.prob_of(scene["target_b"]).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="knows no scene"):
        GroundTruthDetector([scene], image_size=128).detect(["nope"])
    with pytest.raises(ValueError, match="image size unknown"):
        GroundTruthDetector([scene]).detect([scene["id"]])
    unrendered = build_scenes("object", "test", n=1)
    with pytest.raises(ValueError, match="render the scenes first"):
        GroundTruthDetector(unrendered, image_size=64).detect([unrendered[0]["id"]])


@pytest.mark.parametrize("skill", ["object", "count", "spatial"])
def test_oracle_is_exactly_100_and_shuffled_is_near_chance(skill):
    from benchmark.tasks.paintskills.detector.baselines import skill_baselines

    scenes = []
    for _, scene in rendered(skill, 240):
        scenes.append({**scene, "width": 64, "height": 64})
    out = skill_baselines(skill, scenes, n_resamples=200, seed=0)
    assert out["oracle"]["accuracy"] == 100.0
    assert all(v["accuracy"] == 100.0 for v in out["oracle"]["per_split"].values())
    if skill != "object":
        assert len(out["oracle"]["per_split"]) == 4
    shuffled = out["shuffled"]["accuracy"]
    assert shuffled < 15.0
    # within a few standard errors of the analytic chance level for this data
    se = 100 * np.sqrt(out["chance"] / 100 * (1 - out["chance"] / 100) / len(scenes))
    assert abs(shuffled - out["chance"]) < 4 * se + 100 / len(scenes)


def test_detections_round_trip_and_restrict():
    d = dets([("dog", 0.9, (0.2, 0.5)), ("cat", 0.8, (0.8, 0.5))])
    small = d.restrict(["cat"])
    assert small.class_names == ("cat",) and small.probs.shape == (2, 1)
    back = Detections.from_record(json.loads(json.dumps(small.to_record())))
    np.testing.assert_allclose(back.prob_of("cat"), d.prob_of("cat"), rtol=1e-6)
    np.testing.assert_allclose(back.boxes, d.boxes)
    assert back.labels == d.labels
    # a class not kept: the top-class probability where it is the top class (lower bound)
    assert back.prob_of("dog").tolist() == pytest.approx([0.9, 0.0])


def test_tiny_detr_loads_through_from_pretrained_and_detects(cache):
    from benchmark.models.errors import ModelSpecError

    det = DetrDetector.from_pretrained("builtin:tiny-detr", device="cpu")
    assert det.class_names == COCO_NAMES and det.class_names[18] == "dog"
    images = [im for im, _ in rendered("count", 3)]
    out = det.detect(images)
    assert len(out) == 3
    for d in out:
        assert d.n_queries == det.settings["num_queries"] and d.probs.shape == (d.n_queries, 91)
        assert np.all((d.scores > 0) & (d.scores <= 1)) and np.all((d.boxes >= 0) & (d.boxes <= 1))
        # the probabilities are a softmax with the no-object class left out
        assert np.all(d.probs.sum(axis=1) < 1 + 1e-5)
        np.testing.assert_allclose(d.scores, d.probs.max(axis=1), rtol=1e-6)
    # the same folder loaded as a local path gives the same numbers
    from benchmark.models.tiny import builtin_path

    again = DetrDetector.from_pretrained(str(builtin_path("tiny-detr")), device="cpu").detect(images[:1])[0]
    np.testing.assert_allclose(again.probs, out[0].probs, rtol=1e-5)
    with pytest.raises(ModelSpecError, match="does not exist"):
        DetrDetector.from_pretrained("./no/such/folder")
    with pytest.raises(ModelSpecError, match="builtin:tiny-detr"):
        DetrDetector.from_pretrained("builtin:tiny-nope")


# --------------------------------------------------------------------------- evaluate module


def test_evaluate_module_matches_the_functions(monkeypatch):
    import evaluate

    from benchmark.tasks.paintskills.scores import evaluate_skill

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    module = evaluate.load(str(ROOT / "metrics" / "paintskills_accuracy"))
    scenes = [{**s, "width": 64, "height": 64} for _, s in rendered("spatial", 12)]
    gt = GroundTruthDetector(scenes).detect([s["id"] for s in scenes])
    # every other image is paired with a detection of another scene: wrong classes or relation
    dets = [gt[i] if i % 2 == 0 else gt[(i + 5) % len(gt)] for i in range(len(gt))]
    preds = [{"scores": d.scores.tolist(), "labels": list(d.labels), "boxes": d.boxes.tolist()} for d in dets]
    refs = [{"target": s["target"], "target_b": s["target_b"], "relation": s["relation"]} for s in scenes]
    out = module.compute(predictions=preds, references=refs, skill="spatial", n_resamples=100)
    direct = evaluate_skill("spatial", dets, scenes, n_resamples=100)
    assert out["accuracy"] == pytest.approx(direct["accuracy"]) and 45 <= out["accuracy"] < 100
    assert out["correct"] == [o["correct"] for o in direct["outcomes"]]
    assert set(out["per_split"]) == {"left", "right", "above", "below"}
    assert out["accuracy_ci"]["low"] <= out["accuracy"] <= out["accuracy_ci"]["high"]
    # count with the target's own probabilities, added batch by batch
    cnt = [{**s, "width": 64, "height": 64} for _, s in rendered("count", 8)]
    cdets = GroundTruthDetector(cnt).detect([s["id"] for s in cnt])
    for d, s in zip(cdets, cnt):
        module.add(prediction={"scores": d.scores.tolist(), "labels": list(d.labels),
                               "target_scores": d.prob_of(s["target"]).tolist()},
                   reference={"target": s["target"], "count": s["count"]})
    res = module.compute(skill="count", n_resamples=0)
    assert res["accuracy"] == 100.0 and res["count_right_accuracy"] == 100.0 and res["accuracy_ci"] is None
    with pytest.raises(ValueError, match="skill"):
        module.compute(predictions=preds[:1], references=refs[:1], skill="color")
    with pytest.raises(ValueError, match="lacks"):
        module.compute(predictions=preds[:1], references=[{"target": "dog"}], skill="spatial")
    with pytest.raises(ValueError, match="unknown keys"):
        module.compute(predictions=[{"score": [0.5]}], references=[{"target": "dog"}], skill="object")


# --------------------------------------------------------------------------- inside `t2ibench run`

PS_SUITES = ["paintskills_object", "paintskills_count", "paintskills_spatial"]


class RenderingModel:
    """A "text-to-image model" that draws each probe's ground-truth scene (the renderer), so
    the run folder holds the rendered test images; with the oracle detector they score 100 %."""

    model_id, revision, settings = "ground-truth-renderer", None, {"size": 64}

    def __init__(self, probes):
        from benchmark.tasks.paintskills.render import render_scene

        by_id = {s["id"]: s for k in ("object", "count", "spatial") for s in build_scenes(k, "test")}
        self.scene_of_seed = {int(r["seed"]): by_id[r["scene_id"]] for r in probes.to_dict("records")}
        self.rendered = {seed: render_scene(s, size=64) for seed, s in self.scene_of_seed.items()}

    def generate(self, prompts, seeds):
        from benchmark.models.text_to_image import GenerationOutput

        return GenerationOutput(images=[self.rendered[int(s)][0] for s in seeds], nsfw=[False] * len(seeds))


class OracleDetector:
    """The ground-truth detector behind the Detector interface of the annotate stage: it
    recognises each rendered image by its pixels and returns that scene's own boxes."""

    name = "ground-truth"
    settings = {"kind": "ground-truth"}

    def __init__(self, model: RenderingModel):
        scenes = [{**s, "width": 64, "height": 64} for _, s in model.rendered.values()]
        self.gt = GroundTruthDetector(scenes)
        self.by_pixels = {im.tobytes(): s["id"] for im, s in model.rendered.values()}

    def detect(self, images):
        return self.gt.detect([self.by_pixels[im.convert("RGB").tobytes()] for im in images])


def test_suites_are_registered_from_the_scenes():
    from benchmark.probes import build_suite, get_suite, list_suites
    from benchmark.probes.registry import default_config_path

    assert default_config_path("paintskills").is_file() and set(PS_SUITES) <= set(list_suites())
    df = build_suite("paintskills_spatial")
    assert len(df) == 2700 == get_suite("paintskills_spatial").expected_rows
    scenes = build_scenes("spatial", "test")
    assert df["scene_id"].tolist() == [s["id"] for s in scenes]
    assert df["prompt"].tolist() == [s["text"] for s in scenes]
    assert {"scene_id", "skill", "target", "count", "relation", "target_b"} <= set(df.columns)
    assert df["count"].isna().all() and set(df["relation"]) == {"left", "right", "above", "below"}
    cnt = build_suite("paintskills_count")
    assert cnt["count"].value_counts().to_dict() == {1: 540, 2: 540, 3: 540, 4: 540}


def test_oracle_run_scores_100_through_annotate_and_score(tmp_path, cache):
    from audit_requests import generate_into
    from benchmark.runner import build_probes
    from benchmark.runner.annotate import annotate_run, read_labels
    from benchmark.contract.results import validate_results
    from benchmark.runner.score import score_run

    probes = build_probes(PS_SUITES, 12)
    model = RenderingModel(probes)
    run = tmp_path / "oracle"
    generate_into(run, model, probes, batch_size=12, spec="python:paintskills_ground_truth:render")
    summary = annotate_run(run, detector=OracleDetector(model), batch_size=8)
    assert summary.files_written == ["labels/detections.parquet"] and summary.rows["labels/detections.parquet"] == 36
    det = read_labels(run, "detections")
    assert set(det["detector"]) == {"ground-truth"} and det["probe_id"].is_unique
    results = score_run(run, n_resamples=100, report=True)
    assert validate_results(results) == []
    by = {(e["name"], e["subset"]): e for e in results["scores"]}
    for skill in ("object", "count", "spatial"):
        e = by[(f"paintskills_{skill}", None)]
        assert e["value"] == 100.0 and e["n"] == 12 and e["annotator"] == "ground-truth"
    assert by[("paintskills_average", "mean of object, count, spatial")]["value"] == 100.0
    assert {k[1] for k in by if k[0] == "paintskills_spatial"} >= {"relation: left", "relation: below"}
    table = __import__("pandas").read_parquet(run / results["details"]["paintskills"])
    assert len(table) == 36 and table["correct"].all()
    assert (run / "report" / "paintskills_ground-truth.png").is_file()
    assert "PaintSkills: skill accuracy" in (run / "report" / "report.md").read_text()


def test_tiny_detr_run_is_meaningless_and_says_so(tmp_path, cache, monkeypatch):
    import shutil
    import threading

    import benchmark.runner.annotate_pass as stage
    from benchmark.models import load_text_to_image
    from benchmark.models.detector import DetrDetector
    from audit_requests import generate_into
    from benchmark.runner import build_probes
    from benchmark.runner.annotate import annotate_run, read_labels
    from benchmark.contract.results import BUILTIN_WARNING, validate_results
    from benchmark.runner.score import score_run

    run = tmp_path / "tiny"
    probes = build_probes(PS_SUITES, 4)
    generate_into(run, load_text_to_image("builtin:tiny-sd"), probes, batch_size=12,
             spec="builtin:tiny-sd")
    inline = tmp_path / "inline"
    shutil.copytree(run, inline)
    threads: list[str] = []
    prepare = DetrDetector.prepare_images
    monkeypatch.setattr(DetrDetector, "prepare_images",
                        lambda self, images: threads.append(threading.current_thread().name) or prepare(self, images))
    summary = annotate_run(run, batch_size=4)  # default for a builtin run: builtin:tiny-detr
    assert summary.annotators["detector"] == "builtin:tiny-detr"
    # DETR's 800 px preprocessing ran on the decode threads, with the detections of running it inline
    assert len(threads) == 3 and all(t.startswith("t2ibench-decode") for t in threads), threads
    monkeypatch.setattr(stage, "_preparers", lambda *a: {})
    annotate_run(inline, batch_size=4)
    __import__("pandas").testing.assert_frame_equal(read_labels(run, "detections"), read_labels(inline, "detections"))
    det = read_labels(run, "detections")
    assert len(det) == 12 and (det["n_queries"] == 16).all()
    spatial = det[det["probe_id"].str.startswith("paintskills_spatial")].iloc[0]
    assert len(spatial["prob_classes"]) == 2  # objA and objB probabilities kept for every query
    assert len(spatial["query_probs"]) == 2 * 16 and len(spatial["query_boxes"]) == 4 * 16
    again = annotate_run(run)
    assert again.files_written == [] and again.models_loaded == []  # complete: nothing reloaded
    results = score_run(run, n_resamples=50)
    assert results["warning"] == BUILTIN_WARNING and validate_results(results) == []
    assert any("builtin:tiny-detr" in n and "meaningless" in n for n in results["notes"])
    names = {e["name"] for e in results["scores"]}
    assert {"paintskills_object", "paintskills_count", "paintskills_spatial"} <= names
    # no detector: the suites are not scored, with the reason
    (run / "labels" / "detections.parquet").unlink()
    status = {s["name"]: s for s in score_run(run, n_resamples=0)["suites"]}
    assert status["paintskills_count"]["status"] == "not scored"
    assert "labels/detections.parquet" in status["paintskills_count"]["reason"]


# --------------------------------------------------------------------------- commands and training


@pytest.fixture(scope="module")
def rendered_data(tmp_path_factory):
    from benchmark.tasks.paintskills.scene_dataset import build_dataset

    out = tmp_path_factory.mktemp("paintskills") / "data"
    build_dataset(out, limit=60, size=64)
    return out


def test_baselines_command_prints_oracle_and_shuffled(rendered_data, tmp_path, capsys):
    from benchmark.cli import main

    assert main(["paintskills-baselines", "--data", str(rendered_data), "--n-resamples", "50", "--quiet",
                 "--json", str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "oracle" in out and "shuffled" in out and "98.0 / 2.8" in out
    table = json.loads((tmp_path / "b.json").read_text())
    assert set(table) == {"object", "count", "spatial"}
    for skill, t in table.items():
        assert t["n_images"] == 60 and t["oracle"]["accuracy"] == 100.0, skill
        assert t["shuffled"]["accuracy"] < 20.0 and 0 < t["chance"] < 10, skill
    assert table["object"]["chance"] == pytest.approx(100 / 15)


def test_commands_explain_a_missing_dataset(tmp_path, capsys):
    from benchmark.cli import main

    (tmp_path / "empty").mkdir()
    for argv in (["paintskills-baselines", "--data", str(tmp_path / "nope")],
                 ["paintskills-baselines", "--data", str(tmp_path / "empty")],
                 ["train-detector", "--data", str(tmp_path / "empty"), "--out", str(tmp_path / "d"), "--tiny"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("t2ibench: error:") and "python -m dataset_builders.paintskills --out" in err
    with pytest.raises(SystemExit) as done:  # refused while parsing
        main(["train-detector", "--data", str(tmp_path), "--out", str(tmp_path / "d"), "--tiny", "--steps", "0"])
    assert done.value.code == 2
    assert "--steps: expected a whole number from 1" in capsys.readouterr().err


def test_train_detector_fine_tunes_saves_and_resumes(rendered_data, tmp_path, cache, monkeypatch):
    import torch

    from benchmark.cli import main
    from benchmark.tasks.paintskills.detector.training import CHECKPOINT, TrainConfig, train_detector

    cfg = TrainConfig(model="builtin:tiny-detr", steps=4, batch_size=3, lr=1e-3, lr_backbone=1e-4,
                      checkpoint_every=2, limit=6)
    full = train_detector(rendered_data, tmp_path / "full", cfg, device="cpu")
    assert full.steps_done == 4 and len(full.losses) == 4 and all(np.isfinite(full.losses))
    assert full.n_examples == 18  # 6 scenes of each skill's train split
    info = json.loads((tmp_path / "full" / "training.json").read_text())
    assert info["steps"] == 4 and info["config"]["lr"] == 1e-3
    assert not (tmp_path / "full" / CHECKPOINT).exists()
    # the weights moved, and the result loads back as a detector
    base = DetrDetector.from_pretrained("builtin:tiny-detr", device="cpu")
    tuned = DetrDetector.from_pretrained(str(tmp_path / "full"), device="cpu")
    p0 = dict(base.model.named_parameters())
    moved = [n for n, p in tuned.model.named_parameters() if not torch.equal(p, p0[n])]
    assert any("class_labels_classifier" in n for n in moved) and any("backbone" in n for n in moved)
    images = [im for im, _ in rendered("object", 2)]
    assert len(tuned.detect(images)) == 2

    # a run killed after step 3 resumes from the step-2 checkpoint and ends with the same weights
    calls = {"n": 0}
    real = torch.nn.utils.clip_grad_norm_

    def dying(*a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")
        return real(*a, **k)

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", dying)
    with pytest.raises(KeyboardInterrupt):
        train_detector(rendered_data, tmp_path / "resumed", cfg, device="cpu")
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", real)
    assert (tmp_path / "resumed" / CHECKPOINT / "trainer_state.pt").is_file()
    again = train_detector(rendered_data, tmp_path / "resumed", cfg, device="cpu")
    assert again.resumed_from == 2 and again.steps_done == 4 and len(again.losses) == 2
    assert again.losses == pytest.approx(full.losses[2:], rel=1e-5)
    resumed = DetrDetector.from_pretrained(str(tmp_path / "resumed"), device="cpu")
    for (n, p), q in zip(tuned.model.named_parameters(), resumed.model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=n)
    # the same command on a finished folder does nothing; other settings are refused
    assert main(["train-detector", "--data", str(rendered_data), "--out", str(tmp_path / "full"), "--tiny",
                 "--steps", "4", "--batch-size", "3", "--lr", "1e-3", "--lr-backbone", "1e-4",
                 "--checkpoint-every", "2", "--limit", "6", "--quiet"]) == 0
    assert main(["train-detector", "--data", str(rendered_data), "--out", str(tmp_path / "full"), "--tiny",
                 "--steps", "4", "--quiet"]) == 2


def test_detector_spec_errors_are_one_line_and_early(tmp_path, monkeypatch):
    from benchmark.models.errors import ModelSpecError
    from benchmark.models.detector import check_detector_spec

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))  # nothing cached
    with pytest.raises(ModelSpecError, match="not in the local Hugging Face cache"):
        check_detector_spec("facebook/detr-resnet-50")
    with pytest.raises(ModelSpecError, match="malformed detector spec"):
        check_detector_spec("open_clip:ViT-B-32")
    with pytest.raises(ModelSpecError, match="empty"):
        DetrDetector.from_pretrained("")

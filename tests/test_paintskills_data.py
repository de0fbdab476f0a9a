"""PaintSkills data: scene configurations are exactly balanced at the paper's sizes and
deterministic, prompts follow the templates, the 2D renderer draws exact boxes that
satisfy each scene, and a small Hub-layout build loads offline with `datasets`."""

import io
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import datasets
import numpy as np
import pytest
import yaml
from PIL import Image, ImageColor

from benchmark.tasks.paintskills import glyphs
from benchmark.tasks.paintskills.render import RELATION_MARGIN, relation_of, render_background, render_scene
from benchmark.tasks.paintskills.scenes import (BACKGROUNDS, CLASSES, COCO_IDS, COUNTS, RELATIONS, SHAPES,
                                                 SKILLS, SPLIT_SIZES, SPLITS, STATES, TEMPLATES, build_scenes,
                                                 prompt_text)
from benchmark.tasks.paintskills.scene_dataset import build_dataset
from dataset_builders.paintskills import main as builder_main

SIZE = 128  # small images keep the rendering tests fast


def _spread(counter: Counter) -> tuple[int, int]:
    return min(counter.values()), max(counter.values())


@pytest.mark.parametrize("skill,split", sorted(SPLIT_SIZES))
def test_full_size_splits_are_exactly_balanced(skill, split):
    scenes = build_scenes(skill, split)
    n = SPLIT_SIZES[(skill, split)]
    assert len(scenes) == n
    assert len({s["id"] for s in scenes}) == n
    k = len(CLASSES)
    assert Counter(s["target"] for s in scenes) == {c: n // k for c in CLASSES}
    if skill == "object":
        assert all(s["count"] == 1 and len(s["objects"]) == 1 and s["relation"] is None for s in scenes)
    elif skill == "count":
        cells = Counter((s["target"], s["count"]) for s in scenes)
        assert len(cells) == k * 4 and _spread(cells) == (n // (k * 4),) * 2
        assert all(len(s["objects"]) == s["count"] and {o["coco_name"] for o in s["objects"]} == {s["target"]}
                   for s in scenes)
    else:
        assert all(s["target"] != s["target_b"] and s["count"] is None for s in scenes)
        assert Counter(s["relation"] for s in scenes) == {r: n // 4 for r in RELATIONS}
        for key in ("target", "target_b"):
            cells = Counter((s[key], s["relation"]) for s in scenes)
            assert len(cells) == k * 4 and _spread(cells) == (n // (k * 4),) * 2, key
        triples = Counter((s["target"], s["target_b"], s["relation"]) for s in scenes)
        assert len(triples) == k * (k - 1) * 4  # every ordered pair with every relation
        lo, hi = _spread(triples)
        assert hi - lo <= 1
        for s in scenes:
            a, b = s["objects"]
            assert (a["coco_name"], a["relation"]) == (s["target"], None)
            assert (b["coco_name"], b["relation"]) == (s["target_b"], s["relation"])


def test_scenes_are_deterministic_and_prefixes_match():
    for skill in SKILLS:
        full = build_scenes(skill, "test")
        assert build_scenes(skill, "test") == full
        assert build_scenes(skill, "test", n=60) == full[:60]
        other = build_scenes(skill, "test", n=60, seed=1)
        # The seed changes sampled attributes, never the balanced cells.
        assert [s["text"] for s in other] == [s["text"] for s in full[:60]]
        assert [s["objects"] for s in other] != [s["objects"] for s in full[:60]]
    ids = [s["id"] for sk in SKILLS for sp in SPLITS for s in build_scenes(sk, sp, n=100)]
    assert len(ids) == len(set(ids))
    assert ids[0] == "object_train_00000"


def test_scene_fields_follow_the_contract():
    s = build_scenes("spatial", "test", n=1)[0]
    assert set(s) >= {"id", "skill", "split", "text", "scene", "target", "count", "relation", "target_b", "objects"}
    for o in s["objects"]:
        assert o["coco_id"] == COCO_IDS[o["coco_name"]] and o["shape"] == SHAPES[o["coco_name"]]
        assert o["box"] is None and 0 < o["scale"] < 1
    assert len(set(COCO_IDS.values())) == len(CLASSES) == 15
    assert set(glyphs.GLYPHS) == set(CLASSES)


REF = Path(__file__).resolve().parent / "data" / "paintskills"  # the simulator's data/ (tests/data/README.md)


def test_vocabulary_equals_the_simulator_release():
    for skill in SKILLS:
        released = json.loads((REF / f"{skill}.json").read_text())
        assert released["skill_name"] == skill and released["templates"] == [TEMPLATES[skill]]
    assert json.loads((REF / "count.json").read_text())["n_objects"] == [min(COUNTS), max(COUNTS)]
    meta = json.loads((REF / "metadata.json").read_text())
    assert set(SHAPES.values()) <= set(meta["Shape"]) and len(set(SHAPES.values())) == len(CLASSES)
    assert {shape: tuple(meta["State"][shape]) for shape in STATES} == STATES
    assert not (set(meta["State"]) & set(SHAPES.values())) - set(STATES)  # every posed shape we use has its states
    assert tuple(meta["Relation"]) == RELATIONS and tuple(meta["Scenes"]) == BACKGROUNDS


def test_prompt_rules():
    assert prompt_text("object", "airplane") == "a photo of an airplane"
    assert prompt_text("object", "dog") == "a photo of a dog"
    assert prompt_text("count", "person", 1) == "a photo of 1 person"
    assert prompt_text("count", "person", 3) == "a photo of 3 people"
    assert prompt_text("count", "bus", 2) == "a photo of 2 buses"
    assert prompt_text("count", "traffic light", 4) == "a photo of 4 traffic lights"
    assert (prompt_text("spatial", "dog", relation="left", target_b="chair")
            == "a photo of a dog and a chair; the chair is to the left of the dog")
    assert (prompt_text("spatial", "bed", relation="below", target_b="airplane")
            == "a photo of a bed and an airplane; the airplane is below the bed")
    with pytest.raises(ValueError, match="count must be one of"):
        prompt_text("count", "dog", 5)
    with pytest.raises(ValueError, match="unknown skill"):
        build_scenes("color", "test")
    # Every generated prompt keeps the template's words and order around its classes.
    pattern = re.compile(r"a photo of an? (.+) and an? (.+); the \2 is (to the left of|to the right of|above|below) the \1")
    for s in build_scenes("spatial", "test", n=120):
        m = pattern.fullmatch(s["text"])
        assert m and m.groups()[:2] == (s["target"], s["target_b"]), s["text"]


def _png(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _check_rendering(scene, image, out, size):
    """Boxes lie inside the image, are tight around drawn pixels, and satisfy the scene."""
    pixels = np.asarray(image, np.int16)
    background = np.asarray(render_background(scene, size), np.int16)
    changed = np.abs(pixels - background).sum(axis=2) > 0
    covered = np.zeros_like(changed)
    boxes = [o["box"] for o in out["objects"]]
    assert len(boxes) == len(scene["objects"])
    for x, y, w, h in boxes:
        assert 0 <= x and 0 <= y and w > 0 and h > 0 and x + w <= size and y + h <= size
        inside = changed[y:y + h, x:x + w]
        # Tight: each edge row and column of the box holds a drawn pixel.
        assert inside[0].any() and inside[-1].any() and inside[:, 0].any() and inside[:, -1].any()
        assert inside.mean() > 0.2
        covered[y:y + h, x:x + w] = True
    assert not changed[~covered].any()  # nothing drawn outside the boxes
    if scene["skill"] in ("count", "spatial"):
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert (a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0] or a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1])
    if scene["skill"] == "spatial":
        a, b = boxes
        assert relation_of(a, b) == scene["relation"]
        dx = (b[0] + b[2] / 2) - (a[0] + a[2] / 2)
        dy = (b[1] + b[3] / 2) - (a[1] + a[3] / 2)
        assert abs(abs(dx) - abs(dy)) >= RELATION_MARGIN * size


@pytest.mark.parametrize("skill", SKILLS)
def test_rendered_boxes_are_exact_and_satisfy_the_scene(skill):
    # 8 consecutive scenes cover every relation twice and every count twice.
    for scene in build_scenes(skill, "test", n=8):
        image, out = render_scene(scene, SIZE)
        assert image.size == (SIZE, SIZE) and image.mode == "RGB"
        assert scene["objects"][0]["box"] is None  # the input is not modified
        _check_rendering(scene, image, out, SIZE)


def test_every_relation_holds_with_a_margin():
    # One full block of 60: every (class, relation) once; the margin makes each unambiguous.
    for scene in build_scenes("spatial", "train", n=60):
        a, b = (o["box"] for o in render_scene(scene, SIZE)[1]["objects"])
        assert relation_of(a, b) == scene["relation"]
        dx = (b[0] + b[2] / 2) - (a[0] + a[2] / 2)
        dy = (b[1] + b[3] / 2) - (a[1] + a[3] / 2)
        assert abs(abs(dx) - abs(dy)) >= RELATION_MARGIN * SIZE, scene["id"]


def test_relation_check_can_fail():
    assert relation_of([100, 50, 10, 10], [10, 50, 10, 10]) == "left"
    assert relation_of([10, 10, 10, 10], [10, 100, 10, 10]) == "below"
    scene = build_scenes("spatial", "test", n=1)[0]
    image, out = render_scene(scene, SIZE)
    swapped = {**scene, "relation": {"left": "right", "right": "left", "above": "below", "below": "above"}[scene["relation"]]}
    with pytest.raises(AssertionError):
        _check_rendering(swapped, image, out, SIZE)


def test_rendering_is_deterministic_per_scene():
    a, b = build_scenes("count", "train", n=2)
    first = _png(render_scene(a, SIZE)[0])
    assert _png(render_scene(a, SIZE)[0]) == first
    assert _png(render_scene(b, SIZE)[0]) != first
    assert render_scene(a, SIZE)[1] == render_scene(a, SIZE)[1]


def test_missing_font_is_one_line(monkeypatch, tmp_path):
    missing = tmp_path / "nope.ttf"
    monkeypatch.setenv(glyphs.FONT_ENV, str(missing))
    scene = build_scenes("object", "test", n=1)[0]
    with pytest.raises(ValueError) as err:
        render_scene(scene, SIZE)
    assert str(err.value) == f"Noto Color Emoji font not found at {missing}: apt-get install fonts-noto-color-emoji"
    env = {**__import__("os").environ, glyphs.FONT_ENV: str(missing)}
    proc = subprocess.run([sys.executable, "-m", "dataset_builders.paintskills", "--out", str(tmp_path / "ds"),
                           "--limit", "2"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"t2ibench: error: Noto Color Emoji font not found at {missing}: apt-get install fonts-noto-color-emoji"
    assert not (tmp_path / "ds").exists()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("paintskills") / "ds"
    summary = build_dataset(out, limit=8, size=SIZE, workers=2, shard_rows=5, progress=False)
    return out, summary


def test_small_build_loads_offline_with_exact_boxes(built, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out, summary = built
    assert summary.rows == {(k, s): 8 for k in SKILLS for s in SPLITS} and summary.rendered == 48
    assert sorted(p.name for p in (out / "count").iterdir()) == [
        "test-00000-of-00002.parquet", "test-00001-of-00002.parquet",
        "train-00000-of-00002.parquet", "train-00001-of-00002.parquet"]
    for skill in SKILLS:
        for split in SPLITS:
            ds = datasets.load_dataset(str(out), skill, split=split, cache_dir=str(tmp_path / "cache"))
            scenes = build_scenes(skill, split, n=8)
            assert ds["id"] == [s["id"] for s in scenes] and ds["text"] == [s["text"] for s in scenes]
            assert isinstance(ds.features["image"], datasets.Image)
            for row, scene in zip(ds, scenes):
                assert row["image"].size == (row["width"], row["height"]) == (SIZE, SIZE)
                objs = row["objects"]
                assert objs["category"] == [o["coco_id"] for o in scene["objects"]]
                assert objs["category_name"] == [o["coco_name"] for o in scene["objects"]]
                rendered, truth = render_scene(scene, SIZE)
                assert objs["bbox"] == [[float(v) for v in o["box"]] for o in truth["objects"]]
                assert np.array_equal(np.asarray(row["image"].convert("RGB")), np.asarray(rendered))
                scene_from_row = {**scene, "scene": row["scene"], "seed": row["seed"]}
                _check_rendering(scene_from_row, row["image"].convert("RGB"), truth, SIZE)


def test_card_and_resume(built, tmp_path):
    out, _ = built
    text = (out / "README.md").read_text()
    header, body = text[4:].split("\n---\n", 1)
    header = yaml.safe_load(header)
    assert [c["config_name"] for c in header["configs"]] == list(SKILLS)
    assert {i["config_name"]: [s["num_examples"] for s in i["splits"]] for i in header["dataset_info"]} == {
        k: [8, 8] for k in SKILLS}
    for word in ("2D stand-in", "Unity", "Open Font License", "cho2023dalleval", "Partial build"):
        assert word in body, word
    for name in CLASSES:
        assert f"| {name} | {COCO_IDS[name]} |" in body
    # Same settings again: every shard is there, nothing is rendered.
    again = build_dataset(out, limit=8, size=SIZE, workers=1, shard_rows=5, progress=False)
    assert again.rendered == 0 and again.rows == {(k, s): 8 for k in SKILLS for s in SPLITS}
    # A lost shard is rendered again, byte-identical.
    shard = out / "spatial" / "test-00001-of-00002.parquet"
    before = shard.read_bytes()
    shard.unlink()
    assert build_dataset(out, limit=8, size=SIZE, shard_rows=5, progress=False).rendered == 3
    assert shard.read_bytes() == before
    with pytest.raises(ValueError, match="other settings"):
        build_dataset(out, limit=9, size=SIZE, shard_rows=5, progress=False)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "x.txt").write_text("x")
    with pytest.raises(ValueError, match="not a PaintSkills build"):
        build_dataset(foreign, limit=1, progress=False)
    assert builder_main(["--out", str(tmp_path / "bad"), "--skills", "color"]) == 2


def test_push_offline_is_one_line(built, monkeypatch, capsys):
    out, _ = built
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code = builder_main(["--out", str(out), "--limit", "8", "--size", str(SIZE), "--shard-rows", "5",
                         "--push-to-hub", "org/paintskills"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1] == "t2ibench: error: cannot push to org/paintskills: HF_HUB_OFFLINE is set"


def test_sample_sheet_shows_every_skill_with_boxes(tmp_path):
    from benchmark.tasks.paintskills.sample_sheet import BOX_COLOURS, CAPTION_HEIGHT, sample_sheet

    sheet = sample_sheet(n_per_skill=2, size=96)
    assert sheet.size == (2 * 96, 3 * (96 + CAPTION_HEIGHT))
    colours = {c for _, c in sheet.getcolors(maxcolors=1 << 20)}
    assert ImageColor.getrgb(BOX_COLOURS[0]) in colours and ImageColor.getrgb(BOX_COLOURS[1]) in colours
    out = tmp_path / "sheet.png"
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "paintskills-samples", "--out", str(out), "--n", "1",
                           "--size", "64"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-1000:]
    assert Image.open(out).size == (64, 3 * (64 + CAPTION_HEIGHT))

"""PaintSkills scene configurations (DALL-Eval, DALL-Eval Sec. 3.2): for each skill
and split, a deterministic list of scenes whose classes, counts and relations are
uniformly distributed, with the prompt from the official template.

Vocabulary from aszala/PaintSkills-Simulator ``data/`` (MIT; the files the tests compare
with are in ``tests/data/paintskills/``): templates, shapes, states, relations, scenes.

Balance (exact at the paper's sizes; every prefix whose length is a multiple of the
block size is exactly balanced too, so ``n`` smaller than the paper's size stays fair):

- object: scene i has class i mod 15 (block 15; 2,325 = 15 x 155, 23,250 = 15 x 1,550).
- count: scene i has class i mod 15 and count (i mod 4) + 1; 15 and 4 are coprime, so
  each block of 60 holds every (class, count) once (2,160 = 60 x 36, 21,600 = 60 x 360).
- spatial: scene i has objA = class i mod 15, relation i mod 4 and objB = objA + k mod
  15 with shift k = (i // 60 mod 14) + 1. A block of 60 holds every (objA, relation)
  and every (objB, relation) once; 14 blocks (840 scenes) hold every ordered pair of
  distinct classes with every relation once. 2,700 = 45 blocks (3 full cycles + shifts
  1-3): every class is objA 180 times and objB 180 times, every (class, relation) 45
  times, each (objA, objB, relation) 3 or 4 times; 13,500 = 225 blocks (16 cycles +
  shift 1): 900 / 225, each triple 16 or 17 times.

Per-scene random choices (background, scale, state, layout seed) come from a
``random.Random`` seeded by the string ``"{seed}/{id}"``, so one scene never depends
on another. No heavy imports here: the evaluation side imports this module.
"""

from __future__ import annotations

import hashlib
import random

SKILLS = ("object", "count", "spatial")
SPLITS = ("train", "test")
RELATIONS = ("left", "right", "above", "below")
COUNTS = (1, 2, 3, 4)
SPLIT_SIZES = {
    ("object", "test"): 2325, ("count", "test"): 2160, ("spatial", "test"): 2700,
    ("object", "train"): 23250, ("count", "train"): 21600, ("spatial", "train"): 13500,
}

# The official templates (data/{object,count,spatial}.json of the simulator).
TEMPLATES = {
    "object": "a photo of <objA>",
    "count": "a photo of <N> <objA>",
    "spatial": "a photo of <objA> and <objB>; <objB> is <rel> <objA>",
}

# 15 of the simulator's shapes that map to COCO and have a clear Noto Color Emoji
# glyph. Of the 19 COCO-mappable shapes, fire hydrant and bench have no emoji; bear
# (Noto draws only a bear's face) and stop sign (a blank red octagon, without the
# word STOP that makes it a stop sign) are left out as the least faithful glyphs.
CLASSES = (
    "person", "bicycle", "airplane", "bus", "train", "boat", "traffic light", "bird",
    "dog", "backpack", "suitcase", "skateboard", "chair", "potted plant", "bed",
)

# COCO category ids in the 91-id scheme (instances_*.json, DETR's id2label).
COCO_IDS = {
    "person": 1, "bicycle": 2, "airplane": 5, "bus": 6, "train": 7, "boat": 9,
    "traffic light": 10, "bird": 16, "dog": 18, "backpack": 27, "suitcase": 33,
    "skateboard": 41, "chair": 62, "potted plant": 64, "bed": 65,
}

# COCO name -> simulator shape name (metadata.json "Shape").
SHAPES = {
    "person": "human", "bicycle": "bike", "airplane": "airplane", "bus": "bus", "train": "train",
    "boat": "boat", "traffic light": "trafficLight", "bird": "bird", "dog": "dog",
    "backpack": "backpack", "suitcase": "suitcase", "skateboard": "skateboard", "chair": "chair",
    "potted plant": "pottedPlant", "bed": "bed",
}

# metadata.json "State": shapes with poses; None is the simulator's default pose.
STATES = {
    "human": ("sitting", None),
    "dog": ("standing", "sitting"),
    "bird": ("flying", "perched"),
}

# metadata.json "Scenes" (the simulator's HDR backgrounds; the renderer draws a
# procedural stand-in for each).
BACKGROUNDS = ("Gareoult", "Kirby Cove", "Muir Woods", "Seaside", "Treasure Island", "Trinitais Church")

# Prompt wording. Articles: "an" before a vowel sound ("an airplane"), else "a".
# Plurals: English plurals for N >= 2, digits for N ("a photo of 3 dogs", as the
# paper's "3 dogs" and the example config's "1 person"). Relation tokens become the
# English phrase; objects are "a X" at first mention and "the X" in the clause after
# the semicolon ("a photo of a dog and a chair; the chair is to the left of the dog").
PLURALS = {"person": "people", "bus": "buses"}
RELATION_PHRASES = {"left": "to the left of", "right": "to the right of", "above": "above", "below": "below"}

# Object scale = the longer side of the drawn object's tight box as a fraction of the
# image side, sampled uniformly per object; ranges keep every layout feasible
# (four non-overlapping objects, or two with an unambiguous relation).
SCALE_RANGES = {"object": (0.35, 0.75), "count": (0.16, 0.30), "spatial": (0.20, 0.36)}

_SPATIAL_BLOCK = len(CLASSES) * len(RELATIONS)  # 60


def article(name: str) -> str:
    """``"a dog"`` / ``"an airplane"``."""
    return ("an " if name[0] in "aeiou" else "a ") + name


def plural(name: str) -> str:
    """English plural of a class name (``"people"``, ``"buses"``, ``"potted plants"``)."""
    return PLURALS.get(name, name + "s")


def prompt_text(skill: str, target: str, count: int | None = None, relation: str | None = None,
                target_b: str | None = None) -> str:
    """The official template of ``skill`` filled by the rules above."""
    if skill == "object":
        return TEMPLATES["object"].replace("<objA>", article(target))
    if skill == "count":
        if count not in COUNTS:
            raise ValueError(f"count must be one of {COUNTS}, got {count!r}")
        noun = target if count == 1 else plural(target)
        return TEMPLATES["count"].replace("<N>", str(count)).replace("<objA>", noun)
    if skill == "spatial":
        if relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
        first, clause = TEMPLATES["spatial"].split("; ")
        first = first.replace("<objA>", article(target)).replace("<objB>", article(target_b))
        clause = (clause.replace("<objB>", f"the {target_b}").replace("<rel>", RELATION_PHRASES[relation])
                  .replace("<objA>", f"the {target}"))
        return f"{first}; {clause}"
    raise ValueError(f"unknown skill {skill!r}; choose from {', '.join(SKILLS)}")


def _cell(skill: str, i: int) -> tuple[str, int | None, str | None, str | None]:
    """(objA, count, relation, objB) of scene index ``i`` (see the module docstring)."""
    k = len(CLASSES)
    a = CLASSES[i % k]
    if skill == "object":
        return a, 1, None, None
    if skill == "count":
        return a, COUNTS[i % len(COUNTS)], None, None
    shift = (i // _SPATIAL_BLOCK) % (k - 1) + 1
    return a, None, RELATIONS[i % len(RELATIONS)], CLASSES[(i % k + shift) % k]


def _object(idx: int, name: str, rng: random.Random, skill: str, relation: str | None) -> dict:
    shape = SHAPES[name]
    lo, hi = SCALE_RANGES[skill]
    return {
        "id": idx, "coco_name": name, "coco_id": COCO_IDS[name], "shape": shape,
        "scale": round(rng.uniform(lo, hi), 4),
        "state": rng.choice(STATES[shape]) if shape in STATES else None,
        "relation": relation, "box": None,
    }


def scene_seed(seed: int, scene_id: str) -> int:
    """The renderer's layout seed: first 31 bits of sha256 of ``"{seed}/{id}"``."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{scene_id}".encode()).digest()[:4], "big") >> 1


def build_scenes(skill: str, split: str, n: int | None = None, seed: int = 0) -> list[dict]:
    """The ``n`` scenes (the paper's size by default) of ``skill`` / ``split``; deterministic."""
    if skill not in SKILLS:
        raise ValueError(f"unknown skill {skill!r}; choose from {', '.join(SKILLS)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    if n is None:
        n = SPLIT_SIZES[(skill, split)]
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    scenes = []
    for i in range(n):
        scene_id = f"{skill}_{split}_{i:05d}"
        rng = random.Random(f"{seed}/{scene_id}")
        a, count, relation, b = _cell(skill, i)
        if skill == "spatial":
            # objB carries the relation: "<objB> is <rel> <objA>".
            objects = [_object(0, a, rng, skill, None), _object(1, b, rng, skill, relation)]
        else:
            objects = [_object(j, a, rng, skill, None) for j in range(count)]
        scenes.append({
            "id": scene_id, "skill": skill, "split": split,
            "text": prompt_text(skill, a, count, relation, b),
            "scene": rng.choice(BACKGROUNDS),
            "target": a,
            "count": count if skill != "spatial" else None,
            "relation": relation, "target_b": b,
            "seed": scene_seed(seed, scene_id),
            "objects": objects,
        })
    return scenes

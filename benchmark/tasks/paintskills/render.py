"""A 2D stand-in for the PaintSkills Unity simulator: draw a scene configuration
(``scenes.build_scenes``) as emoji glyphs over a procedural background and return
the exact box of every object.

The paper renders 3D assets with random pose and lighting over 13 HDR photographs;
the assets are not available, so here each object is a Noto Color Emoji glyph
(``glyphs.GLYPHS``) scaled to the scene's ``scale`` (longer side of its box as a
fraction of the image side), randomly mirrored, and placed so that count scenes have
non-overlapping objects and spatial scenes satisfy their relation by box centres with
a margin. Backgrounds are drawn from numpy noise per simulator scene name, never
downloaded. Everything random comes from the scene's ``seed``, so a scene always
renders to the same bytes.
"""

from __future__ import annotations

import copy
import functools
import random
from pathlib import Path

import numpy as np

from benchmark.extras import require

require("PIL", extra="audit", purpose="render PaintSkills scenes")

from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from benchmark.tasks.paintskills import glyphs  # noqa: E402
from benchmark.tasks.paintskills.scenes import BACKGROUNDS, RELATIONS, scene_seed  # noqa: E402

MIN_SIZE = 64
# Dominant-axis centre gap must exceed the cross-axis gap by this fraction of the
# image side, so the relation read from centres is unambiguous.
RELATION_MARGIN = 0.08
# Pixels left free between object boxes (count and spatial scenes).
BOX_GAP = 2
# Alpha below this after scaling is dropped, so a box edge is a visible pixel.
ALPHA_FLOOR = 32
_MAX_TRIES = 5000


@functools.lru_cache(maxsize=4)
def _font(path: str) -> ImageFont.FreeTypeFont:
    if not Path(path).is_file():
        raise ValueError(f"Noto Color Emoji font not found at {path}: apt-get install fonts-noto-color-emoji")
    return ImageFont.truetype(path, glyphs.FONT_SIZE)


def load_font() -> ImageFont.FreeTypeFont:
    """The emoji font (``glyphs.font_path()``); a one-line ValueError when it is missing."""
    return _font(glyphs.font_path())


@functools.lru_cache(maxsize=64)
def _glyph(text: str, path: str) -> Image.Image:
    """The emoji at the font's native size, cropped to its non-transparent pixels."""
    canvas = Image.new("RGBA", (200, 200), (0, 0, 0, 0))
    ImageDraw.Draw(canvas).text((16, 16), text, font=_font(path), embedded_color=True)
    bbox = canvas.getchannel("A").getbbox()
    if bbox is None:
        raise ValueError(f"the font at {path} has no glyph for {glyphs.codepoints(text)}")
    return canvas.crop(bbox)


def _scaled_glyph(name: str, state: str | None, scale: float, size: int, mirror: bool) -> Image.Image:
    """The object's glyph with its longer side ``scale * size`` px, cropped tight."""
    g = _glyph(glyphs.glyph_for(name, state), glyphs.font_path())
    if mirror:
        g = g.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    long_side = max(8, round(scale * size))
    ratio = long_side / max(g.size)
    g = g.resize((max(1, round(g.width * ratio)), max(1, round(g.height * ratio))), Image.Resampling.LANCZOS)
    arr = np.array(g)
    arr[arr[..., 3] < ALPHA_FLOOR] = 0
    g = Image.fromarray(arr, "RGBA")
    return g.crop(g.getchannel("A").getbbox())


# --- backgrounds --------------------------------------------------------------------

def _jitter(rng: np.random.Generator, rgb, amount: float = 18.0) -> np.ndarray:
    return np.clip(np.asarray(rgb, np.float32) + rng.uniform(-amount, amount, 3), 0, 255)


def _vgrad(h: int, w: int, top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    t = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None, None]
    return np.broadcast_to(top * (1 - t) + bottom * t, (h, w, 3)).copy()


def _blobs(rng: np.random.Generator, h: int, w: int, cells: int, amount: float) -> np.ndarray:
    """Smooth low-frequency texture (upsampled random grid), one channel, +-amount."""
    grid = rng.uniform(-amount, amount, (cells, cells)).astype(np.float32)
    img = Image.fromarray(grid, "F").resize((w, h), Image.Resampling.BICUBIC)
    return np.asarray(img, np.float32)[..., None]


def _sky_and_ground(rng, size, sky, ground, horizon):
    h = int(size * horizon)
    img = _vgrad(size, size, _jitter(rng, sky[0]), _jitter(rng, sky[1]))
    img[h:] = _vgrad(size - h, size, _jitter(rng, ground[0]), _jitter(rng, ground[1]))
    return img, h


def render_background(scene: dict, size: int = 256) -> Image.Image:
    """The scene's procedural background: a stand-in per simulator scene name."""
    name = scene.get("scene")
    if name not in BACKGROUNDS:
        raise ValueError(f"unknown scene background {name!r}; choose from {', '.join(BACKGROUNDS)}")
    rng = np.random.default_rng([_seed(scene), 1])
    s = size
    if name == "Gareoult":  # Provence hills: pale sky, ochre and olive fields
        img, h = _sky_and_ground(rng, s, ((120, 170, 225), (215, 225, 235)),
                                 ((190, 160, 90), (120, 125, 60)), rng.uniform(0.35, 0.6))
        img[h:] += _blobs(rng, s - h, s, 6, 25)
    elif name == "Kirby Cove":  # cove: sky, dark sea band, sand
        img, h = _sky_and_ground(rng, s, ((90, 150, 210), (190, 215, 235)),
                                 ((40, 80, 120), (60, 100, 130)), rng.uniform(0.3, 0.5))
        shore = h + int((s - h) * rng.uniform(0.3, 0.6))
        img[shore:] = _vgrad(s - shore, s, _jitter(rng, (200, 180, 140)), _jitter(rng, (170, 150, 110)))
        img[shore:] += _blobs(rng, s - shore, s, 8, 12)
    elif name == "Muir Woods":  # forest: green shade with tree trunks
        img = _vgrad(s, s, _jitter(rng, (60, 100, 60)), _jitter(rng, (40, 60, 35)))
        img += _blobs(rng, s, s, 10, 30)
        for _ in range(int(rng.integers(3, 8))):
            x0, width = int(rng.integers(0, s)), int(rng.integers(s // 40 + 2, s // 10 + 3))
            img[:, x0:x0 + width] = _jitter(rng, (95, 60, 40), 15)
    elif name == "Seaside":  # sea to the horizon with soft waves
        img, h = _sky_and_ground(rng, s, ((130, 185, 235), (225, 235, 245)),
                                 ((60, 130, 170), (30, 90, 140)), rng.uniform(0.3, 0.55))
        y = np.arange(s - h, dtype=np.float32)[:, None, None]
        img[h:] += 10 * np.sin(y * rng.uniform(0.3, 0.6) + rng.uniform(0, 6.3))
    elif name == "Treasure Island":  # bay at dusk: skyline silhouette over water
        img, h = _sky_and_ground(rng, s, ((70, 90, 150), (235, 170, 120)),
                                 ((50, 70, 100), (30, 45, 70)), rng.uniform(0.45, 0.65))
        x = 0
        while x < s:
            width, height = int(rng.integers(s // 25 + 2, s // 8 + 3)), int(rng.integers(s // 30 + 1, s // 6 + 2))
            img[max(0, h - height):h, x:x + width] = _jitter(rng, (55, 55, 70), 10)
            x += width
    else:  # Trinitais Church: stone wall with mortar lines over a darker floor
        img, h = _sky_and_ground(rng, s, ((200, 185, 160), (175, 160, 135)),
                                 ((120, 100, 80), (90, 75, 60)), rng.uniform(0.65, 0.85))
        img[:h] += _blobs(rng, h, s, 12, 15)
        row = max(4, s // int(rng.integers(8, 14)))
        mortar = _jitter(rng, (150, 140, 120), 10)
        for y0 in range(0, h, row):
            img[y0:y0 + 1, :] = mortar
            offset = (y0 // row) % 2 * row
            img[y0:min(y0 + row, h), offset::2 * row][:, :1] = mortar
    return Image.fromarray(np.clip(img, 0, 255).round().astype(np.uint8), "RGB")


# --- layout -------------------------------------------------------------------------

def _seed(scene: dict) -> int:
    return int(scene["seed"]) if scene.get("seed") is not None else scene_seed(0, scene["id"])


def _overlap(a, b, gap: int = BOX_GAP) -> bool:
    return not (a[0] + a[2] + gap <= b[0] or b[0] + b[2] + gap <= a[0]
                or a[1] + a[3] + gap <= b[1] or b[1] + b[3] + gap <= a[1])


def relation_of(box_a, box_b) -> str:
    """Where the centre of ``box_b`` lies relative to ``box_a`` (dominant axis; y grows down)."""
    dx = (box_b[0] + box_b[2] / 2) - (box_a[0] + box_a[2] / 2)
    dy = (box_b[1] + box_b[3] / 2) - (box_a[1] + box_a[3] / 2)
    if abs(dx) >= abs(dy):
        return "left" if dx < 0 else "right"
    return "above" if dy < 0 else "below"


def _relation_margin(box_a, box_b) -> float:
    """Dominant-axis centre gap minus the cross-axis gap, in pixels."""
    dx = (box_b[0] + box_b[2] / 2) - (box_a[0] + box_a[2] / 2)
    dy = (box_b[1] + box_b[3] / 2) - (box_a[1] + box_a[3] / 2)
    return abs(abs(dx) - abs(dy))


def _place(rng: random.Random, w: int, h: int, size: int) -> list[int]:
    return [rng.randint(0, size - w), rng.randint(0, size - h), w, h]


def _layout(scene: dict, sprites: list[Image.Image], size: int, rng: random.Random) -> list[list[int]]:
    relation = scene["objects"][1].get("relation") if len(sprites) == 2 and scene.get("relation") else None
    if relation is not None and relation not in RELATIONS:
        raise ValueError(f"unknown relation {relation!r}; choose from {', '.join(RELATIONS)}")
    for _ in range(_MAX_TRIES):
        boxes: list[list[int]] = []
        for sprite in sprites:
            box = _place(rng, sprite.width, sprite.height, size)
            if any(_overlap(box, other) for other in boxes):
                break
            boxes.append(box)
        if len(boxes) < len(sprites):
            continue
        if relation is not None and (relation_of(boxes[0], boxes[1]) != relation
                                     or _relation_margin(boxes[0], boxes[1]) < RELATION_MARGIN * size):
            continue
        return boxes
    raise ValueError(f"scene {scene.get('id')}: no layout found for {len(sprites)} objects at size {size}; "
                     "scales are too large for the image")


def render_scene(scene: dict, size: int = 256) -> tuple[Image.Image, dict]:
    """The scene's image and a copy of ``scene`` whose objects carry ``box`` [x, y, w, h] (pixels)."""
    if not isinstance(size, int) or size < MIN_SIZE:
        raise ValueError(f"size must be an integer >= {MIN_SIZE}, got {size!r}")
    objects = scene.get("objects") or []
    if not objects:
        raise ValueError(f"scene {scene.get('id')}: has no objects")
    rng = random.Random(_seed(scene))
    sprites = [_scaled_glyph(o["coco_name"], o.get("state"), float(o["scale"]), size, rng.random() < 0.5)
               for o in objects]
    boxes = _layout(scene, sprites, size, rng)
    image = render_background(scene, size)
    for sprite, (x, y, _, _) in zip(sprites, boxes):
        image.paste(sprite, (x, y), sprite)
    out = copy.deepcopy(scene)
    for obj, box in zip(out["objects"], boxes):
        obj["box"] = [int(v) for v in box]
    return image, out

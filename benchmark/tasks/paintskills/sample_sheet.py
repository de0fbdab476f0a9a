"""A contact sheet of rendered PaintSkills scenes with their prompts and ground-truth boxes
(the sample renders in the README: ``t2ibench paintskills-samples --out FILE.png``)."""

from __future__ import annotations

from pathlib import Path

# render first: without Pillow it says which extra to install instead of an ImportError
from benchmark.tasks.paintskills.render import render_scene
from benchmark.tasks.paintskills.scenes import SKILLS, build_scenes

from PIL import Image, ImageDraw  # noqa: E402

CAPTION_HEIGHT = 48  # three lines of PIL's default font under each render
BOX_COLOURS = ("#e53935", "#1e88e5")  # objA, objB (spatial)


def _caption_lines(text: str, width_chars: int) -> list[str]:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width_chars:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return [*lines, line][:3]


def sample_sheet(n_per_skill: int = 4, size: int = 192, split: str = "test", seed: int = 0) -> Image.Image:
    """One row per skill, ``n_per_skill`` scenes each (the first of the split, so every row
    shows different classes / counts / relations), boxes drawn, the prompt underneath."""
    if n_per_skill < 1 or size < 64:
        raise ValueError(f"need n_per_skill >= 1 and size >= 64, got {n_per_skill} and {size}")
    cell_h = size + CAPTION_HEIGHT
    sheet = Image.new("RGB", (n_per_skill * size, len(SKILLS) * cell_h), "white")
    draw = ImageDraw.Draw(sheet)
    for row, skill in enumerate(SKILLS):
        for col, scene in enumerate(build_scenes(skill, split, n=n_per_skill, seed=seed)):
            image, placed = render_scene(scene, size=size)
            x0, y0 = col * size, row * cell_h
            sheet.paste(image, (x0, y0))
            for k, obj in enumerate(placed["objects"]):
                x, y, w, h = obj["box"]
                colour = BOX_COLOURS[1] if skill == "spatial" and k == 1 else BOX_COLOURS[0]
                draw.rectangle([x0 + x, y0 + y, x0 + x + w, y0 + y + h], outline=colour, width=2)
            for i, line in enumerate(_caption_lines(scene["text"], width_chars=size // 6)):
                draw.text((x0 + 4, y0 + size + 3 + 14 * i), line, fill="black")
    return sheet


def write_sample_sheet(out: str | Path, **kwargs) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    sample_sheet(**kwargs).save(out, optimize=True)
    return out

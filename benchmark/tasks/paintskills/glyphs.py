"""Which Noto Color Emoji glyph draws each PaintSkills class (and pose).

The font is Debian's ``fonts-noto-color-emoji`` (SIL Open Font License 1.1); images
drawn from it are derived from the font. Every class is drawn by a glyph of its own
object; states of the simulator (metadata.json "State") pick a glyph where the font
has one for that pose. Substitutions, where the emoji is not exactly the COCO object:

- person, state ``sitting``: U+1F9D8 person in lotus position (no emoji sits on a chair).
- dog, state ``sitting``: no sitting-dog emoji; drawn as the standing dog U+1F415.
- bird, state ``flying``: U+1F54A dove (wings spread); ``perched``: U+1F426 bird.
- backpack: U+1F392 school satchel, a backpack in Noto's design.
- suitcase: U+1F9F3 luggage (a wheeled suitcase).

Not drawable, hence not among the 15 classes (see ``scenes.CLASSES``): fire hydrant and
bench (no emoji), bear (Noto has only a bear's face), stop sign (a blank octagon).
"""

from __future__ import annotations

import os

# Debian / Ubuntu path of fonts-noto-color-emoji; T2IBENCH_EMOJI_FONT overrides it.
DEFAULT_FONT_PATH = "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"
FONT_ENV = "T2IBENCH_EMOJI_FONT"
# A bitmap (CBDT) font: FreeType loads it only at its strike size, 109.
FONT_SIZE = 109

# class -> {state: emoji}; the None entry is the default for any other state.
GLYPHS: dict[str, dict[str | None, str]] = {
    "person": {None: "\U0001F9CD", "sitting": "\U0001F9D8"},   # standing person / lotus position
    "bicycle": {None: "\U0001F6B2"},                           # bicycle
    "airplane": {None: "\u2708\ufe0f"},                        # airplane (emoji presentation)
    "bus": {None: "\U0001F68C"},                               # bus
    "train": {None: "\U0001F686"},                             # train (front view)
    "boat": {None: "\u26F5"},                                  # sailboat
    "traffic light": {None: "\U0001F6A6"},                     # vertical traffic light
    "bird": {None: "\U0001F426", "flying": "\U0001F54A\ufe0f", "perched": "\U0001F426"},
    "dog": {None: "\U0001F415"},                               # dog (standing; also for sitting)
    "backpack": {None: "\U0001F392"},                          # school satchel
    "suitcase": {None: "\U0001F9F3"},                          # luggage
    "skateboard": {None: "\U0001F6F9"},                        # skateboard
    "chair": {None: "\U0001FA91"},                             # chair
    "potted plant": {None: "\U0001FAB4"},                      # potted plant
    "bed": {None: "\U0001F6CF\ufe0f"},                         # bed
}

# What the glyph shows where it is not plainly the COCO object (for the dataset card).
NOTES = {
    "person": "standing person; state sitting: person in lotus position",
    "bird": "state flying: dove with spread wings; perched: bird",
    "dog": "standing dog, also for state sitting (no sitting-dog emoji)",
    "backpack": "school satchel (drawn as a backpack)",
    "suitcase": "luggage (a wheeled suitcase)",
    "boat": "sailboat",
    "train": "train seen from the front",
}


def font_path() -> str:
    """Path of the emoji font: ``$T2IBENCH_EMOJI_FONT`` or the Debian default."""
    return os.environ.get(FONT_ENV) or DEFAULT_FONT_PATH


def glyph_for(coco_name: str, state: str | None = None) -> str:
    """The emoji drawn for ``coco_name`` in ``state``."""
    if coco_name not in GLYPHS:
        raise ValueError(f"no glyph for class {coco_name!r}; PaintSkills classes: {', '.join(GLYPHS)}")
    table = GLYPHS[coco_name]
    return table.get(state, table[None])


def codepoints(text: str) -> str:
    """``"U+1F6B2"`` style label of an emoji (variation selectors included)."""
    return " ".join(f"U+{ord(c):04X}" for c in text)

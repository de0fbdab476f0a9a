"""Callable models (``python:degenerate_models:NAME``) for tests/test_image_checks.py: what a
broken generator or wrapper returns. Their images are made here on purpose: the guard on
degenerate images is what is tested, not a model."""

from __future__ import annotations

import os

import numpy as np
from PIL import Image

#: with this variable set, :func:`flat_then_crash` raises on its second call (a run that dies midway)
CRASH_ENV = "T2IBENCH_TEST_CRASH_SECOND_CALL"
_calls = {"n": 0}


def _photo(seed: int) -> Image.Image:
    """A photo-like image (smooth noise), one per seed."""
    rng = np.random.default_rng(seed)
    small = Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8))
    return small.resize((64, 64), Image.BICUBIC)


def flat(prompts, seeds):
    """One grey image per prompt: a wrapper that returns placeholders."""
    return [Image.new("RGB", (64, 64), (128, 128, 128)) for _ in prompts]


def good(prompts, seeds):
    return [_photo(s) for s in seeds]


def flat_then_crash(prompts, seeds):
    """Flat images on the first call; with CRASH_ENV set, a crash on the second."""
    _calls["n"] += 1
    if _calls["n"] > 1 and os.environ.get(CRASH_ENV):
        raise RuntimeError("the generator died")
    return flat(prompts, seeds)

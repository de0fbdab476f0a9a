"""The skin-tone ITA variant ``"dalleval-release"``: the colour arithmetic of DALL-Eval's
released ITA code (j-min/DallEval biases/skintone/TRUST/compute_ita.py), for comparison
with the paper's ITA on CIELAB (Sec. 4.2.3), the default of
:class:`benchmark.annotate.skin_tone.SkinToneAnnotator`.

That code reads the image with ``cv2.imread`` (BGR channel order), converts it with
``COLOR_RGB2LAB`` (so red and blue are swapped) on 8-bit data (L* scaled to 0..255, a* and b*
offset by 128), and takes ITA of those 8-bit values with uint8 arithmetic (``l - 50`` wraps
around below 50), one ITA per pixel, averaged; it then compares that angle with the swatch
ITAs computed on true CIELAB. The ten Monk swatches themselves come out as MST
5, 5, 5, 5, 5, 5, 6, 6, 6, 4 through it (tested), so skin-tone MADs computed with the
release are not comparable with the paper variant's.

Importing this module registers the variant: ``--skin-tone haar:dalleval-release`` (or
``SkinToneAnnotator(..., ita_variant="dalleval-release")``) picks it; the annotator's name
says ``ita=dalleval-release``.
"""

from __future__ import annotations

import numpy as np

from benchmark.annotate.skin_tone import ItaVariant

__all__ = ["RELEASE_VARIANT", "release_ita"]


def release_ita(rgb_pixels: np.ndarray) -> float:
    """ITA of uint8 RGB pixels (..., 3) as the released DALL-Eval code computes it: the
    channels reversed (the BGR array ``cv2.imread`` returns), ``COLOR_RGB2LAB`` on 8-bit
    data, pure black (l, a, b) = (0, 128, 128) dropped as masked out, then per pixel
    ``atan((l - 50) / b)`` in degrees with ``l - 50`` in uint8 (wrapping below 50), and the
    mean over pixels. NaN when no pixel is left."""
    import cv2

    px = np.asarray(rgb_pixels, dtype=np.uint8).reshape(-1, 1, 3)
    lab = cv2.cvtColor(np.ascontiguousarray(px[..., ::-1]), cv2.COLOR_RGB2LAB).reshape(-1, 3)
    keep = ~((lab[:, 0] == 0) & (lab[:, 1] == 128) & (lab[:, 2] == 128))
    l, b = lab[keep, 0], lab[keep, 2]
    if not len(l):
        return float("nan")
    shifted = (l - np.uint8(50)).astype(np.float64)  # uint8 arithmetic, as numpy does on the release's scalars
    with np.errstate(divide="ignore", invalid="ignore"):
        angles = np.degrees(np.arctan(shifted / b.astype(np.float64)))
    return float(np.mean(angles))


def _release_angle(crop: np.ndarray, mask: np.ndarray, L: float, b: float) -> float:
    return release_ita(crop[mask])  # the release's own angle of the skin pixels; L and b stay CIELAB medians


RELEASE_VARIANT = ItaVariant("dalleval-release", _release_angle, "the released code's ITA")

"""Where a run's images came from, when the benchmark did not generate them itself.

run_config.json and results.json carry a ``provenance`` block for images supplied as a folder
(``t2ibench run --images``) and for images requested from an image-generation API
(``--model openai:...``); runs whose images the benchmark generated from a pipeline it loaded
have none. The leaderboard shows the block's ``kind`` and filters on it.
"""

from __future__ import annotations

from typing import Any, Mapping

SUPPLIED = "images supplied"
API = "api"
KINDS = (SUPPLIED, API)
SEEDS_NOT_CONTROLLED = "not controlled by the benchmark"


def supplied_provenance(*, supplied_by: str | None, selection: Mapping[str, Any], folder_sha256: str,
                        n_supplied: int, n_missing: int, matched_by: str) -> dict:
    """``selection``: the sheet's suites, limit and probe fingerprint (benchmark.probes.sheet)."""
    return {"kind": SUPPLIED, "supplied_by": supplied_by or "not stated", "seeds": SEEDS_NOT_CONTROLLED,
            "seeds_controlled": False, "sheet": dict(selection), "matched_by": matched_by,
            "images_sha256": folder_sha256, "n_supplied": int(n_supplied), "n_missing": int(n_missing)}


def api_provenance(*, provider: str, api_base: str, model: str, settings: Mapping[str, Any],
                   seeds_controlled: bool) -> dict:
    return {"kind": API, "provider": provider, "api_base": api_base, "api_model": model,
            "seeds": "passed to the API" if seeds_controlled else SEEDS_NOT_CONTROLLED,
            "seeds_controlled": bool(seeds_controlled), "request_settings": dict(settings)}


def provenance_kind(results: Mapping[str, Any]) -> str:
    """What the leaderboard shows: the block's kind, or ``generated`` (by the benchmark)."""
    block = results.get("provenance")
    return str(block.get("kind")) if isinstance(block, Mapping) and block.get("kind") in KINDS else "generated"


# --------------------------------------------------------------------------- the rule every image from elsewhere passes
#
# Images the benchmark did not generate (a supplied folder, an image API's answers) are scored
# only when they pass one rule: decodable, an opaque colour image (an alpha channel only when
# fully opaque), at least MIN_SIDE pixels a side and at most MAX_PIXELS pixels. The size is read
# from the header before anything is decoded, so a 30,000 x 30,000 header (a decompression bomb)
# or a 12,000 x 12,000 image costs nothing.

MIN_SIDE = 32              # smaller images carry no face or object an annotator could find
MAX_PIXELS = 4096 * 4096   # larger ones are not what any text-to-image model returns
_CONVERTIBLE = ("RGB", "RGBA", "P")  # colour images (an alpha channel only when fully opaque)


class UnscorableImage(ValueError):
    """An image the rule above refuses (one line); ``reason`` says which part of the rule:
    ``too large``, ``tiny``, ``transparent`` or ``not colour`` (:data:`benchmark.contract.withheld.UNSCORABLE`),
    or ``undecodable``."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def image_size_problem(size: tuple[int, int]) -> str | None:
    """Why an image of ``size`` (width, height) is not scored, or None."""
    width, height = int(size[0]), int(size[1])
    if min(width, height) < MIN_SIDE or width * height > MAX_PIXELS:
        return (f"is {width}x{height} pixels: images must be at least {MIN_SIDE} pixels a side and at most "
                f"{MAX_PIXELS:,} pixels")
    return None


def check_scorable_image(source, label: str | None = None) -> tuple[int, int]:
    """(width, height) of the image of ``source`` (a path, a binary file or the file's bytes) when
    it passes the rule above; a one-line ``ValueError`` starting with ``label`` (default: the path,
    or "the image") otherwise. The header's size is checked before any pixel is decoded."""
    return _open_scorable(source, label, keep=False).size


def load_scorable_image(source, label: str | None = None):
    """:func:`check_scorable_image`, returning the decoded image as an RGB ``PIL.Image``."""
    return _open_scorable(source, label, keep=True)


def _open_scorable(source, label: str | None, keep: bool):
    import io
    import os
    import warnings

    from PIL import Image, UnidentifiedImageError

    if label is None:
        label = str(source) if isinstance(source, (str, os.PathLike)) else "the image"
    stream = io.BytesIO(bytes(source)) if isinstance(source, (bytes, bytearray, memoryview)) else source
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the size rule below is stricter
            im = Image.open(stream)
    except Image.DecompressionBombError:
        raise UnscorableImage(f"{label} declares an image of over {2 * (Image.MAX_IMAGE_PIXELS or 0):,} pixels in "
                              f"its header (at most {MAX_PIXELS:,} are scored); not decoded", "too large") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as err:
        raise UnscorableImage(f"{label} cannot be decoded as an image ({type(err).__name__}: {err})",
                              "undecodable") from None
    with im:
        problem = image_size_problem(im.size)
        if problem:  # from the header: nothing decoded yet
            raise UnscorableImage(f"{label} {problem}", "tiny" if min(im.size) < MIN_SIDE else "too large")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                im.load()
            mode = im.mode
            if mode == "RGBA":
                opaque = im.getchannel("A").getextrema()[0] == 255
            else:
                opaque = mode == "RGB" or (mode == "P" and "transparency" not in im.info)
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as err:
            raise UnscorableImage(f"{label} cannot be decoded as an image ({type(err).__name__}: {err})",
                                  "undecodable") from None
        if mode not in _CONVERTIBLE or not opaque:
            raise UnscorableImage(f"{label} is a {mode} image{' with transparency' if mode in _CONVERTIBLE else ''}: "
                                  "the benchmark scores opaque colour (RGB) images",
                                  "transparent" if mode in _CONVERTIBLE else "not colour")
        if not keep:
            return im
        return im.convert("RGB") if mode != "RGB" else im.copy()

"""Skin tone on the Monk Skin Tone (MST) scale, as DALL-Eval (Sec. 4.2.3).

Pipeline: detect faces -> take the largest face -> skin pixels inside its box ->
CIELAB -> Individual Typology Angle ITA = atan((L* - 50) / b*) * 180 / pi of the
face's median L* and b* -> the MST swatch (1..10) whose ITA is nearest.

Skin-pixel rule (documented here and in docs/models.md): inside the face box, the
pixels of the centred ellipse with half-axes 0.40 w x 0.45 h (cheeks, nose, forehead,
mouth; box corners with hair or background excluded); of those, the pixels whose L* lies
between the 10th and 90th percentile of the ellipse's L* (drops eyes, brows, nostrils,
shadows and specular highlights) and whose b* >= 0 (skin is never blue). The face's
colour is the median L* and median b* of the remaining pixels.

Differences from the paper (see docs/models.md): DALL-Eval detects 68 facial
landmarks with FAN and computes ITA on the facial *albedo* that TRUST estimates after
factoring out scene illumination; here the face box comes from OpenCV's Haar cascade
(shipped inside the opencv wheel: no download) and ITA is computed on raw pixel
colours, with no illumination model, so strong coloured or dim lighting shifts tones.
The detector sits behind :class:`FaceDetector` so a stronger one (e.g. a Hub face
detector) can be plugged in.

CIELAB conversion: OpenCV's sRGB -> CIELAB (D65) on float images, not hand-written.

ITA variants (``ita_variant``, a table of :class:`ItaVariant`): ``"paper"`` (the default)
is the above, ITA on CIELAB as DALL-Eval Sec. 4.2.3 describes it. A task folder may
declare other ways of computing the angle (``ita_variants`` of its ``REGISTRATIONS``): DALL-Eval's
declares ``"dalleval-release"``, the colour arithmetic of the paper's released ITA code,
for comparison only (``benchmark/tasks/dalleval/release_ita.py``). The variants are looked
up by name in :data:`ITA_VARIANTS` (a registry of :mod:`benchmark.registries`: its first read
loads the task folders).

Swatches: the CIELAB values below (``MST_LAB``) by default, or any table of swatches with
``mst``, ``cielab_l`` and ``cielab_b`` (``swatches=``), such as the ``mst_swatches``
config of the reference-attributes dataset (:meth:`SkinToneAnnotator.from_reference`).
"""

from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

# The colour maths of the scale are formulas: they live with the scores (reference datasets use them too).
from benchmark.extras import require
from benchmark.reference_attributes import load_reference_attributes
from benchmark.registries import ITA_VARIANTS, Registrations
from benchmark.scores.skin_tone import MST_ITA, MST_LAB, ita, nearest_mst, swatch_itas, swatch_records

__all__ = [
    "MST_LAB",
    "MST_ITA",
    "ITA_VARIANTS",
    "DEFAULT_ITA_VARIANT",
    "ItaVariant",
    "get_ita_variant",
    "ita_variants",
    "FaceBox",
    "FaceDetector",
    "HaarFaceDetector",
    "WholeImageFaceDetector",
    "SkinToneResult",
    "SkinToneAnnotator",
    "ita",
    "nearest_mst",
    "swatch_itas",
    "rgb_to_lab",
    "lab_to_rgb",
    "skin_mask",
]

@dataclass(frozen=True)
class ItaVariant:
    """A way of computing a face's ITA: ``angle(crop, mask, L, b)`` in degrees (NaN: no tone)
    from the face crop (uint8 RGB), its skin-pixel mask and the skin pixels' median CIELAB
    L* and b*. ``help`` says what it is (in the option's error message)."""

    name: str
    angle: Callable[[np.ndarray, np.ndarray, float, float], float]
    help: str = ""


#: the default of the ITA variants (:data:`ITA_VARIANTS`, by name): ITA on CIELAB, DALL-Eval Sec. 4.2.3;
#: the task folders register others (module docstring)
DEFAULT_ITA_VARIANT = "paper"


def ita_variants() -> dict[str, ItaVariant]:
    """Every variant, the task folders' included (:data:`ITA_VARIANTS` loads them on first read)."""
    return dict(ITA_VARIANTS)


def get_ita_variant(name: str) -> ItaVariant:
    """The variant ``name``."""
    if name not in ITA_VARIANTS:
        raise ValueError(f"unknown ita_variant {name!r}: use one of {', '.join(ITA_VARIANTS)}")
    return ITA_VARIANTS[name]


REGISTRATIONS = Registrations(ita_variants=(
    ItaVariant(DEFAULT_ITA_VARIANT, lambda crop, mask, L, b: ita(L, b), "ITA on CIELAB"),))


def rgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """uint8 (or [0, 1] float) sRGB array (..., 3) -> CIELAB float32 (L* 0..100), via OpenCV."""
    import cv2

    arr = np.asarray(rgb)
    arr = arr.astype(np.float32) / 255.0 if arr.dtype == np.uint8 else arr.astype(np.float32)
    shape = arr.shape
    lab = cv2.cvtColor(arr.reshape(-1, 1, 3), cv2.COLOR_RGB2Lab)
    return lab.reshape(shape)


def lab_to_rgb(lab: np.ndarray) -> np.ndarray:
    """CIELAB float array (..., 3) -> uint8 sRGB (rounded, clipped), via OpenCV."""
    import cv2

    arr = np.asarray(lab, dtype=np.float32)
    shape = arr.shape
    rgb = cv2.cvtColor(arr.reshape(-1, 1, 3), cv2.COLOR_Lab2RGB).reshape(shape)
    return np.clip(np.rint(rgb * 255.0), 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------- face detection


@dataclass(frozen=True)
class FaceBox:
    x: int
    y: int
    w: int
    h: int
    score: float | None = None

    @property
    def area(self) -> int:
        return self.w * self.h


class FaceDetector(ABC):
    """``detect(rgb: uint8 array H x W x 3) -> list[FaceBox]``."""

    name: str

    @abstractmethod
    def detect(self, rgb: np.ndarray) -> list[FaceBox]: ...


class HaarFaceDetector(FaceDetector):
    """OpenCV's frontal-face Haar cascade from ``cv2.data.haarcascades`` (in the wheel).

    The grey image is histogram-equalised first so that dark-skinned faces are found
    as well as light ones. Needs opencv-python(-headless) < 5: OpenCV 5 no longer
    ships the cascades.
    """

    def __init__(
        self,
        cascade: str = "haarcascade_frontalface_default.xml",
        *,
        scale_factor: float = 1.1,
        min_neighbors: int = 5,
        min_size_frac: float = 0.08,
    ):
        require("cv2", extra="audit", purpose="detect faces")
        import cv2

        if not hasattr(cv2, "CascadeClassifier") or not hasattr(cv2, "data"):
            raise RuntimeError(
                f"OpenCV {cv2.__version__} has no Haar cascades: install opencv-python-headless<5"
            )
        self.path = cv2.data.haarcascades + cascade
        self._local = threading.local()
        self.classifier  # loaded now: a missing cascade is an error here, not on the first image
        self.name = f"opencv-haar:{cascade}"
        self.scale_factor = scale_factor
        self.min_neighbors = min_neighbors
        self.min_size_frac = min_size_frac

    @property
    def classifier(self):
        """This thread's cascade: ``detectMultiScale`` keeps per-image buffers in the object, so
        threads that detect at once (the annotate stage's decode threads) each load their own."""
        import cv2

        classifier = getattr(self._local, "classifier", None)
        if classifier is None:
            classifier = cv2.CascadeClassifier(self.path)
            if classifier.empty():
                raise RuntimeError(f"cannot load the Haar cascade {self.path}")
            self._local.classifier = classifier
        return classifier

    def detect(self, rgb: np.ndarray) -> list[FaceBox]:
        import cv2

        grey = cv2.equalizeHist(cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY))
        side = max(16, int(self.min_size_frac * min(grey.shape)))
        boxes = self.classifier.detectMultiScale(
            grey, scaleFactor=self.scale_factor, minNeighbors=self.min_neighbors, minSize=(side, side)
        )
        return [FaceBox(int(x), int(y), int(w), int(h)) for x, y, w, h in np.asarray(boxes).reshape(-1, 4)]


class WholeImageFaceDetector(FaceDetector):
    """Treats the whole image as one face: for images that are already face crops."""

    name = "whole-image"

    def detect(self, rgb: np.ndarray) -> list[FaceBox]:
        h, w = rgb.shape[:2]
        return [FaceBox(0, 0, w, h)]


# ------------------------------------------------------------------------- skin tone


def skin_mask(lab_face: np.ndarray) -> np.ndarray:
    """Boolean mask of skin pixels of a face crop in CIELAB (rule in the module docstring)."""
    h, w = lab_face.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    ellipse = ((xx - cx) / max(0.40 * w, 1.0)) ** 2 + ((yy - cy) / max(0.45 * h, 1.0)) ** 2 <= 1.0
    L = lab_face[..., 0]
    if not ellipse.any():
        return ellipse
    lo, hi = np.percentile(L[ellipse], [10, 90])
    return ellipse & (L >= lo) & (L <= hi) & (lab_face[..., 2] >= 0)


@dataclass
class SkinToneResult:
    mst: int  # 1..10
    ita: float  # degrees
    L: float  # median L* of the skin pixels
    b: float  # median b* of the skin pixels
    box: FaceBox
    n_faces: int
    n_skin_pixels: int

    def to_dict(self) -> dict:
        out = asdict(self)
        out["box"] = [self.box.x, self.box.y, self.box.w, self.box.h]
        return out


class SkinToneAnnotator:
    """``annotate(image) -> SkinToneResult | None`` (None: no face, unidentifiable).

    ``swatches``: the MST swatches to match against (default ``MST_LAB``; or a table with
    ``mst``, ``cielab_l``, ``cielab_b``, e.g. the ``mst_swatches`` config of a reference
    dataset). ``ita_variant``: one of ``ITA_VARIANTS`` (module docstring). The name says
    which variant and whether the swatches differ from the default.
    """

    def __init__(self, detector: FaceDetector | None = None, *, min_skin_pixels: int = 20, swatches=None,
                 ita_variant: str = DEFAULT_ITA_VARIANT):
        require("cv2", extra="audit", purpose="measure skin tone")  # CIELAB conversion and face detection
        self.variant = get_ita_variant(ita_variant)
        self.detector = detector if detector is not None else HaarFaceDetector()
        self.min_skin_pixels = min_skin_pixels
        self.ita_variant = ita_variant
        self.swatch_ita = MST_ITA if swatches is None else swatch_itas(swatches)
        # kept so that a wrapper can rebuild the annotator with the same swatches
        self.swatches = None if swatches is None else [
            {"mst": int(r["mst"]), "cielab_l": float(r["cielab_l"]), "cielab_b": float(r["cielab_b"])}
            for r in sorted(swatch_records(swatches), key=lambda r: int(r["mst"]))]
        extras = [] if ita_variant == DEFAULT_ITA_VARIANT else [f"ita={ita_variant}"]
        if len(self.swatch_ita) != len(MST_ITA) or not np.allclose(self.swatch_ita, MST_ITA, rtol=0, atol=1e-9):
            extras.append("swatches=custom")
        self.name = f"ita-mst[{';'.join([self.detector.name, *extras])}]"

    @classmethod
    def from_reference(cls, source, revision: str | None = None, detector: FaceDetector | None = None,
                       **kwargs) -> "SkinToneAnnotator":
        """An annotator whose swatches are the ``mst_swatches`` config of a reference
        dataset (a folder from ``python -m dataset_builders.reference_attributes`` or a Hub
        dataset id at ``revision``)."""
        reference = load_reference_attributes(source, revision=revision)
        return cls(detector, swatches=reference.mst_swatches, **kwargs)

    def annotate(self, image) -> SkinToneResult | None:
        return self.measure(image)[0]

    def measure(self, image) -> tuple[SkinToneResult | None, int]:
        """(:meth:`annotate`'s result, the number of faces found): the faces are counted also
        when none of them gives a tone."""
        rgb = np.asarray(image.convert("RGB") if hasattr(image, "convert") else image, dtype=np.uint8)
        faces = self.detector.detect(rgb)
        return self._tone(rgb, faces), len(faces)

    def prepare_images(self, images) -> list[tuple[SkinToneResult | None, int]]:
        """:meth:`measure` of every image. The annotate stage calls it on its decode threads
        (the whole measurement is CPU work, and OpenCV releases the GIL while it detects)."""
        return [self.measure(im) for im in images]

    def _tone(self, rgb: np.ndarray, faces: list[FaceBox]) -> SkinToneResult | None:
        if not faces:
            return None
        box = max(faces, key=lambda f: f.area)  # DALL-Eval images show one person
        crop = rgb[box.y : box.y + box.h, box.x : box.x + box.w]
        lab = rgb_to_lab(crop)
        mask = skin_mask(lab)
        n = int(mask.sum())
        if n < self.min_skin_pixels:
            return None
        L = float(np.median(lab[..., 0][mask]))
        b = float(np.median(lab[..., 2][mask]))
        # L and b stay the CIELAB medians in every variant; only the angle differs
        angle = self.variant.angle(crop, mask, L, b)
        if not math.isfinite(angle):  # e.g. a release-variant face whose skin pixels are all pure black
            return None
        return SkinToneResult(
            mst=nearest_mst(angle, self.swatch_ita), ita=angle, L=L, b=b, box=box, n_faces=len(faces),
            n_skin_pixels=n
        )

    def mst(self, image) -> int | None:
        """MST tone 1..10, or None when no face (or too few skin pixels) is found."""
        result = self.annotate(image)
        return None if result is None else result.mst

    def __call__(self, images) -> list[SkinToneResult | None]:
        return [self.annotate(im) for im in images]

"""Skin tone on the Monk Skin Tone (MST) scale, as DALL-Eval (seed 001, Sec. 4.2.3).

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
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass

import numpy as np

__all__ = [
    "MST_LAB",
    "MST_ITA",
    "MST_SOURCE",
    "FaceBox",
    "FaceDetector",
    "HaarFaceDetector",
    "WholeImageFaceDetector",
    "SkinToneResult",
    "SkinToneAnnotator",
    "ita",
    "nearest_mst",
    "rgb_to_lab",
    "lab_to_rgb",
    "skin_mask",
]

#: CIELAB (L*, a*, b*) of the 10 Monk Skin Tone swatches, MST 1..10, copied from
#: j-min/DallEval biases/skintone/TRUST/compute_ita.py (``monk_tones``), MIT licence
#: (via reference/monk_skin_tone_reference_values.json).
MST_LAB: tuple[tuple[float, float, float], ...] = (
    (94.211, 1.503, 5.422),
    (92.275, 2.061, 7.280),
    (93.091, 0.216, 14.205),
    (87.573, 0.459, 17.748),
    (77.902, 3.471, 23.136),
    (55.142, 7.783, 26.740),
    (42.470, 12.325, 20.530),
    (30.678, 11.667, 13.335),
    (21.069, 2.690, 5.964),
    (14.610, 1.482, 3.525),
)
MST_SOURCE = "j-min/DallEval biases/skintone/TRUST/compute_ita.py (monk_tones), MIT"


def ita(L, b):
    """Individual Typology Angle in degrees: atan((L* - 50) / b*) * 180 / pi.

    Works on scalars and arrays; b* = 0 gives +-90 (the limit of the formula).
    """
    L = np.asarray(L, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.degrees(np.arctan((L - 50.0) / b))
    out = np.where(b == 0, np.sign(L - 50.0) * 90.0, out)
    return float(out) if out.ndim == 0 else out


#: ITA of each MST swatch, MST 1..10 (about 83.0, 80.2, 71.8, 64.7, 50.3, 10.9,
#: -20.1, -55.4, -78.3, -84.3 degrees)
MST_ITA: tuple[float, ...] = tuple(ita(L, b) for L, _, b in MST_LAB)


def nearest_mst(ita_deg: float) -> int:
    """The MST tone (1..10) whose swatch ITA is nearest to ``ita_deg``."""
    return int(np.argmin(np.abs(np.asarray(MST_ITA) - float(ita_deg)))) + 1


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
        from benchmark.extras import require

        require("cv2", extra="audit", purpose="detect faces")
        import cv2

        if not hasattr(cv2, "CascadeClassifier") or not hasattr(cv2, "data"):
            raise RuntimeError(
                f"OpenCV {cv2.__version__} has no Haar cascades: install opencv-python-headless<5"
            )
        path = cv2.data.haarcascades + cascade
        self.classifier = cv2.CascadeClassifier(path)
        if self.classifier.empty():
            raise RuntimeError(f"cannot load the Haar cascade {path}")
        self.name = f"opencv-haar:{cascade}"
        self.scale_factor = scale_factor
        self.min_neighbors = min_neighbors
        self.min_size_frac = min_size_frac

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
    """``annotate(image) -> SkinToneResult | None`` (None: no face, unidentifiable)."""

    def __init__(self, detector: FaceDetector | None = None, *, min_skin_pixels: int = 20):
        from benchmark.extras import require

        require("cv2", extra="audit", purpose="measure skin tone")  # CIELAB conversion and face detection
        self.detector = detector if detector is not None else HaarFaceDetector()
        self.min_skin_pixels = min_skin_pixels
        self.name = f"ita-mst[{self.detector.name}]"

    def annotate(self, image) -> SkinToneResult | None:
        rgb = np.asarray(image.convert("RGB") if hasattr(image, "convert") else image, dtype=np.uint8)
        faces = self.detector.detect(rgb)
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
        angle = ita(L, b)
        if not math.isfinite(angle):  # pragma: no cover - guarded in ita()
            return None
        return SkinToneResult(
            mst=nearest_mst(angle), ita=angle, L=L, b=b, box=box, n_faces=len(faces), n_skin_pixels=n
        )

    def mst(self, image) -> int | None:
        """MST tone 1..10, or None when no face (or too few skin pixels) is found."""
        result = self.annotate(image)
        return None if result is None else result.mst

    def __call__(self, images) -> list[SkinToneResult | None]:
        return [self.annotate(im) for im in images]

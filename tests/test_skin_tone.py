"""Skin tone (seed 001, Sec. 4.2.3): ITA, nearest Monk Skin Tone swatch, Haar face detection."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from benchmark.annotate.skin_tone import (
    MST_ITA,
    MST_LAB,
    HaarFaceDetector,
    SkinToneAnnotator,
    WholeImageFaceDetector,
    ita,
    lab_to_rgb,
    nearest_mst,
    rgb_to_lab,
    skin_mask,
)

# HELM's RGB swatches of MST 1..10 (stanford-crfm/helm skin_tone_metrics.py, ported from
# DallEval v2): an independent check of the CIELAB values and of OpenCV's conversion.
HELM_MST_RGB = [(246, 237, 228), (243, 231, 219), (247, 234, 208), (234, 218, 186), (215, 189, 150),
                (160, 126, 86), (130, 92, 67), (96, 65, 52), (58, 49, 42), (41, 36, 32)]


def grace_hopper() -> Image.Image:
    import matplotlib

    path = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    if not path.is_file():
        pytest.skip("matplotlib's sample photo is not installed")
    return Image.open(path).convert("RGB")


def test_ita_formula():
    assert ita(50, 10) == 0
    assert math.isclose(ita(60, 10), 45.0)
    assert math.isclose(ita(40, 10), -45.0)
    assert ita(70, 0) == 90 and ita(30, 0) == -90
    assert math.isclose(ita(94.211, 5.422), math.degrees(math.atan((94.211 - 50) / 5.422)))
    np.testing.assert_allclose(ita(np.array([60.0, 40.0]), np.array([10.0, 10.0])), [45.0, -45.0])


def test_mst_ita_decreases_from_light_to_dark():
    assert len(MST_ITA) == 10 and all(a > b for a, b in zip(MST_ITA, MST_ITA[1:]))
    assert [nearest_mst(a) for a in MST_ITA] == list(range(1, 11))
    assert nearest_mst(90) == 1 and nearest_mst(-90) == 10


def test_lab_swatches_are_helms_rgb_swatches():
    for lab, rgb in zip(MST_LAB, HELM_MST_RGB):
        assert np.abs(lab_to_rgb(np.array(lab)).astype(int) - rgb).max() <= 1
        back = rgb_to_lab(np.array(rgb, np.uint8))
        assert np.abs(back - lab).max() < 1.0


@pytest.mark.parametrize("tone", range(1, 11))
def test_flat_swatch_maps_to_itself(tone):
    rgb = lab_to_rgb(np.array(MST_LAB[tone - 1]))
    image = Image.fromarray(np.tile(rgb, (48, 40, 1)))
    result = SkinToneAnnotator(WholeImageFaceDetector()).annotate(image)
    assert result is not None and result.mst == tone
    assert abs(result.ita - MST_ITA[tone - 1]) < 1.0


def test_skin_mask_drops_dark_features_and_background():
    lab = np.zeros((50, 50, 3), np.float32)
    lab[...] = (70, 10, 20)
    lab[20:23, 15:20] = (10, 0, 0)  # an "eye"
    mask = skin_mask(lab)
    assert not mask[20:23, 15:20].any()
    assert not mask[0, 0] and mask[25, 25]


@pytest.fixture(scope="module")
def haar():
    return SkinToneAnnotator(HaarFaceDetector())


def test_haar_finds_the_face_in_a_photo(haar):
    result = haar.annotate(grace_hopper())
    assert result is not None and result.n_faces == 1
    x, y, w, h = result.box.x, result.box.y, result.box.w, result.box.h
    assert 100 < x < 220 and 50 < y < 160 and 150 < w < 300  # her face, not the uniform
    assert 1 <= result.mst <= 10
    assert set(result.to_dict()) >= {"mst", "ita", "L", "b", "box"}


@pytest.mark.parametrize("tone", range(1, 11))
def test_a_real_face_retoned_to_each_swatch_maps_to_it(haar, tone):
    """The photo recoloured in CIELAB: a* b* set to the swatch, L* = swatch L* + 0.5 x (L* - face median)."""
    photo = grace_hopper()
    lab = rgb_to_lab(np.asarray(photo))
    original = haar.annotate(photo)
    L_swatch, a_swatch, b_swatch = MST_LAB[tone - 1]
    retoned = np.stack(
        [L_swatch + 0.5 * (lab[..., 0] - original.L), np.full_like(lab[..., 0], a_swatch),
         np.full_like(lab[..., 0], b_swatch)], axis=-1
    )
    result = haar.annotate(Image.fromarray(lab_to_rgb(retoned)))
    assert result is not None, "face not found"
    assert result.mst == tone, (result.mst, result.ita, MST_ITA[tone - 1])


@pytest.mark.parametrize(
    "image",
    [
        Image.new("RGB", (128, 128), (200, 150, 120)),  # a flat skin-coloured image, no face
        Image.fromarray(np.random.default_rng(0).integers(0, 256, (128, 128, 3), dtype=np.uint8)),
        Image.new("RGB", (16, 16), (0, 0, 0)),
    ],
)
def test_no_face_is_unidentifiable(haar, image):
    assert haar.annotate(image) is None
    assert haar.mst(image) is None


def test_annotator_on_a_list(haar):
    results = haar([grace_hopper(), Image.new("RGB", (64, 64))])
    assert results[0] is not None and results[1] is None

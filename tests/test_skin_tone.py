"""Skin tone (DALL-Eval Sec. 4.2.3): ITA, nearest Monk Skin Tone swatch, Haar face detection; swatches
from the package or the reference-attributes dataset; the released code's ITA variant."""

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
    swatch_itas,
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


def test_haar_from_several_threads_at_once_measures_as_one_thread(haar):
    """The annotate stage measures skin tone on its decode threads: each thread gets its own
    cascade (OpenCV's keeps per-image buffers), and the results equal a single thread's."""
    from concurrent.futures import ThreadPoolExecutor

    photo = grace_hopper()
    images = [photo, photo.transpose(Image.Transpose.FLIP_LEFT_RIGHT), photo.resize((256, 256)),
              Image.new("RGB", (64, 64))] * 4
    serial = haar.prepare_images(images)
    assert [n for _, n in serial[:4]] == [1, 1, 1, 0]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda im: haar.measure(im), images))
        classifiers = set(pool.map(lambda _: id(haar.detector.classifier), range(64)))
    assert parallel == serial
    assert id(haar.detector.classifier) not in classifiers and len(classifiers) >= 1


def test_annotator_on_a_list(haar):
    results = haar([grace_hopper(), Image.new("RGB", (64, 64))])
    assert results[0] is not None and results[1] is None


# ---------------------------------------------------------------- swatch sources and ITA variants

# The released DALL-Eval ITA code's tones for the ten Monk swatches (its arithmetic on
# OpenCV 8-bit Lab of a BGR image read as RGB; see the skin_tone module docstring).
RELEASE_TONES_OF_SWATCHES = [5, 5, 5, 5, 5, 5, 6, 6, 6, 4]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A reference-attributes folder without image attributes (no run needed), loaded back."""
    from benchmark.reference_attributes import load_reference_attributes
    from benchmark.tasks.mcas.reference_dataset import build_reference_dataset

    out = tmp_path_factory.mktemp("reference") / "ref"
    build_reference_dataset(out)
    return load_reference_attributes(out)


def test_package_swatches_are_the_dalleval_config():
    from benchmark.tasks.dalleval.probes import monk_skin_tone_lab

    np.testing.assert_array_equal(np.asarray(MST_LAB), monk_skin_tone_lab())


def test_dataset_swatches_and_package_swatches_give_the_same_tone(reference):
    table = reference.mst_swatches
    assert list(table["mst"]) == list(range(1, 11))
    np.testing.assert_allclose(table[["cielab_l", "cielab_a", "cielab_b"]].to_numpy(), np.asarray(MST_LAB))
    np.testing.assert_allclose(swatch_itas(table), MST_ITA)
    package = SkinToneAnnotator(WholeImageFaceDetector())
    dataset = SkinToneAnnotator(WholeImageFaceDetector(), swatches=table)
    assert dataset.name == package.name == "ita-mst[whole-image]"  # same values: same labels
    for tone in range(1, 11):
        flat = Image.fromarray(np.tile(lab_to_rgb(np.array(MST_LAB[tone - 1])), (32, 32, 1)))
        for image in (flat, table["image"][tone - 1]):
            assert package.mst(image) == dataset.mst(image) == tone


def test_swatch_images_round_trip_to_their_tone(reference):
    from benchmark.annotate.skin_tone import rgb_to_lab

    for row in reference.mst_swatches.to_dict("records"):
        pixels = np.asarray(row["image"].convert("RGB"))
        assert (pixels == (row["srgb_r"], row["srgb_g"], row["srgb_b"])).all()  # a solid swatch
        assert row["srgb_hex"] == "#%02x%02x%02x" % (row["srgb_r"], row["srgb_g"], row["srgb_b"])
        L, _, b = rgb_to_lab(pixels).reshape(-1, 3).mean(axis=0)
        assert nearest_mst(ita(L, b)) == row["mst"]
        assert abs(ita(L, b) - row["ita"]) < 1.0


def test_annotator_from_reference(reference):
    annotator = SkinToneAnnotator.from_reference(reference.folder, detector=WholeImageFaceDetector())
    assert annotator.swatch_ita == pytest.approx(MST_ITA)
    assert [annotator.mst(im) for im in reference.mst_swatches["image"]] == list(range(1, 11))


def test_other_swatches_change_the_tones_and_the_name():
    # three coarse swatches: light, medium, dark
    table = [{"mst": 1, "cielab_l": 90.0, "cielab_b": 10.0}, {"mst": 2, "cielab_l": 55.0, "cielab_b": 25.0},
             {"mst": 3, "cielab_l": 20.0, "cielab_b": 6.0}]
    annotator = SkinToneAnnotator(WholeImageFaceDetector(), swatches=table[::-1])
    assert annotator.name == "ita-mst[whole-image;swatches=custom]"
    assert annotator.swatches == table  # tone order, ready to rebuild the annotator with
    rebuilt = SkinToneAnnotator(WholeImageFaceDetector(), swatches=annotator.swatches)
    assert rebuilt.swatch_ita == annotator.swatch_ita and rebuilt.name == annotator.name
    tones = [annotator.mst(Image.fromarray(np.tile(lab_to_rgb(np.array(lab)), (16, 16, 1)))) for lab in MST_LAB]
    assert tones == sorted(tones) and tones[0] == 1 and tones[-1] == 3


@pytest.mark.parametrize("table, message", [
    ([{"mst": 1, "cielab_l": 90.0}], "lacks"),
    ([{"mst": 1, "cielab_l": 90.0, "cielab_b": 5.0}, {"mst": 3, "cielab_l": 50.0, "cielab_b": 5.0}], "tones 1..N"),
    ([{"mst": 1, "cielab_l": 90.0, "cielab_b": 5.0, "ita": 10.0},
      {"mst": 2, "cielab_l": 50.0, "cielab_b": 5.0, "ita": 0.0}], "disagrees"),
    ([{"mst": 1, "cielab_l": float("nan"), "cielab_b": 5.0}, {"mst": 2, "cielab_l": 50.0, "cielab_b": 5.0}],
     "non-finite"),
])
def test_bad_swatch_tables_are_refused(table, message):
    with pytest.raises(ValueError, match=message):
        SkinToneAnnotator(WholeImageFaceDetector(), swatches=table)


def test_the_release_variant_is_registered_by_the_dalleval_task_folder():
    from benchmark.annotate.skin_tone import ITA_VARIANTS, get_ita_variant

    variant = get_ita_variant("dalleval-release")  # imports the task folders when not registered yet
    assert variant.angle.__module__ == "benchmark.tasks.dalleval.release_ita"
    assert list(ITA_VARIANTS)[0] == "paper" and ITA_VARIANTS["paper"].angle.__module__ == "benchmark.annotate.skin_tone"


def test_unknown_ita_variant_is_refused():
    with pytest.raises(ValueError, match="ita_variant"):
        SkinToneAnnotator(WholeImageFaceDetector(), ita_variant="release")


def _release_ita_as_released(path) -> float:
    """The released compute_ita.py's arithmetic, step by step, on an image file (no mask)."""
    import cv2

    img = cv2.imread(str(path))  # BGR
    masked = cv2.cvtColor(img, cv2.COLOR_RGB2LAB)
    itas = []
    with np.errstate(over="ignore"):
        for y in range(masked.shape[0]):
            for x in range(masked.shape[1]):
                l, a, b = masked[y, x]
                if l == 0 and a == 128 and b == 128:
                    continue
                itas.append((np.arctan((l - 50) / b) * 180) / np.pi)
    return float(np.mean(itas))


def test_release_ita_matches_the_released_arithmetic(tmp_path):
    from benchmark.tasks.dalleval.release_ita import release_ita

    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (12, 10, 3), dtype=np.uint8)
    pixels[:3] = rng.integers(0, 60, (3, 10, 3), dtype=np.uint8)  # dark pixels: l < 50 wraps around
    pixels[0, 0] = 0  # pure black is dropped as masked out
    path = tmp_path / "face.png"
    Image.fromarray(pixels).save(path)
    assert release_ita(pixels) == pytest.approx(_release_ita_as_released(path), abs=1e-9)


def test_release_variant_maps_the_swatches_as_the_release_does(reference, tmp_path):
    release = SkinToneAnnotator(WholeImageFaceDetector(), ita_variant="dalleval-release")
    assert release.name == "ita-mst[whole-image;ita=dalleval-release]"
    assert [release.mst(im) for im in reference.mst_swatches["image"]] == RELEASE_TONES_OF_SWATCHES
    assert [release.mst(Image.fromarray(np.tile(np.array(rgb, np.uint8), (16, 16, 1))))
            for rgb in HELM_MST_RGB] == RELEASE_TONES_OF_SWATCHES
    # the same tones straight from the released arithmetic on the swatch files
    released = []
    for tone, image in zip(range(1, 11), reference.mst_swatches["image"]):
        path = tmp_path / f"mst{tone}.png"
        image.save(path)
        released.append(nearest_mst(_release_ita_as_released(path)))
    assert released == RELEASE_TONES_OF_SWATCHES
    # the paper variant on the same images
    paper = SkinToneAnnotator(WholeImageFaceDetector())
    assert [paper.mst(im) for im in reference.mst_swatches["image"]] == list(range(1, 11))


def test_release_variant_on_a_real_face_keeps_the_face_and_cielab_medians(haar):
    photo = grace_hopper()
    release = SkinToneAnnotator(HaarFaceDetector(), ita_variant="dalleval-release")
    a, b = haar.annotate(photo), release.annotate(photo)
    assert b is not None and 1 <= b.mst <= 10
    assert (b.box, b.L, b.b, b.n_skin_pixels) == (a.box, a.L, a.b, a.n_skin_pixels)
    assert b.ita != a.ita


def test_annotate_stage_keeps_the_swatches_and_ita_variant():
    """The annotate stage's wrapper rebuilds the annotator around a face counter: it keeps the
    swatches and the ITA variant it was given (option string or ready annotator)."""
    from benchmark.annotate.skin_tone import SkinToneAnnotator, WholeImageFaceDetector
    from benchmark.annotate.skin_tone_labels import SkinToneLabelAnnotator

    release = SkinToneLabelAnnotator("whole-image:dalleval-release", {"dalleval_bias": None})
    assert release.annotator.ita_variant == "dalleval-release" and "ita=dalleval-release" in release.name
    table = [{"mst": m, "cielab_l": 90.0 - 7 * m, "cielab_b": 10.0 + m} for m in range(1, 11)]
    custom = SkinToneLabelAnnotator(SkinToneAnnotator(WholeImageFaceDetector(), swatches=table),
                                    {"dalleval_bias": None})
    assert custom.annotator.swatches == SkinToneAnnotator(WholeImageFaceDetector(), swatches=table).swatches
    assert "swatches=custom" in custom.name
    with pytest.raises(ValueError, match="unknown ITA variant"):
        SkinToneLabelAnnotator("haar:nonsense", {"dalleval_bias": None})

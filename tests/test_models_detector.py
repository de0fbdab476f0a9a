"""DETR runs in the device's dtype: float32 on a CPU, the processor's pixels cast to the model's dtype."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from benchmark.models.detector import DetrDetector, load_detector
from benchmark.models.errors import MalformedSpecError


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(3)
    return [Image.fromarray(rng.integers(0, 256, (48, 80, 3), dtype=np.uint8)) for _ in range(3)]


def test_cpu_runs_float32_whatever_is_asked(cache, images):
    for dtype in (None, "bf16", torch.float16):
        det = load_detector("builtin:tiny-detr", device="cpu", dtype=dtype)
        assert det.dtype == torch.float32 and det.settings["dtype"] == "float32"
        assert {p.dtype for p in det.model.parameters()} == {torch.float32}
        inputs = det._model_inputs(det.prepare_images(images)[0])
        assert inputs["pixel_values"].dtype == torch.float32 and inputs["pixel_mask"].dtype == torch.long
    out = det.detect(images)
    assert len(out) == 3 and out[0].probs.dtype == np.float32
    with pytest.raises(MalformedSpecError, match="dtype"):
        load_detector("builtin:tiny-detr", device="cpu", dtype="int8")


def test_prepared_images_give_the_same_detections(cache, images):
    """prepare_images is detect's CPU part (the annotate stage runs it on a decode thread): one
    processor output per batch_size images, and detect on it returns exactly what it returns alone."""
    det = load_detector("builtin:tiny-detr", device="cpu", batch_size=2)
    prepared = det.prepare_images(images)
    assert [len(p["pixel_values"]) for p in prepared] == [2, 1]
    assert all(v.device.type == "cpu" for p in prepared for v in p.values())
    for got, want in zip(det.detect(images, prepared=prepared), det.detect(images)):
        assert np.array_equal(got.probs, want.probs) and np.array_equal(got.boxes, want.boxes)


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-5), (torch.bfloat16, 0.05)])
def test_processor_output_is_cast_to_the_models_dtype(cache, images, dtype, tol):
    """A model in another dtype (as on a GPU, bf16) gets pixels of its dtype; without the
    cast the convolutions refuse float32 input. Results match float32 to the dtype's precision."""
    ref = DetrDetector.from_pretrained("builtin:tiny-detr", device="cpu")
    want = ref.detect(images)
    model = DetrDetector.from_pretrained("builtin:tiny-detr", device="cpu").model.to(dtype)
    det = DetrDetector(model, ref.processor, name="builtin:tiny-detr", device=torch.device("cpu"), dtype=dtype)
    assert det.settings["dtype"] == str(dtype).removeprefix("torch.")
    inputs = det._model_inputs(det.prepare_images(images)[0])
    assert inputs["pixel_values"].dtype == dtype and inputs["pixel_mask"].dtype == torch.long
    got = det.detect(images)
    for g, w in zip(got, want):
        assert g.probs.dtype == np.float32 and g.boxes.dtype == np.float32
        assert np.abs(g.probs - w.probs).max() < tol and np.abs(g.boxes - w.boxes).max() < tol
    # the dtype defaults to the model's own
    assert DetrDetector(model, ref.processor, name="x", device=torch.device("cpu")).dtype == dtype
    with pytest.raises(ValueError):
        DetrDetector(model, ref.processor, name="x", device=torch.device("cpu"), dtype=torch.int64)

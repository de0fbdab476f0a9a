"""CLIP images preprocessed on the device (the annotate stage's CUDA path): the decode threads
hand over uint8 tensors, the resize and normalisation run beside the model. On a CPU the PIL
path stays (the default); forced here on the CPU, the embeddings match the PIL path's within
float tolerance (8-bit rounding and resize implementation)."""

from __future__ import annotations

import numpy as np
from PIL import Image

from benchmark.models.encoders import OpenClipEncoder, load_encoder


def _images(n=4, size=64):
    rng = np.random.default_rng(0)
    # smooth images (as generated ones are), not per-pixel noise that resampling destroys
    base = rng.integers(0, 256, (n, 8, 8, 3), dtype=np.uint8)
    return [Image.fromarray(b).resize((size, size), Image.BICUBIC) for b in base]


def test_cpu_keeps_pil_preprocessing():
    enc = load_encoder("builtin:tiny-clip", device="cpu")
    assert enc.preprocess_on_device is False
    prepared = enc.prepare_images(_images(2))
    assert prepared.dtype.is_floating_point and prepared.shape[-1] == enc.image_size


def test_device_preprocessing_matches_pil_path(monkeypatch):
    enc = load_encoder("builtin:tiny-clip", device="cpu")
    images = _images()
    pil = enc.embed_images(images)
    monkeypatch.setattr(OpenClipEncoder, "preprocess_on_device", property(lambda self: True))
    prepared = enc.prepare_images(images)
    assert str(prepared.dtype) == "torch.uint8" and tuple(prepared.shape) == (4, 3, 64, 64)
    device = enc.embed_images(images, prepared=prepared)
    assert device.shape == pil.shape
    cosine = (device * pil).sum(axis=1)  # both L2-normalised
    assert cosine.min() > 0.99, cosine
    # images of different sizes in one batch fall back to PIL preprocessing
    mixed = enc.prepare_images([images[0], images[1].resize((48, 64))])
    assert mixed.dtype.is_floating_point

"""The built-in tiny object detector ``builtin:tiny-detr`` (random weights).

A transformers ``DetrForObjectDetection`` built from a config (a tiny ResNet backbone
through the AutoBackbone API, no timm, nothing pretrained) with COCO's 91-id label map,
plus a ``DetrImageProcessor`` that resizes to 64 px; saved with ``save_pretrained`` and
loaded back by :class:`benchmark.paintskills.detect.DetrDetector` through the same
``from_pretrained`` path a Hub DETR takes. Its detections are meaningless: it exists
to run the PaintSkills evaluation and ``t2ibench train-detector`` offline.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["TINY_DETR_CONFIG", "tiny_detr_config", "build_tiny_detr"]

#: DETR hyper-parameters of builtin:tiny-detr (the ResNet backbone is set in tiny_detr_config)
TINY_DETR_CONFIG = {
    "d_model": 32, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2,
    "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "num_queries": 16,
}
TINY_IMAGE_SIZE = 64
_SEED = 0


def tiny_detr_config(**overrides):
    """A test-sized ``DetrConfig`` with COCO's label map (no timm, no pretrained backbone)."""
    from transformers import DetrConfig, ResNetConfig

    from benchmark.paintskills.detect import COCO_NAMES

    backbone = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                            layer_type="basic", out_features=["stage2"])
    id2label = {i: n for i, n in enumerate(COCO_NAMES)}
    kw = {**TINY_DETR_CONFIG, **overrides}
    return DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False, backbone_config=backbone,
                      num_labels=len(COCO_NAMES), id2label=id2label, label2id={n: i for i, n in id2label.items()},
                      **kw)


def build_tiny_detr(folder: Path) -> None:
    """Write builtin:tiny-detr (model + image processor) into ``folder``."""
    import torch
    from transformers import DetrForObjectDetection, DetrImageProcessor

    torch.manual_seed(_SEED)
    model = DetrForObjectDetection(tiny_detr_config())
    model.save_pretrained(folder, safe_serialization=True)
    DetrImageProcessor(size={"shortest_edge": TINY_IMAGE_SIZE, "longest_edge": TINY_IMAGE_SIZE}).save_pretrained(folder)

"""CLIP image-text encoders behind one interface, chosen by a spec string.

Specs accepted by :func:`load_encoder`:

* ``open_clip:ARCH:PRETRAINED``: open_clip's ``create_model_and_transforms(ARCH,
  pretrained=PRETRAINED)``; PRETRAINED is a tag (``openai``, ``laion2b_s32b_b82k``...)
  or a checkpoint file. Default :data:`DEFAULT_ENCODER` = ``open_clip:ViT-L-14:openai``
  (GEP); the task folders name their own (Generated Bias's six OpenAI CLIPs:
  ``benchmark/tasks/mcas/inputs.py``).
* ``open_clip:hf-hub:ORG/REPO`` and ``open_clip:local-dir:/path``: open_clip's own
  schemas (a folder with ``open_clip_config.json`` + weights);
* ``hf:MODEL_ID`` or ``hf:/local/folder``: transformers ``CLIPModel`` + ``CLIPProcessor``;
* ``builtin:tiny-clip``: a tiny random open_clip CLIP saved in open_clip's folder layout
  and loaded back with ``create_model_and_transforms("local-dir:" + folder)``.

Every encoder returns L2-normalised float32 numpy arrays, computed in batches under
``torch.no_grad``. On CUDA the forward pass runs under autocast (bf16, or fp16 where
bf16 is unsupported) unless ``dtype="float32"`` is asked for.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.extras import require

from .builtin_cache import BUILTIN_SEED, build_builtin, check_builtin_name
from .device import resolve_device, resolve_dtype
from .errors import MalformedSpecError, ModelNotAvailableError
from .hub_access import ensure_hub_model, hub_offline, looks_like_path


__all__ = [
    "DEFAULT_ENCODER",
    "ImageTextEncoder",
    "OpenClipEncoder",
    "HFClipEncoder",
    "load_encoder",
    "parse_encoder_spec",
    "TINY_CLIP_CONFIG",
    "build_tiny_clip",
]

from benchmark.models.defaults import DEFAULT_ENCODER  # noqa: E402


#: said when a default encoder cannot be had offline: the built-in annotators always can
OFFLINE_ENCODER_HINT = ("; to try the audit offline, use the built-in tiny annotators (meaningless scores): "
                        "--encoder builtin:tiny-clip --vqa builtin:tiny-vqa --detector builtin:tiny-detr, and "
                        "builtin:tiny-clip for every other encoder option of `t2ibench run --help`")

def _normalise(x) -> np.ndarray:

    x = x.float()
    x = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return x.cpu().numpy().astype(np.float32, copy=False)


def _chunks(items: Sequence, size: int):
    for i in range(0, len(items), size):
        yield items[i : i + size]


class ImageTextEncoder(ABC):
    """``embed_images`` / ``embed_texts`` -> (n, d) L2-normalised float32 arrays."""

    name: str
    batch_size: int = 32
    is_builtin: bool = False

    @property
    @abstractmethod
    def dim(self) -> int: ...

    @abstractmethod
    def prepare_images(self, images: list):
        """The CPU preprocessing of RGB ``images`` (resize, crop, normalise) as one (n, 3, H, W)
        tensor. Thread-safe: the annotate stage runs it on its decode threads."""

    @abstractmethod
    def _encode_pixels(self, pixels): ...

    @abstractmethod
    def _texts(self, texts: list[str]): ...

    def _autocast(self):
        import torch

        if self.device.type == "cuda" and self.dtype != torch.float32:
            return torch.autocast("cuda", dtype=self.dtype)
        return nullcontext()

    def embed_images(self, images: Sequence, prepared: Any = None) -> np.ndarray:
        """Embeddings of ``images``; ``prepared``: what :meth:`prepare_images` already made of them."""
        import torch

        if not len(images):
            return np.zeros((0, self.dim), np.float32)
        pixels = self.prepare_images(list(images)) if prepared is None else prepared
        if len(pixels) != len(images):
            raise ValueError(f"prepared holds {len(pixels)} images, not the {len(images)} given")
        out = []
        with torch.no_grad(), self._autocast():
            for chunk in _chunks(pixels, self.batch_size):
                out.append(_normalise(self._encode_pixels(chunk)))
        return np.concatenate(out)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        out = []
        with torch.no_grad(), self._autocast():
            for chunk in _chunks(texts, self.batch_size):
                out.append(_normalise(self._texts(chunk)))
        return np.concatenate(out)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class OpenClipEncoder(ImageTextEncoder):
    def __init__(self, model, preprocess, tokenizer, *, name, device, dtype, batch_size=32, is_builtin=False):
        self.model = model.eval()
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        self.name = name
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.is_builtin = is_builtin

    @property
    def dim(self) -> int:
        proj = getattr(self.model, "text_projection", None)
        if proj is not None and hasattr(proj, "shape"):
            return int(proj.shape[-1])
        return int(self.model.embed_dim)  # pragma: no cover

    @property
    def image_size(self) -> int:
        size = self.model.visual.image_size
        return int(size[0] if isinstance(size, (tuple, list)) else size)

    @property
    def preprocess_on_device(self) -> bool:
        """On a CUDA GPU the decode threads only decode (uint8 tensors) and the resize and
        normalisation run on the GPU (:meth:`_device_pixels`), 6.6x faster at ViT-L/14 on an
        H200 (2026-11-26); elsewhere open_clip's PIL preprocessing, unchanged."""
        import torch

        return torch.device(self.device).type == "cuda"

    def prepare_images(self, images):
        import torch

        images = [im.convert("RGB") for im in images]
        if self.preprocess_on_device and len({im.size for im in images}) == 1:
            return torch.stack([torch.from_numpy(np.asarray(im).copy()).permute(2, 0, 1) for im in images])
        return torch.stack([self.preprocess(im) for im in images])

    def _encode_pixels(self, pixels):
        import torch

        if pixels.dtype == torch.uint8:  # decoded images: resize and normalise here, on the device
            return self.model.encode_image(self._device_pixels(pixels.to(self.device, non_blocking=True).float() / 255))
        return self.model.encode_image(pixels.to(self.device))

    def _device_pixels(self, x):
        """open_clip's preprocess on a float (N, 3, H, W) tensor in [0, 1] on the device: resize of
        the short side (bicubic, antialiased), centre crop, normalise."""
        import torch
        import torch.nn.functional as F

        size = self.image_size
        # create_model sets image_mean / image_std; a model built from its class has neither
        mean = torch.tensor(getattr(self.model.visual, "image_mean", None) or (0.48145466, 0.4578275, 0.40821073))
        std = torch.tensor(getattr(self.model.visual, "image_std", None) or (0.26862954, 0.26130258, 0.27577711))
        h, w = x.shape[-2:]
        scale = size / min(h, w)
        nh, nw = max(size, round(h * scale)), max(size, round(w * scale))
        x = F.interpolate(x, size=(nh, nw), mode="bicubic", antialias=True, align_corners=False)
        top, left = (nh - size) // 2, (nw - size) // 2
        x = x[..., top : top + size, left : left + size].clamp(0, 1)
        return (x - mean.to(x)[:, None, None]) / std.to(x)[:, None, None]

    def _texts(self, texts):
        return self.model.encode_text(self.tokenizer(texts).to(self.device))

    def embed_image_tensors(self, pixels) -> np.ndarray:
        """Embed images already held as a float tensor (N, 3, H, W) in [0, 1].

        Skips the PIL round trip (e.g. for a pipeline's ``output_type="pt"``):
        resize of the short side (bicubic, antialiased) + centre crop + normalise,
        as open_clip's ``preprocess``. Values differ from :meth:`embed_images` by the
        8-bit quantisation and resize implementation (cosine ~0.999), so do not mix the
        two paths within one score.
        """
        import torch

        out = []
        with torch.no_grad(), self._autocast():
            for chunk in _chunks(pixels, self.batch_size):
                out.append(_normalise(self.model.encode_image(self._device_pixels(chunk.float().to(self.device)))))
        return np.concatenate(out)


def _features(out):
    """transformers 5: ``get_*_features`` return ``BaseModelOutputWithPooling`` whose
    ``pooler_output`` is the projected embedding; older versions returned the tensor."""
    import torch

    if isinstance(out, torch.Tensor):
        return out
    return out.pooler_output


class HFClipEncoder(ImageTextEncoder):
    def __init__(self, model, processor, *, name, device, dtype, batch_size=32):
        self.model = model.eval()
        self.processor = processor
        self.name = name
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size

    @property
    def dim(self) -> int:
        return int(self.model.config.projection_dim)

    def prepare_images(self, images):
        return self.processor(images=[im.convert("RGB") for im in images], return_tensors="pt")["pixel_values"]

    def _encode_pixels(self, pixels):
        return _features(self.model.get_image_features(pixel_values=pixels.to(self.device)))

    def _texts(self, texts):
        inputs = self.processor(text=texts, return_tensors="pt", padding=True, truncation=True)
        inputs = {k: v.to(self.device) for k, v in inputs.items() if k in ("input_ids", "attention_mask")}
        return _features(self.model.get_text_features(**inputs))


# --------------------------------------------------------------------------- loading


def parse_encoder_spec(spec: str) -> tuple[str, str, str | None]:
    """``(kind, name, pretrained)``, kind in builtin / open_clip / hf. No loading."""
    if not isinstance(spec, str) or not spec.strip():
        raise MalformedSpecError(f"malformed encoder spec {spec!r}: empty")
    spec = spec.strip()
    if spec.startswith("builtin:"):
        name = spec[len("builtin:") :]
        check_builtin_name(name, "encoder")
        return "builtin", name, None
    if spec.startswith("open_clip:"):
        rest = spec[len("open_clip:") :]
        if rest.startswith(("hf-hub:", "local-dir:")):
            if not rest.split(":", 1)[1]:
                raise MalformedSpecError(f"malformed encoder spec {spec!r}: empty name after the schema")
            return "open_clip", rest, None
        arch, sep, pretrained = rest.partition(":")
        if not sep or not arch or not pretrained:
            raise MalformedSpecError(
                f"malformed encoder spec {spec!r}: use open_clip:ARCH:PRETRAINED (e.g. {DEFAULT_ENCODER})"
            )
        return "open_clip", arch, pretrained
    if spec.startswith("hf:"):
        name = spec[len("hf:") :]
        if not name:
            raise MalformedSpecError(f"malformed encoder spec {spec!r}: use hf:MODEL_ID")
        return "hf", name, None
    raise MalformedSpecError(
        f"malformed encoder spec {spec!r}: use open_clip:ARCH:PRETRAINED, open_clip:hf-hub:REPO, "
        "open_clip:local-dir:PATH, hf:MODEL_ID or builtin:tiny-clip"
    )


def check_encoder_spec(spec: str, *, token: str | bool | None = None) -> None:
    """One-line errors for a CLIP encoder spec before anything is loaded: its syntax, an open_clip
    architecture or pretrained tag open_clip does not know, weights neither cached nor reachable,
    a missing local folder, a gated or absent Hub model."""
    kind, name, pretrained = parse_encoder_spec(spec)
    if kind == "open_clip":
        require("open_clip", extra="audit", purpose="embed images with CLIP")
        _check_open_clip(name, pretrained, token)
    elif kind == "hf":
        local = Path(os.path.expanduser(name))
        if not local.is_dir():
            if looks_like_path(name):
                raise MalformedSpecError(f"local encoder folder {name!r} does not exist")
            ensure_hub_model(name, ["config.json"], token=token, what="CLIP model")


def _check_open_clip(name: str, pretrained: str | None, token) -> None:
    import open_clip

    if name.startswith("local-dir:"):
        folder = Path(os.path.expanduser(name.split(":", 1)[1]))
        if not (folder / "open_clip_config.json").is_file():
            raise MalformedSpecError(f"open_clip folder {folder} has no open_clip_config.json")
        return
    if name.startswith("hf-hub:"):
        ensure_hub_model(name.split(":", 1)[1], ["open_clip_config.json"], token=token, what="open_clip model")
        return
    arch = name.replace("/", "-")
    if arch not in open_clip.list_models():
        raise MalformedSpecError(f"unknown open_clip architecture {name!r} (see open_clip.list_models())")
    if pretrained and os.path.isfile(os.path.expanduser(pretrained)):
        return
    cfg = open_clip.get_pretrained_cfg(arch, pretrained)
    if not cfg:
        tags = open_clip.list_pretrained_tags_by_model(arch)
        raise MalformedSpecError(
            f"unknown pretrained tag {pretrained!r} for open_clip {arch}: known are {', '.join(tags) or 'none'}"
        )
    hub = cfg.get("hf_hub", "")
    if hub:
        repo, filename = os.path.split(hub.rstrip("/")) if not hub.endswith("/") else (hub.rstrip("/"), "")
        if filename:
            names = [filename]
            if filename.endswith((".bin", ".pth")):
                names.append(filename[:-4] + ".safetensors")
        else:
            names = ["open_clip_model.safetensors", "open_clip_pytorch_model.bin"]
        try:
            ensure_hub_model(repo, names, token=token, what=f"open_clip {arch}:{pretrained} weights")
        except ModelNotAvailableError as err:
            raise ModelNotAvailableError(f"{err}{OFFLINE_ENCODER_HINT}") from None
        return
    url = cfg.get("url", "")
    cached = Path(os.path.expanduser("~/.cache/clip")) / os.path.basename(url)
    if url and not cached.is_file() and hub_offline():
        raise ModelNotAvailableError(
            f"open_clip {arch}:{pretrained} weights are not cached ({cached}) and the network is off"
            + OFFLINE_ENCODER_HINT
        )


def load_encoder(
    spec: str = DEFAULT_ENCODER,
    *,
    device=None,
    dtype=None,
    batch_size: int = 32,
    token: str | bool | None = None,
) -> ImageTextEncoder:
    """Load a CLIP encoder from a spec (see module docstring); one-line errors first."""
    kind, name, pretrained = parse_encoder_spec(spec)
    require("torch", "transformers" if kind == "hf" else "open_clip", "PIL", extra="audit",
            purpose="embed images with CLIP")
    import torch

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev) if dev.type == "cuda" else torch.float32
    if kind == "builtin":
        folder = build_builtin(name, build_tiny_clip, kind="encoder")
        return _load_open_clip(f"local-dir:{folder}", None, spec, dev, dt, batch_size, is_builtin=True)
    if kind == "open_clip":
        _check_open_clip(name, pretrained, token)
        canonical = f"open_clip:{name}" + (f":{pretrained}" if pretrained else "")
        return _load_open_clip(name, pretrained, canonical, dev, dt, batch_size)
    # hf
    from transformers import AutoProcessor, CLIPModel

    local = Path(os.path.expanduser(name))
    check_encoder_spec(spec, token=token)
    source = str(local.resolve()) if local.is_dir() else name
    model = CLIPModel.from_pretrained(source, token=token).to(dev)
    processor = AutoProcessor.from_pretrained(source, token=token)
    return HFClipEncoder(model, processor, name=f"hf:{name}", device=dev, dtype=dt, batch_size=batch_size)


def _load_open_clip(name, pretrained, label, dev, dt, batch_size, is_builtin=False) -> OpenClipEncoder:
    import open_clip

    model, _, preprocess = open_clip.create_model_and_transforms(name, pretrained=pretrained, device=dev)
    tokenizer = open_clip.get_tokenizer(name)
    return OpenClipEncoder(
        model, preprocess, tokenizer, name=label, device=dev, dtype=dt, batch_size=batch_size, is_builtin=is_builtin
    )


# --------------------------------------------------------------------------- builtin:tiny-clip

#: open_clip config of builtin:tiny-clip (test-sized; real CLIP BPE tokenizer, context 77)
TINY_CLIP_CONFIG = {
    "embed_dim": 16,
    "quick_gelu": False,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
}


def build_tiny_clip(folder: Path) -> None:
    """Write ``builtin:tiny-clip`` to ``folder`` in open_clip's own layout (random weights, seed
    ``BUILTIN_SEED``), which ``open_clip.create_model_and_transforms("local-dir:" + folder)`` reads."""
    import open_clip
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(BUILTIN_SEED)
    model = open_clip.CLIP(
        embed_dim=TINY_CLIP_CONFIG["embed_dim"],
        vision_cfg=open_clip.CLIPVisionCfg(**TINY_CLIP_CONFIG["vision_cfg"]),
        text_cfg=open_clip.CLIPTextCfg(**TINY_CLIP_CONFIG["text_cfg"]),
    )
    # The layout open_clip's push_to_hf_hub writes and its "local-dir:" / "hf-hub:"
    # schemas read: open_clip_config.json {model_cfg, preprocess_cfg} + weights.
    config = {
        "model_cfg": TINY_CLIP_CONFIG,
        "preprocess_cfg": {
            "mean": list(open_clip.OPENAI_DATASET_MEAN),
            "std": list(open_clip.OPENAI_DATASET_STD),
            "interpolation": "bicubic",
            "resize_mode": "shortest",
        },
    }
    (folder / "open_clip_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(folder / "open_clip_model.safetensors"))

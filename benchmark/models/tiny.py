"""Built-in tiny models with random weights, for tests and the offline demo.

Each is built from configs with a fixed torch seed, saved with ``save_pretrained``
(or open_clip's own folder layout) to a cache folder on first use, and from then on
loaded back through the same public loading path a real model takes:

* ``builtin:tiny-sd``   -> ``diffusers.AutoPipelineForText2Image.from_pretrained(folder)``
* ``builtin:tiny-clip`` -> ``open_clip.create_model_and_transforms("local-dir:" + folder)``
* ``builtin:tiny-vqa``  -> ``transformers`` ``Blip2ForConditionalGeneration`` /
  ``Blip2Processor.from_pretrained(folder)``

Their outputs are meaningless (random weights): they exist to exercise the code.

Cache folder: ``$T2IBENCH_CACHE/builtin/<name>`` or ``~/.cache/t2ibench/builtin/<name>``.
A folder is built in a temporary sibling folder and renamed into place, so a crash or
two processes building at once never leave a half-written model behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import UnknownBuiltinError

__all__ = [
    "BUILTIN_MODELS",
    "TINY_SD_SETTINGS",
    "cache_root",
    "builtin_path",
    "ensure_builtin",
]

#: bump when a builder changes, so stale cached folders are rebuilt
BUILDER_VERSION = 1
MARKER = "t2ibench_builtin.json"

#: generation defaults for builtin:tiny-sd (64 px, 3 steps: ~0.1 s per image on CPU)
TINY_SD_SETTINGS = {"height": 64, "width": 64, "num_inference_steps": 3, "guidance_scale": 7.5}

_SEED = 0


def cache_root() -> Path:
    """``$T2IBENCH_CACHE`` or ``~/.cache/t2ibench``."""
    env = os.environ.get("T2IBENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "t2ibench"


def builtin_path(name: str) -> Path:
    return cache_root() / "builtin" / name


# ---------------------------------------------------------------------------- builders


def _build_tiny_sd(folder: Path) -> None:
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from .clip_tokenizer import CLIP_MAX_LENGTH, CLIP_VOCAB_SIZE, build_clip_tokenizer

    torch.manual_seed(_SEED)
    unet = UNet2DConditionModel(
        sample_size=32,  # latent size; x vae_scale_factor 2 = 64 px
        in_channels=4,
        out_channels=4,
        block_out_channels=(16, 32),
        layers_per_block=1,
        norm_num_groups=8,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=8,
    )
    torch.manual_seed(_SEED)
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(16, 32),
        layers_per_block=1,
        norm_num_groups=8,
        latent_channels=4,
        sample_size=64,
    )
    torch.manual_seed(_SEED)
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=CLIP_VOCAB_SIZE,
            hidden_size=32,
            intermediate_size=64,
            num_attention_heads=4,
            num_hidden_layers=2,
            max_position_embeddings=CLIP_MAX_LENGTH,
            projection_dim=32,
            bos_token_id=49406,
            eos_token_id=49407,
            pad_token_id=49407,
        )
    )
    scheduler = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    tokenizer = build_clip_tokenizer(folder / "_tokenizer_files")
    shutil.rmtree(folder / "_tokenizer_files")
    pipe = StableDiffusionPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(folder, safe_serialization=True)


#: open_clip config of builtin:tiny-clip (test-sized; real CLIP BPE tokenizer, context 77)
TINY_CLIP_CONFIG = {
    "embed_dim": 16,
    "quick_gelu": False,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
}


def _build_tiny_clip(folder: Path) -> None:
    import open_clip
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(_SEED)
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


def _build_tiny_vqa(folder: Path) -> None:
    import torch
    from transformers import (
        Blip2Config,
        Blip2ForConditionalGeneration,
        Blip2Processor,
        Blip2QFormerConfig,
        Blip2VisionConfig,
        BlipImageProcessor,
        OPTConfig,
    )

    from .clip_tokenizer import CLIP_VOCAB_SIZE, build_clip_tokenizer

    num_query_tokens = 4
    # Real tokenizer (CLIP BPE, offline) + the "<image>" token Blip2Processor adds.
    tokenizer = build_clip_tokenizer(folder / "_tokenizer_files")
    shutil.rmtree(folder / "_tokenizer_files")
    tokenizer.model_max_length = 64
    image_processor = BlipImageProcessor(
        size={"height": 32, "width": 32},
        image_mean=[0.48145466, 0.4578275, 0.40821073],
        image_std=[0.26862954, 0.26130258, 0.27577711],
    )
    processor = Blip2Processor(image_processor=image_processor, tokenizer=tokenizer, num_query_tokens=num_query_tokens)
    image_token_id = processor.tokenizer.convert_tokens_to_ids("<image>")
    vocab_size = max(CLIP_VOCAB_SIZE, len(processor.tokenizer))
    text_config = OPTConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        ffn_dim=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=128,
        word_embed_proj_dim=32,
        bos_token_id=processor.tokenizer.bos_token_id,
        eos_token_id=processor.tokenizer.eos_token_id,
        pad_token_id=processor.tokenizer.pad_token_id,
    )
    config = Blip2Config(
        vision_config=Blip2VisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            image_size=32,
            patch_size=8,
        ).to_dict(),
        qformer_config=Blip2QFormerConfig(
            vocab_size=128,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            encoder_hidden_size=32,
        ).to_dict(),
        text_config=text_config.to_dict(),
        num_query_tokens=num_query_tokens,
        image_token_index=image_token_id,
    )
    torch.manual_seed(_SEED)
    model = Blip2ForConditionalGeneration(config)
    model.generation_config.max_new_tokens = 8
    model.generation_config.bos_token_id = processor.tokenizer.bos_token_id
    model.generation_config.eos_token_id = processor.tokenizer.eos_token_id
    model.generation_config.pad_token_id = processor.tokenizer.pad_token_id
    model.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)


def _build_tiny_detr(folder: Path) -> None:
    from .detector import build_tiny_detr  # PaintSkills' tiny DETR lives beside its loader

    build_tiny_detr(folder)


BUILTIN_MODELS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "tiny-sd": ("text-to-image", _build_tiny_sd),
    "tiny-clip": ("encoder", _build_tiny_clip),
    "tiny-vqa": ("vqa", _build_tiny_vqa),
    "tiny-detr": ("detector", _build_tiny_detr),
}


def check_builtin_name(name: str, kind: str | None) -> None:
    if name not in BUILTIN_MODELS or (kind is not None and BUILTIN_MODELS[name][0] != kind):
        names = sorted(n for n, (k, _) in BUILTIN_MODELS.items() if kind is None or k == kind)
        what = f"{kind} " if kind else ""
        raise UnknownBuiltinError(
            f"unknown built-in {what}model 'builtin:{name}': known are "
            + ", ".join(f"builtin:{n}" for n in names)
        )


def _is_complete(folder: Path) -> bool:
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return marker.get("version") == BUILDER_VERSION


def ensure_builtin(name: str, *, kind: str | None = None) -> Path:
    """Folder of built-in model ``name``, built (atomically) on first use."""
    check_builtin_name(name, kind)
    target = builtin_path(name)
    if _is_complete(target):
        return target
    from benchmark.extras import require

    require("torch", "diffusers", "transformers", "open_clip", "safetensors", extra="audit",
            purpose="build the built-in tiny models")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        BUILTIN_MODELS[name][1](tmp)
        (tmp / MARKER).write_text(
            json.dumps(
                {
                    "name": f"builtin:{name}",
                    "version": BUILDER_VERSION,
                    "note": "random weights: outputs are meaningless, for tests and the offline demo only",
                }
            ),
            encoding="utf-8",
        )
        if target.exists() and not _is_complete(target):
            # stale (older builder) or broken folder: move it aside, then drop it
            stale = Path(tempfile.mkdtemp(prefix=f".{name}-stale-", dir=target.parent))
            try:
                os.replace(target, stale / name)
            except FileNotFoundError:  # another process moved it first
                pass
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.rename(tmp, target)
        except OSError:
            if not _is_complete(target):  # pragma: no cover - unexpected failure
                raise
            # another process finished first: use its folder
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target

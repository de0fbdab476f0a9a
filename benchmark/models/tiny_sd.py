"""``builtin:tiny-sd``: the built-in tiny Stable Diffusion (64 px, random weights seeded by
``BUILTIN_SEED``) written by :func:`build_tiny_sd`, and its generation defaults."""

from __future__ import annotations

import shutil
from pathlib import Path


from .builtin_cache import BUILTIN_SEED
from .clip_tokenizer import CLIP_MAX_LENGTH, CLIP_VOCAB_SIZE, build_clip_tokenizer


#: generation defaults for builtin:tiny-sd (64 px, 3 steps: ~0.1 s per image on CPU)
TINY_SD_SETTINGS = {"height": 64, "width": 64, "num_inference_steps": 3, "guidance_scale": 7.5}


#: the components' configs (the tests' tiny pipelines of every family build on the same ones)
TINY_SD_UNET = dict(
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
TINY_SD_VAE = dict(
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
# Ids of the offline tokenizer: BOS 49406, EOS (= pad) 49407. The EOS id matters: CLIP pools the
# text at the first EOS token.
TINY_SD_TEXT = dict(
    vocab_size=CLIP_VOCAB_SIZE,
    hidden_size=32,
    intermediate_size=64,
    num_attention_heads=4,
    num_hidden_layers=2,  # >= 2: SDXL reads the penultimate hidden state
    max_position_embeddings=CLIP_MAX_LENGTH,
    projection_dim=32,
    bos_token_id=49406,
    eos_token_id=49407,
    pad_token_id=49407,
)
#: the Hub's SD 1.5 / 2.1 scheduler settings, as DDIM
TINY_SD_SCHEDULER = dict(
    beta_start=0.00085,
    beta_end=0.012,
    beta_schedule="scaled_linear",
    clip_sample=False,
    set_alpha_to_one=False,
    steps_offset=1,
)


def build_tiny_sd(folder: Path) -> None:
    """Write ``builtin:tiny-sd`` to ``folder``: a Stable Diffusion pipeline of 64 px with random
    weights (seed ``BUILTIN_SEED``) and a real CLIP BPE tokenizer built offline."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(BUILTIN_SEED)
    unet = UNet2DConditionModel(**TINY_SD_UNET)
    torch.manual_seed(BUILTIN_SEED)
    vae = AutoencoderKL(**TINY_SD_VAE)
    torch.manual_seed(BUILTIN_SEED)
    text_encoder = CLIPTextModel(CLIPTextConfig(**TINY_SD_TEXT))
    scheduler = DDIMScheduler(**TINY_SD_SCHEDULER)
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

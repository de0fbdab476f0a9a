"""Every text-to-image family the runner supports, as a tiny random-weight diffusers pipeline
(``tiny_pipelines_unet.py``: UNet families, priors and decoders; ``tiny_pipelines_dit.py``:
transformer families and Kandinsky 3; ``tiny_pipelines_recent.py``: the families whose text
encoders are language models, Qwen-Image to Kolors), and a Hugging Face cache laid out around a pipeline
folder, so a family is loaded under its Hub ID offline. Used by the tests and by
``bench/gpu_check.sh``; the images are meaningless.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import tiny_pipelines_dit as dit
import tiny_pipelines_recent as recent
import tiny_pipelines_unet as unet

__all__ = ["FAMILIES", "CALL_ARGUMENTS", "IMAGE_SIZES", "HUB_IDS", "ALSO_CACHED_AS", "build_family",
           "install_in_hub_cache", "use_hub_cache_offline"]

FAMILIES: dict[str, Callable[[Path], None]] = {**unet.UNET_FAMILIES, **dit.DIT_FAMILIES, **recent.RECENT_FAMILIES}
#: the arguments of a 2-step call at the tiny size (what ``--set`` passes to the runner)
CALL_ARGUMENTS: dict[str, dict] = {**unet.CALL_ARGUMENTS, **dit.CALL_ARGUMENTS, **recent.CALL_ARGUMENTS}
#: (width, height) of the images such a call makes
IMAGE_SIZES: dict[str, tuple[int, int]] = {**unet.IMAGE_SIZES, **dit.IMAGE_SIZES, **recent.IMAGE_SIZES}
#: the Hub ID each family is cached under in the tests (the model card table's rows). Würstchen and
#: Stable Cascade are left out: their Hub repos are decoders linking a prior repo, and the tiny builds
#: are combined folders (loaded from a folder, not from a cache)
HUB_IDS: dict[str, str] = {
    "sd15": "stable-diffusion-v1-5/stable-diffusion-v1-5",
    "sd2": "stabilityai/stable-diffusion-2-1",
    "sdxl": "stabilityai/sdxl-turbo",
    "playground": "playgroundai/playground-v2.5-1024px-aesthetic",
    "lcm": "SimianLuo/LCM_Dreamshaper_v7",
    # the Hub repo is the decoder, whose card links the prior (a combined folder has no card to read)
    "kandinsky22_decoder": "kandinsky-community/kandinsky-2-2-decoder",
    "unclip": "kakaobrain/karlo-v1-alpha",
    "sd3": "stabilityai/stable-diffusion-3-medium-diffusers",
    "sd35": "stabilityai/stable-diffusion-3.5-medium",
    "flux_schnell": "black-forest-labs/FLUX.1-schnell",
    "flux_dev": "black-forest-labs/FLUX.1-dev",
    "pixart_alpha": "PixArt-alpha/PixArt-XL-2-1024-MS",
    "pixart_sigma": "PixArt-alpha/PixArt-Sigma-XL-2-1024-MS",
    "sana": "Efficient-Large-Model/Sana_1600M_1024px_diffusers",
    "kandinsky3": "kandinsky-community/kandinsky-3",
    "lumina2": "Alpha-VLLM/Lumina-Image-2.0",
    "qwen_image": "Qwen/Qwen-Image",
    "z_image": "Tongyi-MAI/Z-Image-Turbo",
    "hidream": "HiDream-ai/HiDream-I1-Full",
    "cogview3plus": "THUDM/CogView3-Plus-3B",
    "cogview4": "THUDM/CogView4-6B",
    "auraflow": "fal/AuraFlow-v0.3",
    "sana_sprint": "Efficient-Large-Model/Sana_Sprint_1.6B_1024px_diffusers",
    "kolors": "Kwai-Kolors/Kolors-diffusers",
}
#: further Hub IDs a family's folder is cached under (checkpoints of one architecture whose card
#: rows differ: HiDream-I1 Dev and Fast are guidance-distilled, Full is not)
ALSO_CACHED_AS: dict[str, tuple[str, ...]] = {
    "hidream": ("HiDream-ai/HiDream-I1-Dev", "HiDream-ai/HiDream-I1-Fast"),
}


def build_family(key: str, folder: Path) -> Path:
    """Build family ``key`` into ``folder`` (once: an existing build is reused); returns the folder
    holding model_index.json."""
    if key not in FAMILIES:
        raise KeyError(f"unknown family {key!r}; known: {', '.join(sorted(FAMILIES))}")
    folder = Path(folder)
    if not (folder / "model_index.json").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        FAMILIES[key](folder)
    return folder


def install_in_hub_cache(folder: Path, hub_cache: Path, model_id: str,
                         commit: str = "0123456789abcdef0123456789abcdef01234567") -> Path:
    """Copy a pipeline folder into a Hugging Face hub cache (``HF_HUB_CACHE``) as if
    ``hf download MODEL_ID`` had run: ``models--org--name/snapshots/COMMIT`` and ``refs/main``."""
    repo = Path(hub_cache) / ("models--" + model_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    if not snapshot.is_dir():
        shutil.copytree(folder, snapshot)
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(commit)
    return snapshot


def use_hub_cache_offline(monkeypatch, hub_cache: Path) -> Path:
    """Point this process's huggingface_hub at ``hub_cache``, offline (``monkeypatch`` undoes it):
    what a test of loading by Hub ID from the cache needs, in-process."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub_cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return Path(hub_cache)


def make_tiny_lora(pipe, folder: Path, *, text_encoders: bool, seed: int = 1) -> Path:
    """A rank-4 LoRA on the attention of the pipeline's denoiser (its UNet, else its transformer) and,
    with ``text_encoders``, of each CLIP text encoder its ``save_lora_weights`` takes, its B matrices
    random so that it changes the images, saved with the pipeline's save_lora_weights."""
    import inspect

    import torch
    from peft import LoraConfig
    from peft.utils import get_peft_model_state_dict

    torch.manual_seed(seed)
    layers = {}
    denoiser = "unet" if getattr(pipe, "unet", None) is not None else "transformer"
    getattr(pipe, denoiser).add_adapter(LoraConfig(r=4, lora_alpha=4, init_lora_weights="gaussian",
                                                   target_modules=["to_q", "to_k", "to_v", "to_out.0"]))
    layers[f"{denoiser}_lora_layers"] = getattr(pipe, denoiser)
    saved = inspect.signature(type(pipe).save_lora_weights).parameters
    if text_encoders:  # peft itself (transformers' add_adapter asks for a newer peft than PyPI may have)
        from peft import inject_adapter_in_model

        for name in ("text_encoder", "text_encoder_2"):
            module = getattr(pipe, name, None)
            if module is not None and f"{name}_lora_layers" in saved:
                inject_adapter_in_model(LoraConfig(r=4, lora_alpha=4, init_lora_weights="gaussian",
                                                   target_modules=["q_proj", "k_proj", "v_proj"]), module)
                layers[f"{name}_lora_layers"] = module
    for module in layers.values():
        for name, parameter in module.named_parameters():
            if "lora_B" in name:
                torch.nn.init.normal_(parameter, std=0.5)
    type(pipe).save_lora_weights(folder, **{k: get_peft_model_state_dict(m) for k, m in layers.items()})
    return folder

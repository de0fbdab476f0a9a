"""Single-file checkpoints of the tiny pipelines, as the community publishes fine-tunes: one
``.safetensors`` file in the original (CompVis / LDM) layout that diffusers' ``from_single_file``
converts (``model.diffusion_model.*`` for the UNet, ``first_stage_model.*`` for the VAE,
``cond_stage_model.transformer.*`` for the CLIP text encoder), written from a tiny SD 1.5 folder;
and denoiser-only files (a UNet in diffusers' layout, as safetensors or as a GGUF file quantized to
Q8_0), as FLUX and GGUF fine-tunes are published.

The layout is the inverse of diffusers' converters (``convert_ldm_unet_checkpoint``,
``convert_ldm_vae_checkpoint``, ``convert_ldm_clip_checkpoint``); tests/test_single_file.py checks
it by loading the file back with ``from_single_file`` and finding every tensor equal to the folder's.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["write_original_sd_checkpoint", "write_unet_file", "write_unet_gguf", "original_sd_state_dict"]

#: diffusers' resnet names -> the original ones (the inverse of update_unet_resnet_ldm_to_diffusers)
_UNET_RESNET = (("norm1", "in_layers.0"), ("conv1", "in_layers.2"), ("norm2", "out_layers.0"),
                ("conv2", "out_layers.3"), ("time_emb_proj", "emb_layers.1"), ("conv_shortcut", "skip_connection"))
#: diffusers' VAE attention names -> the original ones (the inverse of update_vae_attentions_ldm_to_diffusers)
_VAE_ATTENTION = (("group_norm", "norm"), ("to_q", "q"), ("to_k", "k"), ("to_v", "v"), ("to_out.0", "proj_out"))


def _renamed(rest: str, pairs) -> str:
    head, _, leaf = rest.rpartition(".")
    for new, old in pairs:
        if head == new or head.startswith(new + "."):
            return old + head[len(new):] + "." + leaf
    return rest


def _unet_key(key: str, config) -> str:
    from diffusers.loaders.single_file_utils import DIFFUSERS_TO_LDM_MAPPING

    top = {**DIFFUSERS_TO_LDM_MAPPING["unet"]["layers"], **DIFFUSERS_TO_LDM_MAPPING["unet"]["addition_embed_type"]}
    if key in top:
        return top[key]
    per = config["layers_per_block"] + 1
    m = re.match(r"(down|up)_blocks\.(\d+)\.(resnets|attentions)\.(\d+)\.(.+)$", key)
    if m:
        where, block, kind, layer, rest = m.groups()
        index = 1 + int(block) * per + int(layer) if where == "down" else int(block) * per + int(layer)
        name = "input_blocks" if where == "down" else "output_blocks"
        return f"{name}.{index}.{0 if kind == 'resnets' else 1}." + (_renamed(rest, _UNET_RESNET) if kind == "resnets"
                                                                    else rest)
    m = re.match(r"down_blocks\.(\d+)\.downsamplers\.0\.conv\.(.+)$", key)
    if m:
        return f"input_blocks.{(int(m[1]) + 1) * per}.0.op.{m[2]}"
    m = re.match(r"up_blocks\.(\d+)\.upsamplers\.0\.conv\.(.+)$", key)
    if m:
        block = int(m[1])
        slot = 2 if "CrossAttn" in config["up_block_types"][block] else 1
        return f"output_blocks.{block * per + per - 1}.{slot}.conv.{m[2]}"
    m = re.match(r"mid_block\.resnets\.(\d+)\.(.+)$", key)
    if m:
        return f"middle_block.{0 if m[1] == '0' else 2}." + _renamed(m[2], _UNET_RESNET)
    m = re.match(r"mid_block\.attentions\.0\.(.+)$", key)
    if m:
        return f"middle_block.1.{m[1]}"
    raise KeyError(f"no original name for the UNet's {key}")


def _vae_key(key: str, config) -> tuple[str, bool]:
    """(original name, whether the original is a 1x1 convolution where diffusers has a Linear)."""
    from diffusers.loaders.single_file_utils import DIFFUSERS_TO_LDM_MAPPING

    if key in DIFFUSERS_TO_LDM_MAPPING["vae"]:
        return DIFFUSERS_TO_LDM_MAPPING["vae"][key], False
    n_up = len(config["up_block_types"])
    m = re.match(r"(encoder|decoder)\.(down|up)_blocks\.(\d+)\.(resnets|downsamplers|upsamplers)\.(\d+)\.(.+)$", key)
    if m:
        part, where, block, kind, layer, rest = m.groups()
        block = int(block) if where == "down" else n_up - 1 - int(block)
        if kind == "resnets":
            return f"{part}.{where}.{block}.block.{layer}.{rest.replace('conv_shortcut', 'nin_shortcut')}", False
        return f"{part}.{where}.{block}.{'downsample' if where == 'down' else 'upsample'}.{rest}", False
    m = re.match(r"(encoder|decoder)\.mid_block\.resnets\.(\d+)\.(.+)$", key)
    if m:
        return f"{m[1]}.mid.block_{int(m[2]) + 1}.{m[3].replace('conv_shortcut', 'nin_shortcut')}", False
    m = re.match(r"(encoder|decoder)\.mid_block\.attentions\.0\.(.+)$", key)
    if m:
        rest = _renamed(m[2], _VAE_ATTENTION)
        return f"{m[1]}.mid.attn_1.{rest}", rest.endswith(".weight") and not rest.startswith("norm.")
    raise KeyError(f"no original name for the VAE's {key}")


def original_sd_state_dict(folder: Path) -> dict:
    """The tiny SD 1.5 pipeline of ``folder`` as one state dict in the original layout."""
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPTextModel

    unet = UNet2DConditionModel.from_pretrained(folder, subfolder="unet")
    vae = AutoencoderKL.from_pretrained(folder, subfolder="vae")
    text = CLIPTextModel.from_pretrained(folder, subfolder="text_encoder")
    out = {f"model.diffusion_model.{_unet_key(k, unet.config)}": v for k, v in unet.state_dict().items()}
    for k, v in vae.state_dict().items():
        name, conv = _vae_key(k, vae.config)
        out[f"first_stage_model.{name}"] = v[:, :, None, None] if conv else v
    # the original files name the encoder's modules as transformers 4 did (text_model.embeddings...)
    out.update({f"cond_stage_model.transformer.{k if k.startswith('text_model.') else 'text_model.' + k}": v
                for k, v in text.state_dict().items()})
    return {k: v.detach().contiguous().clone() for k, v in out.items()}


def write_original_sd_checkpoint(folder: Path, file: Path, *, shift: float = 0.0) -> Path:
    """``folder``'s tiny SD 1.5 as one original-layout safetensors file (``shift`` added to every
    UNet weight: another fine-tune of the same architecture)."""
    from safetensors.torch import save_file

    state = original_sd_state_dict(folder)
    if shift:
        state = {k: v + shift if k.startswith("model.diffusion_model.") and v.is_floating_point() else v
                 for k, v in state.items()}
    file.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(file))
    return file


def write_unet_file(folder: Path, file: Path, *, shift: float = 0.0) -> Path:
    """``folder``'s UNet alone in diffusers' layout (a denoiser-only single file)."""
    import torch
    from diffusers import UNet2DConditionModel
    from safetensors.torch import save_file

    unet = UNet2DConditionModel.from_pretrained(folder, subfolder="unet")
    with torch.no_grad():
        state = {k: (v + shift).contiguous() for k, v in unet.state_dict().items()}
    file.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(file))
    return file


def write_unet_gguf(folder: Path, file: Path) -> Path:
    """``folder``'s UNet in diffusers' layout as a GGUF file: 2-D and larger weights whose rows
    are a multiple of 32 quantized to Q8_0 (as GGUF fine-tunes are), the rest float32."""
    import gguf
    import numpy as np
    from diffusers import UNet2DConditionModel

    unet = UNet2DConditionModel.from_pretrained(folder, subfolder="unet")
    writer = gguf.GGUFWriter(str(file), arch="unet")
    for name, tensor in unet.state_dict().items():
        array = tensor.detach().float().numpy()
        if array.ndim >= 2 and array.shape[-1] % 32 == 0:
            writer.add_tensor(name, gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q8_0),
                              raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(name, np.ascontiguousarray(array, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return file

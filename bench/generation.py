"""Benchmark: image generation and CLIP embedding speed, on a GPU or, with --tiny, a CPU.

Builds SD 1.5 (512 px), SD 2.1 (768-v) and SDXL base (1024 px) pipelines, two diffusion
transformers (FLUX.1-dev and SD 3.5 Medium, 1024 px) and CLIP ViT-L/14 from their published
configs (``bench/configs/*.json``) with random weights (the compute is that of the real
weights), and measures in one run, per UNet model (SD 1.5 / 2.1 / XL):

* ``batch1-fp16``: the loop peers use (fp16, batch 1, diffusers' defaults, no compile);
* ``runner``: what users get: the pipeline saved to a folder, loaded by
  ``benchmark.models.load_text_to_image`` and run by ``benchmark.runner.generate.generate``
  into a run folder (PNG, sha256, atomic batches, manifest included), runner defaults;
  ``runner`` is the default path (``--batch-size auto``, compiled UNet, static batches,
  channels-last, fused QKV); ``runner-no-compile`` the same with ``--no-compile``;
  ``runner-batch4`` the default before them (batch 4, no compile); the compile time and
  the batch-size probe are reported apart (``compile_s``, ``probe_s``), not in images/s;
* each optimisation alone: ``bf16``, ``sdpa`` (eager attention vs SDPA), ``sdpa-backends``
  (flash / memory-efficient / cuDNN kernels forced, at ``--batch-size``), ``channels-last``,
  ``fused-qkv`` (diffusers' ``fuse_qkv_projections``), ``batch-sweep``, ``compile``,
  ``compile-modes`` (``default`` / ``reduce-overhead`` = CUDA graphs /
  ``max-autotune-no-cudagraphs``) and ``compile-vae`` (the VAE decoder compiled too), both on
  the runner's path at the static batch ``--batch-size``, each row's images compared with mode
  ``default``'s (:func:`measure_modes`), ``vae-tiling``, ``vae-slicing``; and ``combined``
  (bf16 + channels-last + compile at ``--batch-size``);
* ``clip``: ViT-L/14 image embeddings from PIL images (CPU preprocessing, the annotate
  stage's path before issue 24: ``clip-pil``), the annotate stage's path now (``clip-annotate``:
  uint8 tensors from the decode threads, resize and normalise on the GPU), and from the
  float tensors a pipeline holds (``OpenClipEncoder.embed_image_tensors``: ``clip-tensor``).

The diffusion transformers (``flux-dev``: FLUX.1-dev, 28 steps, guidance 3.5 as an embedding,
one transformer forward per step; ``sd35-medium``: SD 3.5 Medium, 40 steps, classifier-free
guidance 4.5, the batch doubled) are too large to build with random weights on the CPU
(FLUX: a 12B transformer + a 4.7B T5-XXL, ~34 GB in bf16): their parameters are made on the
meta device and materialised on the device in bf16 with a fast random init
(:func:`materialise`); buffers (CLIP's position ids, SD3's sin-cos position table) are
computed by the constructors as usual. Nothing is saved (FLUX's folder would be ~34 GB); they
get two plain pipeline rows, ``FluxPipeline(**modules)`` / ``StableDiffusion3Pipeline(**modules)``
called as diffusers documents it: ``batch1-bf16`` and ``batched-bf16`` (``--batch-size``),
warmed up with a 2-step call at the same batch; and, with ``runner`` in ``--configs``, the
runner's default path around the same pipeline (:func:`measure_dit_runner`: the model object
``load_text_to_image`` would return, compiled, auto batch up to ``--dit-max-batch``, and
``generate`` into a run folder; only ``from_pretrained`` is left out).

The arithmetic floor per model comes from ``torch.utils.flop_counter.FlopCounterMode`` on
the actual modules (one denoiser forward, UNet or transformer, at the guidance batch: 2 with
classifier-free guidance, 1 for FLUX.1-dev; x the denoiser evaluations the scheduler makes
for the steps; + VAE decode + text encoders at their sequence lengths), divided by the GPU's
dense bf16 peak (table below, or ``--peak-tflops``).

    python bench/generation.py --models sd15 sd2 sdxl clip --device cuda --out bench-results/
    python bench/generation.py --models flux-dev sd35-medium --device cuda --n-images 2 --batch-size 4
    python bench/generation.py --tiny                     # tiny configs on the CPU (CI)
    python bench/generation.py --flops-only               # real-size FLOPs per image, no weights (meta device)
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from benchmark import frozen_imports  # noqa: E402
frozen_imports.install()  # the heavy libraries load as under t2ibench (benchmark/frozen_imports.py)

from benchmark.present.text import markdown_table  # noqa: E402
from benchmark.contract.times import utc_iso  # noqa: E402
from benchmark.models import load_text_to_image  # noqa: E402
from benchmark.models.clip_tokenizer import build_clip_tokenizer  # noqa: E402
from benchmark.models.device import resolve_dtype  # noqa: E402
from benchmark.models.encoders import OpenClipEncoder  # noqa: E402
from benchmark.models.tiny import TINY_CLIP_CONFIG  # noqa: E402
from benchmark.runner.batch_size import resolve_batch_size  # noqa: E402
from benchmark.runner.generate import generate  # noqa: E402
from benchmark.runner.probe_choice import build_probes  # noqa: E402
from bench.workload import add_suites_option, generation_request  # noqa: E402

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
UNET_MODELS = ("sd15", "sd2", "sdxl")
#: diffusion transformers: parameters made on the meta device, materialised on the device
DIT_MODELS = ("flux-dev", "sd35-medium")
PIPELINE_MODELS = UNET_MODELS + DIT_MODELS
MODELS = PIPELINE_MODELS + ("clip",)
#: the rows measured for DIT_MODELS (plain pipeline calls in bf16): config -> batch (None: --batch-size)
DIT_ROWS = (("batch1-bf16", 1), ("batched-bf16", None))
TEXT_KEYS = ("text_encoder", "text_encoder_2", "text_encoder_3")
TOKENIZER_KEYS = ("tokenizer", "tokenizer_2", "tokenizer_3")
CONFIGS = ("runner", "runner-no-compile", "runner-batch4", "batch1-fp16", "bf16", "sdpa", "sdpa-backends",
           "channels-last", "fused-qkv", "batch-sweep", "compile", "compile-modes", "compile-vae", "vae-tiling",
           "vae-slicing", "combined")
#: the runner rows: extra arguments of load_text_to_image / generate, and what they show
RUNNER_ROWS = {
    "runner": ({}, "auto", "the default path: auto batch, bf16, channels-last, fused QKV, compiled UNet, static batch"),
    "runner-no-compile": ({"compile": False}, "auto", "the default path with --no-compile"),
    "runner-batch4": ({"compile": False}, 4, "the default before auto batch and compile (batch 4, no compile)"),
}
#: rows on the runner's path at a static ``--batch-size`` (every CUDA default but the one varied),
#: by config: (label, load_text_to_image speed arguments); each row's images are compared with
#: those of mode ``default`` (measured first whenever one of these configs is asked for)
MODE_ROWS = {
    "compile-modes": (("default", {"compile": "default"}),
                      ("reduce-overhead", {"compile": "reduce-overhead"}),
                      ("max-autotune-no-cudagraphs", {"compile": "max-autotune-no-cudagraphs"})),
    "compile-vae": (("default + VAE decoder", {"compile": "default", "compile_vae": True}),
                    ("reduce-overhead + VAE decoder", {"compile": "reduce-overhead", "compile_vae": True})),
}
#: SDPA backends of torch.nn.attention.SDPBackend measured by sdpa-backends
SDPA_BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")
#: dense (no sparsity) bf16 tensor-core peak, TFLOP/s, by a substring of torch.cuda.get_device_name()
#: (NVIDIA data sheets). First match wins, so the more specific names come first.
PEAK_BF16_TFLOPS = (
    ("H200", 989.4), ("H100 PCIe", 756.5), ("H100 NVL", 835.0), ("H100", 989.4), ("GH200", 989.4),
    ("A100", 312.0), ("L40S", 362.1), ("L4", 121.0), ("A10G", 70.0),
)
STEPS_TINY = 2


# --------------------------------------------------------------------------- configs and pipelines


def _clean(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if not k.startswith("_")}


def load_config(name: str) -> dict:
    """``bench/configs/<name>.json``; model names spell ``-`` where file names spell ``_`` (flux-dev)."""
    return json.loads((CONFIG_DIR / f"{name.replace('-', '_')}.json").read_text(encoding="utf-8"))


def is_dit(cfg: dict) -> bool:
    """A diffusion-transformer pipeline (FLUX, SD3): its denoiser is ``cfg["transformer"]``."""
    return "transformer" in cfg


def _is_t5(text_cfg: dict) -> bool:
    return text_cfg.get("_class_name", "").startswith("T5")


def guidance_batch(cfg: dict) -> int:
    """Latents per image in one denoiser call: 2 with classifier-free guidance (SD 1.5 / 2.1 / XL,
    SD 3.5), 1 where guidance is an embedding of a distilled model (FLUX.1-dev)."""
    return 2 if cfg.get("guidance", "classifier-free") == "classifier-free" else 1


def tiny_config(cfg: dict) -> dict:
    """The same architecture (block types, number of blocks, text encoders, scheduler), test-sized."""
    cfg = json.loads(json.dumps(cfg))
    if is_dit(cfg):
        return _tiny_dit_config(cfg)
    u = cfg["unet"]
    n_blocks = len(u["block_out_channels"])
    u["block_out_channels"] = [16 * min(2 ** i, 4) for i in range(n_blocks)]
    u["norm_num_groups"] = 8
    u["layers_per_block"] = 1
    if isinstance(u["attention_head_dim"], list):
        u["attention_head_dim"] = [2] * n_blocks
    else:
        u["attention_head_dim"] = 2
    if "transformer_layers_per_block" in u:
        u["transformer_layers_per_block"] = [1] * n_blocks
    text_keys = [k for k in ("text_encoder", "text_encoder_2") if k in cfg]
    for k in text_keys:
        cfg[k].update(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_hidden_layers=2, projection_dim=32)
    u["cross_attention_dim"] = 32 * len(text_keys)
    if u.get("addition_embed_type") == "text_time":
        u["addition_time_embed_dim"] = 8
        u["projection_class_embeddings_input_dim"] = 32 + 6 * 8  # pooled text + 6 time ids
    cfg["vae"].update(block_out_channels=[8, 16, 16, 16], norm_num_groups=8, layers_per_block=1, sample_size=64)
    u["sample_size"] = 8  # 64 px / the VAE's x8
    cfg["resolution"] = 64
    if "vision" in cfg:
        cfg["open_clip"] = {"tiny": True}
    return cfg


def _tiny_dit_config(cfg: dict) -> dict:
    """FLUX / SD3 test-sized: both block types (FLUX's double- and single-stream blocks, SD3.5's
    dual-attention and plain joint blocks), every text encoder (CLIP and T5, T5 at the real
    sequence length), the 16-channel VAE, the scheduler; widths and depths shrunk."""
    t = cfg["transformer"]
    clip_keys = [k for k in TEXT_KEYS if k in cfg and not _is_t5(cfg[k])]
    t5_keys = [k for k in TEXT_KEYS if k in cfg and _is_t5(cfg[k])]
    for k in clip_keys:
        cfg[k].update(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_hidden_layers=2,
                      projection_dim=32)
    t5_dim = 32 * max(2, len(clip_keys))  # SD3 pads the concatenated CLIP embeddings to T5's width
    for k in t5_keys:
        cfg[k].update(d_model=t5_dim, d_ff=2 * t5_dim, d_kv=8, num_heads=4, num_layers=2, num_decoder_layers=2)
    t.update(num_attention_heads=2, attention_head_dim=16, joint_attention_dim=t5_dim)
    if t["_class_name"] == "FluxTransformer2DModel":
        # pooled: CLIPTextModel's pooler output (hidden size); RoPE axes sum to the head dim
        t.update(num_layers=1, num_single_layers=1, axes_dims_rope=[4, 6, 6], pooled_projection_dim=32)
    else:
        # pooled: the CLIP projections concatenated; caption projection = heads x head dim
        t.update(num_layers=2, dual_attention_layers=[0], caption_projection_dim=32,
                 pooled_projection_dim=32 * len(clip_keys), sample_size=8, pos_embed_max_size=16)
    cfg["vae"].update(block_out_channels=[8, 16, 16, 16], norm_num_groups=8, layers_per_block=1, sample_size=64)
    cfg["resolution"] = 64
    return cfg


def _text_encoder(text_cfg: dict):
    import transformers

    cls = getattr(transformers, text_cfg.get("_class_name", "CLIPTextModel"))
    config_cls = transformers.T5Config if _is_t5(text_cfg) else transformers.CLIPTextConfig
    return cls(config_cls(**_clean(text_cfg)))


def build_modules(cfg: dict):
    """Denoiser (UNet or transformer), VAE and text encoder(s) from a config, random init on
    the current default device."""
    import diffusers

    if is_dit(cfg):
        mods = {"transformer": getattr(diffusers, cfg["transformer"]["_class_name"])(**_clean(cfg["transformer"]))}
    else:
        mods = {"unet": diffusers.UNet2DConditionModel(**_clean(cfg["unet"]))}
    mods["vae"] = diffusers.AutoencoderKL(**_clean(cfg["vae"]))
    for key in TEXT_KEYS:
        if key in cfg:
            mods[key] = _text_encoder(cfg[key])
    return mods


def build_t5_tokenizer(model_max_length: int = 512):
    """A ``T5TokenizerFast`` that needs no download: a character-level Unigram vocabulary
    (T5's layout: ``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2, then pieces) in a ``tokenizers``
    object. Its ids (< 100) are valid for T5's 32,128-entry embedding, and the pipelines pad
    every prompt to ``max_sequence_length``, so the T5 compute equals the real tokenizer's."""
    import string

    import transformers
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    chars = string.ascii_lowercase + string.digits + string.punctuation
    vocab = ([("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -2.0)]
             + [(c, -3.0) for c in chars] + [("\u2581" + c, -2.5) for c in chars])
    tok = Tokenizer(models.Unigram(vocab, unk_id=2, byte_fallback=False))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(
        replacement="\u2581", prepend_scheme="always", split=True)])
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                       special_tokens=[("</s>", 1)])
    return transformers.T5TokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                        model_max_length=model_max_length, extra_ids=0)


@functools.lru_cache(maxsize=None)
def _clip_tokenizer(pad_token: str):
    """The CLIP tokenizer with ``pad_token``, built once per process (its BPE files take ~0.4 s
    to write; pipelines only read a tokenizer, so one object serves all of them)."""
    with tempfile.TemporaryDirectory(prefix="t2ibench-clip-bpe-") as tmp:
        return build_clip_tokenizer(Path(tmp), pad_token=pad_token)


def build_tokenizers(cfg: dict) -> dict:
    """The pipeline's tokenizers: CLIP (the real BPE, offline) and T5 (:func:`build_t5_tokenizer`)."""
    toks = {}
    for key in TOKENIZER_KEYS:
        if key not in cfg:
            continue
        if cfg[key].get("_class_name") == "T5TokenizerFast":
            toks[key] = build_t5_tokenizer(cfg[key]["model_max_length"])
        else:
            toks[key] = _clip_tokenizer(cfg[key]["pad_token"])
    return toks


def build_scheduler(cfg: dict):
    import diffusers

    # from_config, as from_pretrained does: published scheduler configs carry keys some classes ignore
    return getattr(diffusers, cfg["scheduler"]["_class_name"]).from_config(_clean(cfg["scheduler"]))


@contextlib.contextmanager
def parameters_on_meta():
    """Module constructors inside make their parameters on the meta device (no memory, their
    init a no-op) and their buffers as usual (computed, on the default device): what accelerate's
    ``init_empty_weights(include_buffers=False)`` does. Lets a 12B transformer be built in
    seconds; :func:`materialise` then gives the parameters memory and values on the device."""
    import torch

    register = torch.nn.Module.register_parameter

    def register_on_meta(module, name, param):
        register(module, name, param)
        if param is not None and param.device.type != "meta":
            p = module._parameters[name]
            module._parameters[name] = type(p)(p.to("meta"), requires_grad=p.requires_grad)

    torch.nn.Module.register_parameter = register_on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register


def materialise(module, device, dtype, std: float = 0.02):
    """Give ``module``'s meta parameters memory on ``device`` in ``dtype`` and random values in
    place there (no CPU init, no copy): weights of 2+ dimensions ~ N(0, ``std``), 1-dimensional
    weights (norm scales) 1, biases 0; tied parameters stay tied (T5's shared embedding).
    Buffers (computed by the constructors under :func:`parameters_on_meta`: CLIP's position
    ids, SD3's sin-cos position table; FLUX's transformer holds none, its RoPE is computed in
    the forward) move to ``device``, floating ones cast to ``dtype`` as from_pretrained would.
    A buffer still on the meta device is an error, never a silently wrong value."""
    import torch

    made: dict[int, torch.nn.Parameter] = {}
    with torch.no_grad():
        for mod in module.modules():
            for name, p in list(mod._parameters.items()):
                if p is None:
                    continue
                if id(p) not in made:
                    t = torch.empty(p.shape, dtype=dtype if p.is_floating_point() else p.dtype, device=device)
                    if name.endswith("bias"):
                        t.zero_()
                    elif t.dim() <= 1:
                        t.fill_(1.0)
                    else:
                        t.normal_(0.0, std)
                    made[id(p)] = torch.nn.Parameter(t, requires_grad=False)
                mod._parameters[name] = made[id(p)]
            for name, b in list(mod._buffers.items()):
                if b is None:
                    continue
                if b.device.type == "meta":
                    raise RuntimeError(f"buffer {name!r} of {type(mod).__name__} has no value (meta)")
                mod._buffers[name] = b.to(device=device, dtype=dtype if b.is_floating_point() else b.dtype)
    return module.eval()


def build_dit_pipeline(cfg: dict, device, dtype):
    """``FluxPipeline`` / ``StableDiffusion3Pipeline`` of ``cfg`` on ``device`` in ``dtype``:
    parameters made on the meta device, materialised there with random values
    (:func:`materialise`), CLIP and T5 tokenizers built offline. The constructors run with
    ``device`` as the default device, so the buffers they compute are computed there (SD 3.5's
    sin-cos table of 384 x 384 positions x 1536: ~20 s on a 2-core CPU, milliseconds on a GPU).
    Nothing touches the disk but the CLIP BPE files (a temporary folder)."""
    import diffusers
    import torch

    torch.manual_seed(0)
    with torch.device(device), parameters_on_meta():
        mods = build_modules(cfg)
    for m in mods.values():
        materialise(m, device, dtype)
    pipe = getattr(diffusers, cfg["pipeline"])(scheduler=build_scheduler(cfg), **mods, **build_tokenizers(cfg))
    pipe.set_progress_bar_config(disable=True)
    return pipe


def build_pipeline_folder(cfg: dict, folder: Path, device: str) -> Path:
    """A diffusers pipeline from ``cfg`` with random weights, saved (fp16 on a GPU; DiTs bf16)
    to ``folder``. For the DiTs only cheap at tiny sizes (real FLUX.1-dev is ~34 GB)."""
    import diffusers
    import torch

    if is_dit(cfg):
        folder.mkdir(parents=True, exist_ok=True)
        pipe = build_dit_pipeline(cfg, device, torch.float32 if device == "cpu" else torch.bfloat16)
        pipe.save_pretrained(folder, safe_serialization=True)
        del pipe
        gc.collect()
        return folder
    torch.manual_seed(0)
    with torch.device(device):
        mods = build_modules(cfg)
    toks = build_tokenizers(cfg)
    scheduler = build_scheduler(cfg)
    if cfg["pipeline"] == "StableDiffusionXLPipeline":
        pipe = diffusers.StableDiffusionXLPipeline(scheduler=scheduler, **mods, **toks,
                                                   **cfg.get("pipeline_kwargs", {}))
    else:
        pipe = diffusers.StableDiffusionPipeline(scheduler=scheduler, **mods, **toks, safety_checker=None,
                                                 feature_extractor=None, requires_safety_checker=False)
    if device != "cpu":
        pipe.to(torch.float16)  # half the disk and load time; loading casts to the dtype asked for
    pipe.save_pretrained(folder, safe_serialization=True)
    del pipe, mods
    gc.collect()
    return folder


# --------------------------------------------------------------------------- FLOPs and floor


def denoiser_evaluations(cfg: dict, steps: int) -> int:
    """Denoiser (UNet / transformer) forward passes one generation of ``steps`` makes: the
    length of the scheduler's own timestep list, set as the pipeline sets it (the pipelines
    call the denoiser once per timestep, both halves of classifier-free guidance in one
    batch). Not always ``steps``: PNDM, SD 1.5's default, makes steps + 1 (its PLMS warm-up
    evaluates the first timestep twice). FLUX's pipeline passes its own sigmas
    (``linspace(1, 1/steps, steps)``) and, with ``use_dynamic_shifting``, the shift ``mu``
    from the image's token count (``calculate_shift``); SD3's passes ``mu`` only when its
    scheduler shifts dynamically (SD 3.5 Medium's does not)."""
    import numpy as np

    scheduler = build_scheduler(cfg)
    if not is_dit(cfg):
        scheduler.set_timesteps(int(steps))
        return len(scheduler.timesteps)
    from diffusers.pipelines.flux.pipeline_flux import calculate_shift, retrieve_timesteps

    sc = scheduler.config
    kwargs = {}
    if cfg["pipeline"] == "FluxPipeline" and not sc.get("use_flow_sigmas"):
        kwargs["sigmas"] = np.linspace(1.0, 1 / steps, steps)
    if sc.get("use_dynamic_shifting"):
        tokens = (int(cfg["resolution"]) // 8 // 2) ** 2  # latents / the VAE's x8, in 2x2 patches
        kwargs["mu"] = calculate_shift(tokens, sc.get("base_image_seq_len", 256), sc.get("max_image_seq_len", 4096),
                                       sc.get("base_shift", 0.5), sc.get("max_shift", 1.15))
    timesteps, _ = retrieve_timesteps(scheduler, int(steps), "cpu", **kwargs)
    return len(timesteps)


def _denoiser_call(cfg: dict, mods: dict, batch: int):
    """One denoiser forward on meta tensors of the real shapes, as the pipeline calls it."""
    import torch

    lat = int(cfg["resolution"]) // 8
    if not is_dit(cfg):
        text_dims = [cfg[k]["hidden_size"] for k in TEXT_KEYS if k in cfg]
        kw = {}
        if cfg["unet"].get("addition_embed_type") == "text_time":
            pooled = cfg["text_encoder_2"]["projection_dim"]
            kw["added_cond_kwargs"] = {"text_embeds": torch.zeros(batch, pooled), "time_ids": torch.zeros(batch, 6)}
        return mods["unet"](torch.zeros(batch, 4, lat, lat), torch.tensor(1),
                            encoder_hidden_states=torch.zeros(batch, 77, sum(text_dims)), **kw)
    t = cfg["transformer"]
    n_text = int(cfg["max_sequence_length"])
    if t["_class_name"] == "FluxTransformer2DModel":
        n_img = (lat // 2) ** 2  # FLUX packs 2x2 latent patches into tokens of in_channels (16 x 4)
        return mods["transformer"](
            hidden_states=torch.zeros(batch, n_img, t["in_channels"]), timestep=torch.zeros(batch),
            guidance=torch.zeros(batch) if t.get("guidance_embeds") else None,
            pooled_projections=torch.zeros(batch, t["pooled_projection_dim"]),
            encoder_hidden_states=torch.zeros(batch, n_text, t["joint_attention_dim"]),
            txt_ids=torch.zeros(n_text, 3), img_ids=torch.zeros(n_img, 3), return_dict=False)
    # SD3: the CLIP-L + CLIP-G hidden states (77 tokens) then T5's, one sequence
    return mods["transformer"](
        hidden_states=torch.zeros(batch, t["in_channels"], lat, lat), timestep=torch.zeros(batch),
        encoder_hidden_states=torch.zeros(batch, 77 + n_text, t["joint_attention_dim"]),
        pooled_projections=torch.zeros(batch, t["pooled_projection_dim"]), return_dict=False)


def flops_per_image(cfg: dict, steps: int, guidance: bool | None = None) -> dict:
    """FLOPs per image on the meta device (no weights, no compute): the denoiser (UNet or
    transformer) x its evaluations (:func:`denoiser_evaluations`) at the guidance batch
    (``guidance``: classifier-free, 2 latents per image; default from the config, see
    :func:`guidance_batch`), VAE decode, text encoders (CLIP at 77 tokens, T5 at the
    pipeline's ``max_sequence_length``; the negative prompt too under classifier-free guidance)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        mods = build_modules(cfg)
    lat = int(cfg["resolution"]) // 8
    cfg_batch = guidance_batch(cfg) if guidance is None else (2 if guidance else 1)
    out = {}
    with torch.device("meta"), torch.no_grad():
        with FlopCounterMode(display=False) as fc:
            for k in TEXT_KEYS:
                if k in mods:
                    tokens = int(cfg["max_sequence_length"]) if _is_t5(cfg[k]) else 77
                    mods[k](torch.zeros(cfg_batch, tokens, dtype=torch.long))
        out["text"] = fc.get_total_flops() / cfg_batch  # per prompt
        with FlopCounterMode(display=False) as fc:
            _denoiser_call(cfg, mods, cfg_batch)
        out["denoiser_forward"] = fc.get_total_flops() / cfg_batch  # per image (one latent)
        with FlopCounterMode(display=False) as fc:
            mods["vae"].decode(torch.zeros(1, int(cfg["vae"].get("latent_channels", 4)), lat, lat))
        out["vae_decode"] = fc.get_total_flops()
    out["steps"] = int(steps)
    out["guidance_batch"] = cfg_batch
    out["denoiser_evaluations"] = denoiser_evaluations(cfg, steps)
    out["per_image"] = (out["denoiser_forward"] * cfg_batch * out["denoiser_evaluations"] + out["vae_decode"]
                        + out["text"] * cfg_batch)
    return out


def clip_flops(image_size: int = 224, tiny: bool = False) -> float:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = _clip_model(tiny, "meta")
        x = torch.zeros(1, 3, image_size if not tiny else 32, image_size if not tiny else 32)
        with FlopCounterMode(display=False) as fc, torch.no_grad():
            model.encode_image(x)
    return fc.get_total_flops()


def peak_tflops(device_name: str, override: float | None) -> tuple[float | None, str]:
    if override:
        return override, "--peak-tflops"
    for key, value in PEAK_BF16_TFLOPS:
        if key in device_name:
            return value, f"dense bf16 peak of {key} (data sheet)"
    return None, "unknown GPU: pass --peak-tflops"


# --------------------------------------------------------------------------- measurement


@dataclass
class Row:
    model: str
    config: str
    batch: int
    dtype: str
    images: int = 0
    seconds: float = float("nan")
    images_per_s: float = float("nan")
    peak_mem_gib: float | None = None
    pct_of_floor: float | None = None
    speedup: float | None = None
    note: str = ""
    error: str | None = None
    extra: dict = field(default_factory=dict)


class Device:
    def __init__(self, name: str):
        import torch

        self.torch = torch
        self.dev = torch.device(name)
        self.cuda = self.dev.type == "cuda"

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.dev)

    def reset_peak(self):
        # the memory of the last row handed back before the next one's peak is measured: CUDA
        # only (a CPU has no peak counter, and gc.collect costs ~0.3-1 s a call with the probes
        # and the libraries loaded: most of a --tiny run's time)
        if self.cuda:
            gc.collect()
            self.torch.cuda.empty_cache()
            self.torch.cuda.reset_peak_memory_stats(self.dev)

    def peak_gib(self) -> float | None:
        return self.torch.cuda.max_memory_allocated(self.dev) / 2 ** 30 if self.cuda else None


def _prompts(suites: list[str], n: int) -> list[str]:
    probes = build_probes(suites)
    return [str(p) for p in probes["prompt"].head(n)] + [str(probes["prompt"].iloc[0])] * max(0, n - len(probes))


def time_calls(dev: Device, call, n_images: int, batch: int, warmup=None) -> tuple[int, float]:
    """Warm up with one call (``warmup``, default ``call``, at the same batch), then time enough
    calls for ``n_images`` (rounded up to whole batches)."""
    (warmup or call)(batch)
    dev.sync()
    n_calls = max(1, math.ceil(n_images / batch))
    t0 = time.perf_counter()
    for _ in range(n_calls):
        call(batch)
    dev.sync()
    return n_calls * batch, time.perf_counter() - t0


def pipeline_call(pipe, prompts, steps, guidance, res, sdpa_backend: str | None = None, **extra):
    """``pipe(...)`` on the first ``batch`` prompts, one CPU generator per image; ``extra``:
    more pipeline arguments (``max_sequence_length`` of the DiT pipelines)."""
    import torch

    def call(batch):
        gens = [torch.Generator("cpu").manual_seed(i) for i in range(batch)]
        backend = contextlib.nullcontext()
        if sdpa_backend:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            backend = sdpa_kernel(getattr(SDPBackend, sdpa_backend))
        with torch.inference_mode(), backend:
            pipe(prompt=prompts[:batch], generator=gens, num_inference_steps=steps, guidance_scale=guidance,
                 height=res, width=res, output_type="pil", **extra)
    return call


def variants(config: str, args, runner_dtype: str) -> list[dict]:
    """The pipeline settings a config measures (several rows for sweeps and on/off pairs)."""
    fp16, b = "float16", args.batch_size
    if config == "batch1-fp16":
        return [dict(batch=1, dtype=fp16)]
    if config == "bf16":
        return [dict(batch=1, dtype="bfloat16")]
    if config == "sdpa":
        return [dict(batch=1, dtype=fp16, eager_attention=True, note="eager attention (AttnProcessor)"),
                dict(batch=1, dtype=fp16, note="SDPA (AttnProcessor2_0, diffusers' default)")]
    if config == "channels-last":
        return [dict(batch=1, dtype=fp16, channels_last=True)]
    if config == "batch-sweep":
        return [dict(batch=k, dtype=runner_dtype) for k in args.batch_sizes]
    if config == "compile":
        return [dict(batch=1, dtype=fp16, compile=True)]
    if config == "sdpa-backends":
        return [dict(batch=b, dtype=runner_dtype, sdpa_backend=k, note=f"SDPBackend.{k} forced") for k in SDPA_BACKENDS]
    if config == "fused-qkv":
        return [dict(batch=b, dtype=runner_dtype, fuse_qkv=True, note="pipe.fuse_qkv_projections()")]
    if config == "vae-tiling":
        return [dict(batch=b, dtype=runner_dtype, vae_tiling=True)]
    if config == "vae-slicing":
        return [dict(batch=b, dtype=runner_dtype, vae_slicing=False, note="no slicing"),
                dict(batch=b, dtype=runner_dtype, vae_slicing=True, note="slicing (the runner's CUDA default)")]
    if config == "combined":
        return [dict(batch=b, dtype=runner_dtype, channels_last=True, compile=True)]
    raise ValueError(config)


def measure_variant(model: str, folder: Path, cfg: dict, v: dict, args, dev: Device) -> Row:
    import diffusers
    import torch

    name = v["dtype"]
    if not dev.cuda and name == "float16":  # CPUs have no fast fp16 kernels: measure the rest of the config
        name = "float32"
        v = {**v, "note": (v.get("note", "") + " (fp16 -> float32 on the CPU)").strip()}
    dtype = getattr(torch, name)
    row = Row(model, args._config, v["batch"], name, note=v.get("note", ""))
    dev.reset_peak()
    pipe = diffusers.AutoPipelineForText2Image.from_pretrained(folder, dtype=dtype).to(dev.dev)
    pipe.set_progress_bar_config(disable=True)
    try:
        if v.get("eager_attention"):
            from diffusers.models.attention_processor import AttnProcessor

            pipe.unet.set_attn_processor(AttnProcessor())
            pipe.vae.set_attn_processor(AttnProcessor())
        if v.get("channels_last"):
            pipe.unet.to(memory_format=torch.channels_last)
            pipe.vae.to(memory_format=torch.channels_last)
        if v.get("vae_tiling"):
            pipe.vae.enable_tiling()
        if v.get("vae_slicing"):
            pipe.vae.enable_slicing()
        if v.get("fuse_qkv"):
            pipe.fuse_qkv_projections()
        call = pipeline_call(pipe, args._prompts, args._steps[model], args._guidance[model], cfg["resolution"],
                             v.get("sdpa_backend"))
        if v.get("compile"):
            mode = v.get("compile_mode", args.compile_mode)
            pipe.unet = torch.compile(pipe.unet, mode=mode, fullgraph=True)
            if v.get("compile_vae"):
                pipe.vae.decoder = torch.compile(pipe.vae.decoder, mode=mode, fullgraph=True)
            t0 = time.perf_counter()
            call(v["batch"])
            dev.sync()
            row.extra["compile_and_first_call_s"] = round(time.perf_counter() - t0, 2)
        n, secs = time_calls(dev, call, args.n_images, v["batch"])
        row.images, row.seconds, row.images_per_s = n, secs, n / secs
        row.peak_mem_gib = dev.peak_gib()
    finally:
        del pipe
        dev.reset_peak()
    return row


def measure_runner(model: str, folder: Path, args, dev: Device) -> Row:
    """The runner's real path: load_text_to_image(folder) + generate() into a run folder, with
    the settings of RUNNER_ROWS[args._config]. The batch-size probe and the compile warm-up
    happen inside generate() and are subtracted (reported as probe_s / compile_s)."""
    speed, requested, what = RUNNER_ROWS[args._config]
    dev.reset_peak()
    steps = args._steps[model]
    overrides = {"num_inference_steps": steps} if args.tiny or steps != 50 else {}
    m = load_text_to_image(str(folder), device=str(dev.dev), **speed, **overrides)
    probes = build_probes(args.suites)
    run_root = Path(tempfile.mkdtemp(prefix="t2ibench-bench-run-"))
    try:
        t0 = time.perf_counter()
        batch = resolve_batch_size(requested, m).size  # the size generate() will find, to size the run
        probe_s = time.perf_counter() - t0 if requested == "auto" else 0.0
        if not m.compiled and requested != "auto":  # uncompiled: one untimed batch loads kernels
            m.generate(list(probes["prompt"].head(batch)), list(probes["seed"].head(batch)))
        dev.sync()
        n = max(args.n_images, (args.runner_batches if requested == "auto" and not args.tiny else 1) * batch)
        n = min(len(probes), math.ceil(n / batch) * batch)
        t0 = time.perf_counter()
        summary = generate(generation_request(run_root / "run", m, batch_size=batch), m, probes.head(n))
        dev.sync()
        compile_s = summary.timings.get("compile", 0.0)
        secs = time.perf_counter() - t0 - compile_s
        row = Row(model, args._config, batch, m.settings["dtype"], images=summary.n_generated, seconds=secs,
                  images_per_s=summary.n_generated / secs, peak_mem_gib=dev.peak_gib(),
                  note=f"{what}; load_text_to_image + generate(); batch_invariant={m.batch_invariant}",
                  extra={"stages_s": summary.timings, "compile_s": round(compile_s, 2), "probe_s": round(probe_s, 2),
                         "settings": {k: m.settings.get(k) for k in ("compile", "static_batch", "channels_last",
                                                                     "fused_qkv", "attention")}})
    finally:
        shutil.rmtree(run_root, ignore_errors=True)
        del m
        dev.reset_peak()
    return row


def image_arrays(run_dir: Path) -> dict[str, "object"]:
    """The decoded pixels of a run folder's images, by probe id."""
    import numpy as np
    from PIL import Image

    from benchmark.contract import run_folder as rf

    m = rf.read_manifest(run_dir)
    return {str(pid): np.asarray(Image.open(run_dir / path).convert("RGB"), dtype=np.int16)
            for pid, path in zip(m["probe_id"], m["image_path"])}


def compare_images(images: dict, reference: dict | None) -> dict:
    """Whether ``images`` equal ``reference`` (pixels, by probe id): identical, how many differ,
    the largest difference in grey levels."""
    if reference is None:
        return {"identical": None, "compared_with": "nothing (the reference row failed)"}
    common = [k for k in images if k in reference]
    diffs = [int(abs(images[k] - reference[k]).max()) for k in common]
    return {"identical": bool(common) and not any(diffs), "images_compared": len(common),
            "images_differing": sum(d > 0 for d in diffs), "max_abs_diff": max(diffs, default=0)}


def timed_generate(m, probes, batch, dev: Device, work: Path, decode: bool = True) -> tuple[object, float, dict]:
    """``generate`` into a fresh run folder: (summary, seconds without the compile warm-up,
    decoded images by probe id when ``decode``)."""
    dev.sync()
    t0 = time.perf_counter()
    summary = generate(generation_request(work / "run", m, batch_size=batch), m, probes)
    dev.sync()
    secs = time.perf_counter() - t0 - summary.timings.get("compile", 0.0)
    return summary, secs, image_arrays(work / "run") if decode else {}


def measure_modes(model: str, folder: Path, config: str, args, dev: Device) -> list[Row]:
    """MODE_ROWS[config]: the runner's model (load_text_to_image + generate, every CUDA default)
    at the static batch ``--batch-size``, each compile setting in turn, timed without its compile
    warm-up (``compile_s``); the images of each row compared with mode ``default``'s (measured
    first, once per model, kept in ``args._mode_reference``). On a CPU (``--tiny``) nothing is
    compiled (torch.compile is CUDA-only in the runner): the rows run the same path uncompiled."""
    probes = build_probes(args.suites)
    batch = args.batch_size
    n = min(len(probes), math.ceil(max(args.n_images, batch) / batch) * batch)
    steps = args._steps[model]
    overrides = {"num_inference_steps": steps} if args.tiny or steps != 50 else {}
    reference = MODE_ROWS["compile-modes"][0]  # mode default: what every row's images are compared with
    todo = [row for row in MODE_ROWS[config] if row != reference]
    if model not in args._mode_reference:
        todo.insert(0, reference)  # measured once per model, under the first of these configs asked for
    rows = []
    for label, speed in todo:
        speed = {**speed, "compile": False} if not dev.cuda else speed
        row = Row(model, config, batch, "", note=f"{label}; runner path, static batch {batch}")
        work = Path(tempfile.mkdtemp(prefix="t2ibench-bench-mode-"))
        m = None
        try:
            dev.reset_peak()
            m = load_text_to_image(str(folder), device=str(dev.dev), **speed, **overrides)
            summary, secs, images = timed_generate(m, probes.head(n), batch, dev, work)
            if label == "default":
                args._mode_reference.setdefault(model, images)
            row.dtype, row.images, row.seconds = m.settings["dtype"], summary.n_generated, secs
            row.images_per_s, row.peak_mem_gib = summary.n_generated / secs, dev.peak_gib()
            row.extra = {"compile_s": round(summary.timings.get("compile", 0.0), 2),
                         "speed": json.loads(json.dumps(getattr(m, "speed", {}), default=str)),
                         "vs_default": compare_images(images, args._mode_reference.get(model))}
            same = row.extra["vs_default"]
            verdict = {True: "identical", None: "not compared (mode default's row failed)",
                       False: f"DIFFER ({same.get('images_differing')} of {same.get('images_compared')}, max "
                              f"{same.get('max_abs_diff')} grey levels)"}[same["identical"]]
            row.note += f"; images vs mode default: {verdict}"
            if not dev.cuda:
                row.note += "; CPU: not compiled"
        except Exception as exc:  # noqa: BLE001 - a mode that fails to compile is a row, not the end of the run
            row.error = _error(exc)
        finally:
            m = None
            shutil.rmtree(work, ignore_errors=True)
            dev.reset_peak()
        rows.append(row)
    return rows


def _error(exc: BaseException) -> str:
    lines = str(exc).splitlines() or [""]
    return f"{type(exc).__name__}: {lines[0][:160]}"


def measure_dit_runner(model: str, cfg: dict, pipe, args, dev: Device) -> Row:
    """The runner's default path on a diffusion transformer built in memory (no folder: FLUX's
    would be ~34 GB): the model object ``load_text_to_image`` would return
    (``DiffusersTextToImage``: bf16, channels-last / fused QKV where they apply, the transformer
    compiled in mode ``default``, static batches), around the same pipeline, then ``generate``
    into a run folder; only ``from_pretrained`` is skipped (offload ``none``: the weights are on
    the GPU). ``--batch-size auto`` probes the memory as the runner does, at most
    ``--dit-max-batch`` images (the runner's cap is 32; FLUX gains 3% from batch 1 to 4, and a
    batch of 32 takes minutes), and the row times ``--n-images`` rounded up to whole batches,
    the compile warm-up and the probe apart (``compile_s``, ``probe_s``). Call settings as the
    plain rows'. Changes ``pipe`` (layout, compile): measured after them."""
    import torch

    from benchmark.models import cuda_speed
    from benchmark.models.diffusers_model import DiffusersTextToImage, PipelineIdentity

    steps, res = args._steps[model], int(cfg["resolution"])
    overrides = {"num_inference_steps": steps, "guidance_scale": args._guidance[model], "height": res, "width": res,
                 "max_sequence_length": int(cfg["max_sequence_length"])}
    row = Row(model, "runner", 0, "bfloat16")
    work = Path(tempfile.mkdtemp(prefix="t2ibench-bench-dit-"))
    m = None
    try:
        dev.reset_peak()
        with mock.patch.object(cuda_speed, "AUTO_MAX_BATCH", args.dit_max_batch):
            # a builtin: id: random weights, so the run folder and its card say the images are meaningless
            m = DiffusersTextToImage(pipe, PipelineIdentity(f"builtin:bench-{model}"), device=dev.dev,
                                     dtype=torch.bfloat16, overrides=overrides)
            t0 = time.perf_counter()
            chosen = resolve_batch_size("auto", m)
            probe_s = time.perf_counter() - t0
        probes = build_probes(args.suites)
        batch = chosen.size
        n = min(len(probes), math.ceil(max(args.n_images, batch) / batch) * batch)
        summary, secs, _ = timed_generate(m, probes.head(n), batch, dev, work, decode=False)
        row.batch, row.dtype, row.images, row.seconds = batch, m.settings["dtype"], summary.n_generated, secs
        row.images_per_s, row.peak_mem_gib = summary.n_generated / secs, dev.peak_gib()
        compiled = ", ".join(m.speed.get("compiled", [])) or "nothing (CPU)"
        row.note = (f"the runner's default path (DiffusersTextToImage + generate): auto batch (at most "
                    f"{args.dit_max_batch} here), compiled: {compiled}; 'vs batch1-fp16' = vs batch1-bf16")
        row.extra = {"compile_s": round(summary.timings.get("compile", 0.0), 2), "probe_s": round(probe_s, 2),
                     "batch_size_auto": chosen.auto, "stages_s": summary.timings,
                     "speed": json.loads(json.dumps(m.speed, default=str))}
    except Exception as exc:  # noqa: BLE001 - a compile or memory failure is a row, not the end of the run
        row.error = _error(exc)
    finally:
        m = None
        shutil.rmtree(work, ignore_errors=True)
    return row


def measure_dit(model: str, cfg: dict, args, dev: Device) -> list[Row]:
    """The DIT_ROWS of a diffusion transformer: the pipeline built once on the device
    (:func:`build_dit_pipeline`, bf16, random weights), then plain pipeline calls as
    diffusers documents them (FLUX: ``guidance_scale`` into the guidance embedding, one
    transformer forward per step; SD 3.5: classifier-free, the batch doubled), at batch 1 and
    ``--batch-size``. Each row is warmed up with a 2-step call at its batch (the same kernels,
    shapes and allocations as the timed calls, without spending the full steps), then timed
    over ``--n-images``. A failure (build or row) is a row with its error."""
    import torch

    dtype = torch.bfloat16
    t0, pipe, err = time.perf_counter(), None, None
    try:
        pipe = build_dit_pipeline(cfg, dev.dev, dtype)
        dev.sync()
    except Exception as exc:  # noqa: BLE001 - e.g. out of memory: a row, and the run goes on with the next model
        err = _error(exc)
    if err:
        dev.reset_peak()  # the half-built modules are gone with the exception: hand their memory back
        return [Row(model, "build", 0, "bfloat16", error=err)]
    build_s = round(time.perf_counter() - t0, 2)
    n_params = sum(p.numel() for m in pipe.components.values() if isinstance(m, torch.nn.Module)
                   for p in m.parameters())
    print(f"[{model}] built on {dev.dev} in {build_s:.1f} s ({n_params / 1e6:,.1f}M parameters)", file=sys.stderr)
    steps, res = args._steps[model], cfg["resolution"]
    extra = {"max_sequence_length": int(cfg["max_sequence_length"])}
    guidance = "classifier-free, batch doubled" if guidance_batch(cfg) == 2 else "embedded, no doubling"
    rows, call, warm = [], None, None
    try:
        for config, batch in DIT_ROWS:
            batch = batch or args.batch_size
            row = Row(model, config, batch, "bfloat16",
                      note=f"{cfg['pipeline']}(**modules), bf16, {steps} steps, guidance {args._guidance[model]} "
                           f"({guidance}), {extra['max_sequence_length']} T5 tokens; 'vs batch1-fp16' = vs batch1-bf16",
                      extra={"build_s": build_s, "warmup": "one 2-step call at the same batch"})
            try:
                if dev.cuda:  # (gc.collect costs ~0.3 s a call with the probes loaded: CUDA only)
                    dev.reset_peak()
                call = pipeline_call(pipe, args._prompts, steps, args._guidance[model], res, **extra)
                warm = pipeline_call(pipe, args._prompts, min(steps, 2), args._guidance[model], res, **extra)
                n, secs = time_calls(dev, call, args.n_images, batch, warmup=warm)
                row.images, row.seconds, row.images_per_s = n, secs, n / secs
                row.peak_mem_gib = dev.peak_gib()
            except Exception as exc:  # noqa: BLE001 - e.g. out of memory at the larger batch: a row, not the end
                row.error = _error(exc)
            rows.append(row)
        call = warm = None
        if "runner" in args.configs:
            rows.append(measure_dit_runner(model, cfg, pipe, args, dev))
    finally:
        call = warm = pipe = None  # the calls hold the pipeline: free its ~34 GB (FLUX) before the next model
        dev.reset_peak()
    return rows


# --------------------------------------------------------------------------- CLIP


def _clip_model(tiny: bool, device: str = "cpu"):
    import open_clip

    if tiny:
        c = TINY_CLIP_CONFIG
        model = open_clip.CLIP(embed_dim=c["embed_dim"], vision_cfg=open_clip.CLIPVisionCfg(**c["vision_cfg"]),
                               text_cfg=open_clip.CLIPTextCfg(**c["text_cfg"]))
        # create_model sets these from the pretrained config; embed_image_tensors reads them
        model.visual.image_mean, model.visual.image_std = open_clip.OPENAI_DATASET_MEAN, open_clip.OPENAI_DATASET_STD
        return model
    name = load_config("clip_vit_l14")["open_clip"]["model_name"]
    return open_clip.create_model(name, pretrained=None, device=device)


def measure_clip(args, dev: Device) -> list[Row]:
    """Embeddings/s from PIL images (annotate's path) vs from device tensors (embed_image_tensors)."""
    import numpy as np
    import open_clip
    import torch
    from PIL import Image

    torch.manual_seed(0)
    with torch.device(dev.dev):
        model = _clip_model(args.tiny, str(dev.dev)).eval()
    size = model.visual.image_size
    size = size[0] if isinstance(size, (tuple, list)) else size
    preprocess = open_clip.image_transform(size, is_train=False)
    dt = resolve_dtype(None, dev.dev) if dev.cuda else torch.float32
    res = 64 if args.tiny else args.clip_resolution
    rng = np.random.default_rng(0)
    n = args.clip_images
    pil = [Image.fromarray(rng.integers(0, 256, (res, res, 3), dtype=np.uint8)) for _ in range(min(n, 64))]
    pil = (pil * math.ceil(n / len(pil)))[:n]
    class PILOnly(OpenClipEncoder):
        preprocess_on_device = False  # the annotate stage's path before issue 24, on any device

    rows = []
    for path, bs in (("PIL", 32), ("PIL", args.clip_batch), ("annotate", 32), ("annotate", args.clip_batch),
                     ("tensor", 32), ("tensor", args.clip_batch)):
        cls = PILOnly if path == "PIL" else OpenClipEncoder
        enc = cls(model, preprocess, None, name="ViT-L-14 (random)", device=dev.dev, dtype=dt, batch_size=bs)
        dev.reset_peak()
        if path == "PIL":
            def run():
                enc.embed_images(pil)
            note = "embed_images(PIL), PIL preprocessing on the CPU (the annotate stage before issue 24)"
        elif path == "annotate":
            def run():
                enc.embed_images(pil, prepared=enc.prepare_images(pil))
            note = ("the annotate stage's path now: prepare_images (decode-thread work: uint8 tensors on CUDA, "
                    "PIL elsewhere) + embed_images (resize + normalise on the GPU)")
        else:
            pixels = torch.rand(n, 3, res, res, device=dev.dev)  # a pipeline's output_type="pt" images

            def run():
                enc.embed_image_tensors(pixels)
            note = "embed_image_tensors: resize + normalise on the device"
        run()  # warm-up
        dev.sync()
        t0 = time.perf_counter()
        run()
        dev.sync()
        secs = time.perf_counter() - t0
        rows.append(Row("clip", f"clip-{path.lower()}", bs, str(dt).removeprefix("torch."), images=n, seconds=secs,
                        images_per_s=n / secs, peak_mem_gib=dev.peak_gib(), note=note))
    del model
    dev.reset_peak()
    return rows


# --------------------------------------------------------------------------- report


def environment(dev: Device) -> dict:
    import diffusers
    import torch
    import transformers

    env = {"date": utc_iso(), "host": platform.node(), "python": platform.python_version(),
           "torch": torch.__version__, "cuda": torch.version.cuda, "diffusers": diffusers.__version__,
           "transformers": transformers.__version__, "cpu_cores": os.cpu_count(), "torch_threads": torch.get_num_threads()}
    if dev.cuda:
        env["device"] = torch.cuda.get_device_name(dev.dev)
        try:
            env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                           capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            env["driver"] = "unknown (nvidia-smi failed)"
        env["cudnn"] = torch.backends.cudnn.version()
    else:
        env["device"] = f"CPU ({platform.processor() or platform.machine()})"
        env["driver"] = "n/a"
    return env


def _fmt(v, spec: str, none: str = "n/a") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return none
    return format(v, spec)


def _num(v: float) -> str:
    """4 significant digits, without exponents for large values (tiny configs give small ones)."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def format_report(env: dict, floors: dict, rows: list[Row], args) -> str:
    lines = [f"generation benchmark: {env['date']}, {env['host']}",
             f"device {env['device']}, driver {env['driver']}, torch {env['torch']} (CUDA {env['cuda']}), "
             f"diffusers {env['diffusers']}, transformers {env['transformers']}, {env['cpu_cores']} CPU cores",
             f"steps {f'{args.steps}, every model' if args.steps else 'per model (table)'}, guidance per model "
             f"(guidance batch 2: classifier-free), {'tiny configs' if args.tiny else 'published configs'}, "
             f"random weights; peak {_fmt(args._peak, '.1f')} TFLOP/s ({args._peak_source}); prompts of "
             f"{', '.join(args.suites)}", ""]
    if floors:
        lines += [markdown_table(["model", "px", "steps", "denoiser fwd GFLOP/img", "denoiser evals", "guidance batch",
                                  "VAE decode GFLOP", "text GFLOP/prompt", "TFLOP/image", "floor images/s"],
                                 (_floor_cells(m, f) for m, f in floors.items()), align="l" + "r" * 9), ""]
    if rows:
        lines.append(markdown_table(["model", "config", "batch", "dtype", "images/s", "s/image", "peak GiB",
                                     "% of floor", "vs batch1-fp16", "note"], (_row_cells(r) for r in rows),
                                    align="llrlrrrrrl"))
    return "\n".join(lines)


def _floor_cells(model: str, f: dict) -> list[str]:
    """One model's row of the FLOP floor table."""
    if "per_image" not in f:
        return [model, str(f["resolution"]), f"failed: {f.get('error')}", *[""] * 7]
    fwd = f.get("denoiser_forward")
    return [model, str(f["resolution"]), str(f.get("steps", "")), _num(fwd / 1e9) if fwd else "",
            str(f.get("denoiser_evaluations", "")), str(f.get("guidance_batch", "")),
            _num(f["vae_decode"] / 1e9) if "vae_decode" in f else "", _num(f["text"] / 1e9) if "text" in f else "",
            _num(f["per_image"] / 1e12), _fmt(f.get("floor_images_per_s"), ",.2f")]


def _row_cells(r) -> list[str]:
    """One measured configuration's row of the throughput table."""
    if r.error:
        return [r.model, r.config, str(r.batch), r.dtype, "failed", *[""] * 4, str(r.error)]
    return [r.model, r.config, str(r.batch), r.dtype, f"{r.images_per_s:.3f}", f"{1 / r.images_per_s:.3f}",
            _fmt(r.peak_mem_gib, ".2f"), _fmt(r.pct_of_floor, ".1f"), _fmt(r.speedup, ".2f"), r.note]


# --------------------------------------------------------------------------- main


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS, help="models to measure")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help=f"comma-separated configs (default all): {','.join(CONFIGS)}")
    ap.add_argument("--steps", type=int, default=None,
                    help=f"denoising steps of every model (default: the model's, 50 for SD 1.5 / 2.1 / XL, 28 for "
                         f"flux-dev, 40 for sd35-medium; {STEPS_TINY} with --tiny)")
    ap.add_argument("--n-images", type=int, default=None, help="images timed per row (default 32; 4 with --tiny)")
    ap.add_argument("--runner-batches", type=int, default=4,
                    help="static batches the runner rows at --batch-size auto time (default 4: 128 images at "
                         "SD 1.5's batch of 32; gpu_check's sdxl part asks for 1: 128 SDXL images at 1024 px "
                         "did not finish in its budget on an H200)")
    ap.add_argument("--batch-size", type=int, default=8,
                    help="batch of the combined / VAE rows, the static batch of the compile-modes / compile-vae "
                         "rows and the DiTs' batched-bf16 row (default 8)")
    ap.add_argument("--dit-max-batch", type=int, default=4,
                    help="the DiTs' runner row: the most images --batch-size auto may choose (default 4; the "
                         "runner's own cap is 32)")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=None,
                    help="batch sizes of batch-sweep (default 1 2 4 8 16; 1 2 with --tiny)")
    ap.add_argument("--device", default=None, help="cuda (default when present), cuda:N or cpu")
    ap.add_argument("--tiny", action="store_true", help="tiny configs on the CPU (few steps, 64 px): the CI path")
    ap.add_argument("--flops-only", action="store_true", help="print FLOPs and floors only (meta device, no weights)")
    ap.add_argument("--peak-tflops", type=float, default=None, help="dense bf16 peak TFLOP/s of the device")
    ap.add_argument("--compile-mode", default="max-autotune-no-cudagraphs",
                    help="torch.compile mode for the compile rows (default max-autotune-no-cudagraphs)")
    ap.add_argument("--clip-images", type=int, default=None, help="images per CLIP row (default 1024; 16 with --tiny)")
    ap.add_argument("--clip-batch", type=int, default=256, help="the larger CLIP batch (default 256)")
    ap.add_argument("--clip-resolution", type=int, default=512, help="pixels of the images CLIP embeds (default 512)")
    ap.add_argument("--out", help="folder for generation.json and generation.md")
    add_suites_option(ap, 2, "suites whose prompts are generated")
    args = ap.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        ap.error(f"unknown config {unknown[0]!r}; use: {', '.join(CONFIGS)}")
    args.configs = configs
    if args.tiny and args.steps is None:
        args.steps = STEPS_TINY
    args.n_images = args.n_images or (4 if args.tiny else 32)
    args.batch_sizes = args.batch_sizes or ([1, 2] if args.tiny else [1, 2, 4, 8, 16])
    args.clip_images = args.clip_images or (16 if args.tiny else 1024)
    if args.tiny:
        args.batch_size = min(args.batch_size, 2)
        args.clip_batch = min(args.clip_batch, 8)
    for name in ("steps", "n_images", "batch_size", "clip_images", "clip_batch", "dit_max_batch", "runner_batches"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if any(b < 1 for b in args.batch_sizes):
        ap.error("--batch-sizes must be >= 1")
    import torch

    if args.device is None:
        args.device = "cpu" if args.tiny or args.flops_only or not torch.cuda.is_available() else "cuda"
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        ap.error(f"--device {args.device} was asked for but no CUDA GPU is available; use --tiny for the CPU path")
    if not args.tiny and not args.flops_only and not args.device.startswith("cuda"):
        ap.error("real-size models need a GPU (--device cuda); use --tiny on a CPU, or --flops-only")
    return args


def _quiet_libraries() -> None:
    import diffusers
    import transformers

    for lib in (diffusers, transformers):  # one progress line per row is enough
        lib.utils.logging.disable_progress_bar()
        lib.utils.logging.set_verbosity_error()


def model_configs(args, dev: Device, env: dict) -> dict[str, dict]:
    """The configs of the pipeline models asked for; sets the peak, guidance, steps and prompts on ``args``."""
    args._peak, args._peak_source = (peak_tflops(env["device"], args.peak_tflops) if dev.cuda or args.peak_tflops
                                     else (None, "CPU: no peak table, pass --peak-tflops"))
    if args.flops_only and not dev.cuda and not args.peak_tflops:
        args._peak, args._peak_source = 989.4, "H100 SXM dense bf16 (data sheet), assumed for --flops-only"
    cfgs = {m: load_config(m) for m in PIPELINE_MODELS if m in args.models}
    if args.tiny:
        cfgs = {m: tiny_config(c) for m, c in cfgs.items()}
    args._guidance = {m: c.get("guidance_scale", 5.0 if c["pipeline"] == "StableDiffusionXLPipeline" else 7.5)
                      for m, c in cfgs.items()}
    args._steps = {m: args.steps or c.get("steps", 50) for m, c in cfgs.items()}
    args._prompts = _prompts(args.suites, max(args.batch_sizes + [args.batch_size, 16]))
    args._mode_reference = {}  # model -> images of the compile-modes "default" row
    return cfgs


def model_floors(cfgs: dict[str, dict], args) -> dict[str, dict]:
    """FLOPs per image and the arithmetic floor of each model (and CLIP's)."""
    floors = {}
    for m, c in cfgs.items():
        try:
            f = flops_per_image(c, args._steps[m])
            f["floor_images_per_s"] = args._peak * 1e12 / f["per_image"] if args._peak else None
        except Exception as exc:  # noqa: BLE001 - a model the counter cannot trace is a row, not the end of the run
            f = {"error": _error(exc), "floor_images_per_s": None}
        f["resolution"] = c["resolution"]
        floors[m] = f
    if "clip" in args.models:
        fl = clip_flops(tiny=args.tiny)
        floors["clip"] = {"resolution": 32 if args.tiny else 224, "per_image": fl,
                          "floor_images_per_s": args._peak * 1e12 / fl if args._peak else None}
    return floors


def _finish(rows: list[Row], model: str, floors: dict, base: float | None) -> None:
    """Each row's share of the floor and speed-up over ``base`` images/s, printed as it comes."""
    for r in rows:
        if not r.error:
            fl = floors[model]["floor_images_per_s"]
            r.pct_of_floor = 100 * r.images_per_s / fl if fl else None
            r.speedup = r.images_per_s / base if base else None
        print(f"[{model}] {r.config} batch {r.batch}: "
              f"{'failed: ' + r.error if r.error else f'{r.images_per_s:.3f} images/s'}", file=sys.stderr)


def measure_unet(m: str, c: dict, args, dev: Device, floors: dict, work: Path, checkpoint=None) -> list[Row]:
    """Every config of a UNet model, from a folder built from its config; batch1-fp16 first (the
    base); ``checkpoint(rows)`` after each config."""
    import torch

    folder = build_pipeline_folder(c, work / m, args.device)
    runner_dtype = str(torch.float32 if not dev.cuda else
                       (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16))
    runner_dtype = runner_dtype.removeprefix("torch.")
    base = None
    rows: list[Row] = []
    for config in ["batch1-fp16"] + [k for k in args.configs if k != "batch1-fp16"]:
        args._config = config
        try:
            if config in RUNNER_ROWS:
                got = [measure_runner(m, folder, args, dev)]
            elif config in MODE_ROWS:
                got = measure_modes(m, folder, config, args, dev)
            else:
                got = [measure_variant(m, folder, c, v, args, dev) for v in variants(config, args, runner_dtype)]
        except Exception as exc:  # a failed optimisation is a row, not the end of the run
            got = [Row(m, config, 0, "", error=_error(exc))]
        for r in got:
            r.config = config
        if config == "batch1-fp16":
            base = next((r.images_per_s for r in got if not r.error), base)
        _finish(got, m, floors, base)
        if config in args.configs:
            rows += got
            if checkpoint:
                checkpoint(rows)
    shutil.rmtree(folder, ignore_errors=True)
    return rows


def measure_all(cfgs: dict[str, dict], floors: dict, args, dev: Device, checkpoint=None) -> list[Row]:
    """Every row asked for; ``checkpoint(rows)`` after each config and model (the rows so far)."""
    rows: list[Row] = []
    checkpoint = checkpoint or (lambda got: None)
    work = Path(tempfile.mkdtemp(prefix="t2ibench-bench-"))
    try:
        for m, c in cfgs.items():
            print(f"[{m}] building from {'tiny ' if args.tiny else ''}config ...", file=sys.stderr)
            if is_dit(c):  # no folder (34 GB for FLUX): DIT_ROWS and the runner row on the pipeline built in memory
                got = measure_dit(m, c, args, dev)
                _finish(got, m, floors, next((r.images_per_s for r in got if r.config == DIT_ROWS[0][0]
                                              and not r.error), None))
                rows += got
            else:
                rows += measure_unet(m, c, args, dev, floors, work, lambda got: checkpoint(rows + got))
            checkpoint(rows)
        if "clip" in args.models:
            args._config = "clip"
            clip_rows = measure_clip(args, dev)
            fl = floors["clip"]["floor_images_per_s"]
            for r in clip_rows:
                r.pct_of_floor = 100 * r.images_per_s / fl if fl else None
            rows += clip_rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def write_outputs(args, env: dict, floors: dict, rows: list[Row], complete: bool) -> str:
    """The table; with ``--out`` also generation.json / .md, rewritten as rows come in (a run
    stopped by a time limit keeps what it measured: ``complete`` false, said in the table)."""
    text = format_report(env, floors, rows, args)
    if not complete:
        text += "\n\n(partial: the rows measured so far; the run had not finished when this was written)"
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        doc = {"environment": env, "complete": complete,
               "args": {k: v for k, v in vars(args).items() if not k.startswith("_")},
               "peak_tflops": args._peak, "peak_source": args._peak_source, "floors": floors,
               "rows": [asdict(r) for r in rows]}
        (out / "generation.json").write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
        (out / "generation.md").write_text(text + "\n", encoding="utf-8")
    return text


def main(argv=None) -> int:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")  # random weights: NaN casts in postprocessing, etc.
    _quiet_libraries()
    dev = Device(args.device)
    env = environment(dev)
    cfgs = model_configs(args, dev, env)
    floors = model_floors(cfgs, args)
    checkpoint = functools.partial(write_outputs, args, env, floors, complete=False)
    rows = [] if args.flops_only else measure_all(cfgs, floors, args, dev, checkpoint)
    print(write_outputs(args, env, floors, rows, complete=True))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())

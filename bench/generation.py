"""Benchmark: image generation and CLIP embedding speed, on a GPU or, with --tiny, a CPU.

Builds SD 1.5 (512 px), SD 2.1 (768-v) and SDXL base (1024 px) pipelines and CLIP ViT-L/14
from their published configs (``bench/configs/*.json``) with random weights (the compute
is that of the real weights), and measures in one run, per model:

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
  ``max-autotune-no-cudagraphs``, bf16 + channels-last at ``--batch-size``), ``compile-vae``
  (UNet and VAE decoder compiled), ``vae-tiling``, ``vae-slicing``; and ``combined`` (bf16 +
  channels-last + compile at ``--batch-size``);
* ``clip``: ViT-L/14 image embeddings from PIL images (CPU preprocessing, the annotate
  stage's path before issue 24: ``clip-pil``), the annotate stage's path now (``clip-annotate``:
  uint8 tensors from the decode threads, resize and normalise on the GPU), and from the
  float tensors a pipeline holds (``OpenClipEncoder.embed_image_tensors``: ``clip-tensor``).

The arithmetic floor per model comes from ``torch.utils.flop_counter.FlopCounterMode`` on
the actual modules (one UNet forward at the guidance batch, x the UNet evaluations the
scheduler makes for the steps, + VAE decode + text encoder), divided by the GPU's dense
bf16 peak (table below, or ``--peak-tflops``).

    python bench/generation.py --models sd15 sd2 sdxl clip --device cuda --out bench-results/
    python bench/generation.py --tiny                     # tiny configs on the CPU (CI)
    python bench/generation.py --flops-only               # real-size FLOPs per image, no weights (meta device)
"""

from __future__ import annotations

import argparse
import contextlib
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmark.models import load_text_to_image  # noqa: E402
from benchmark.models.clip_tokenizer import build_clip_tokenizer  # noqa: E402
from benchmark.models.device import resolve_dtype  # noqa: E402
from benchmark.models.encoders import OpenClipEncoder  # noqa: E402
from benchmark.models.tiny import TINY_CLIP_CONFIG  # noqa: E402
from benchmark.runner.batch_size import resolve_batch_size  # noqa: E402
from benchmark.runner.generate import DEFAULT_BATCH_SIZE, build_probes, generate  # noqa: E402

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
PIPELINE_MODELS = ("sd15", "sd2", "sdxl")
MODELS = PIPELINE_MODELS + ("clip",)
CONFIGS = ("runner", "runner-no-compile", "runner-batch4", "batch1-fp16", "bf16", "sdpa", "sdpa-backends",
           "channels-last", "fused-qkv", "batch-sweep", "compile", "compile-modes", "compile-vae", "vae-tiling",
           "vae-slicing", "combined")
#: the runner rows: extra arguments of load_text_to_image / generate, and what they show
RUNNER_ROWS = {
    "runner": ({}, "auto", "the default path: auto batch, bf16, channels-last, fused QKV, compiled UNet, static batch"),
    "runner-no-compile": ({"compile": False}, "auto", "the default path with --no-compile"),
    "runner-batch4": ({"compile": False}, 4, "the default before auto batch and compile (batch 4, no compile)"),
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
    return json.loads((CONFIG_DIR / f"{name}.json").read_text(encoding="utf-8"))


def tiny_config(cfg: dict) -> dict:
    """The same architecture (block types, number of blocks, text encoders, scheduler), test-sized."""
    cfg = json.loads(json.dumps(cfg))
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


def build_modules(cfg: dict):
    """UNet, VAE and text encoder(s) from a config, random init on the current default device."""
    import diffusers
    import transformers

    mods = {"unet": diffusers.UNet2DConditionModel(**_clean(cfg["unet"])),
            "vae": diffusers.AutoencoderKL(**_clean(cfg["vae"]))}
    for key in ("text_encoder", "text_encoder_2"):
        if key in cfg:
            cls = getattr(transformers, cfg[key].get("_class_name", "CLIPTextModel"))
            mods[key] = cls(transformers.CLIPTextConfig(**_clean(cfg[key])))
    return mods


def build_pipeline_folder(cfg: dict, folder: Path, device: str) -> Path:
    """A diffusers pipeline from ``cfg`` with random weights, saved (fp16 on a GPU) to ``folder``."""
    import diffusers
    import torch

    torch.manual_seed(0)
    with torch.device(device):
        mods = build_modules(cfg)
    toks = {}
    for key in ("tokenizer", "tokenizer_2"):
        if key in cfg:
            tok = build_clip_tokenizer(folder / f"_{key}_files", pad_token=cfg[key]["pad_token"])
            shutil.rmtree(folder / f"_{key}_files")
            toks[key] = tok
    # from_config, as from_pretrained does: published scheduler configs carry keys some classes ignore
    scheduler = getattr(diffusers, cfg["scheduler"]["_class_name"]).from_config(_clean(cfg["scheduler"]))
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


def unet_evaluations(cfg: dict, steps: int) -> int:
    """UNet forward passes one generation of ``steps`` makes: the length of the
    scheduler's own timestep list (the pipelines call the UNet once per timestep, both
    halves of classifier-free guidance in one batch). Not always ``steps``: PNDM, SD 1.5's
    default, makes steps + 1 (its PLMS warm-up evaluates the first timestep twice)."""
    import diffusers

    scheduler = getattr(diffusers, cfg["scheduler"]["_class_name"]).from_config(_clean(cfg["scheduler"]))
    scheduler.set_timesteps(int(steps))
    return len(scheduler.timesteps)


def flops_per_image(cfg: dict, steps: int, guidance: bool = True) -> dict:
    """FLOPs per image on the meta device (no weights, no compute): UNet x the scheduler's
    evaluations (:func:`unet_evaluations`), VAE decode, text."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        mods = build_modules(cfg)
    res = int(cfg["resolution"])
    lat = res // 8
    cfg_batch = 2 if guidance else 1
    out = {}
    with torch.device("meta"), torch.no_grad():
        text_dims = [cfg[k]["hidden_size"] for k in ("text_encoder", "text_encoder_2") if k in cfg]
        ids = torch.zeros(cfg_batch, 77, dtype=torch.long)
        with FlopCounterMode(display=False) as fc:
            for k in ("text_encoder", "text_encoder_2"):
                if k in mods:
                    mods[k](ids)
        out["text"] = fc.get_total_flops()
        x = torch.zeros(cfg_batch, 4, lat, lat)
        ctx = torch.zeros(cfg_batch, 77, sum(text_dims))
        kw = {}
        if cfg["unet"].get("addition_embed_type") == "text_time":
            pooled = cfg["text_encoder_2"]["projection_dim"]
            kw["added_cond_kwargs"] = {"text_embeds": torch.zeros(cfg_batch, pooled),
                                       "time_ids": torch.zeros(cfg_batch, 6)}
        with FlopCounterMode(display=False) as fc:
            mods["unet"](x, torch.tensor(1), encoder_hidden_states=ctx, **kw)
        out["unet_forward"] = fc.get_total_flops() / cfg_batch  # per image
        with FlopCounterMode(display=False) as fc:
            mods["vae"].decode(torch.zeros(1, 4, lat, lat))
        out["vae_decode"] = fc.get_total_flops()
    out["text"] /= cfg_batch
    out["steps"] = int(steps)
    out["unet_evaluations"] = unet_evaluations(cfg, steps)
    out["per_image"] = (out["unet_forward"] * cfg_batch * out["unet_evaluations"] + out["vae_decode"]
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
        gc.collect()
        if self.cuda:
            self.torch.cuda.empty_cache()
            self.torch.cuda.reset_peak_memory_stats(self.dev)

    def peak_gib(self) -> float | None:
        return self.torch.cuda.max_memory_allocated(self.dev) / 2 ** 30 if self.cuda else None


def _prompts(n: int) -> list[str]:
    probes = build_probes(["gep_neutral", "gep_explicit"])
    return [str(p) for p in probes["prompt"].head(n)] + [str(probes["prompt"].iloc[0])] * max(0, n - len(probes))


def time_calls(dev: Device, call, n_images: int, batch: int) -> tuple[int, float]:
    """Warm up with one call, then time enough calls for ``n_images`` (rounded up to whole batches)."""
    call(batch)
    dev.sync()
    n_calls = max(1, math.ceil(n_images / batch))
    t0 = time.perf_counter()
    for _ in range(n_calls):
        call(batch)
    dev.sync()
    return n_calls * batch, time.perf_counter() - t0


def pipeline_call(pipe, prompts, steps, guidance, res, sdpa_backend: str | None = None):
    import torch

    def call(batch):
        gens = [torch.Generator("cpu").manual_seed(i) for i in range(batch)]
        backend = contextlib.nullcontext()
        if sdpa_backend:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            backend = sdpa_kernel(getattr(SDPBackend, sdpa_backend))
        with torch.inference_mode(), backend:
            pipe(prompt=prompts[:batch], generator=gens, num_inference_steps=steps, guidance_scale=guidance,
                 height=res, width=res, output_type="pil")
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
    if config == "compile-modes":
        return [dict(batch=b, dtype=runner_dtype, channels_last=True, compile=True, compile_mode=m, note=f"mode {m}")
                for m in ("default", "reduce-overhead", "max-autotune-no-cudagraphs")]
    if config == "compile-vae":
        return [dict(batch=b, dtype=runner_dtype, channels_last=True, compile=True, compile_mode="default",
                     compile_vae=True, note="UNet + VAE decoder compiled, mode default")]
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
        call = pipeline_call(pipe, args._prompts, args.steps, args._guidance[model], cfg["resolution"],
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
    overrides = {"num_inference_steps": args.steps} if args.tiny or args.steps != 50 else {}
    m = load_text_to_image(str(folder), device=str(dev.dev), **speed, **overrides)
    probes = build_probes(["gep_neutral", "gep_explicit"])
    run_root = Path(tempfile.mkdtemp(prefix="t2ibench-bench-run-"))
    try:
        t0 = time.perf_counter()
        batch, _ = resolve_batch_size(requested, m)  # the size generate() will find, to size the run
        probe_s = time.perf_counter() - t0 if requested == "auto" else 0.0
        if not m.compiled and requested != "auto":  # uncompiled: one untimed batch loads kernels
            m.generate(list(probes["prompt"].head(batch)), list(probes["seed"].head(batch)))
        dev.sync()
        n = max(args.n_images, (4 if requested == "auto" and not args.tiny else 1) * batch)
        n = min(len(probes), math.ceil(n / batch) * batch)
        t0 = time.perf_counter()
        summary = generate(run_root / "run", m, probes.head(n), batch_size=batch, progress=False)
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

    env = {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "host": platform.node(), "python": platform.python_version(),
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
             f"steps {args.steps}, guidance on, {'tiny configs' if args.tiny else 'published configs'}, "
             f"random weights; peak {_fmt(args._peak, '.1f')} TFLOP/s ({args._peak_source})", ""]
    if floors:
        lines += ["| model | px | UNet fwd GFLOP/img | UNet evals | VAE decode GFLOP | text GFLOP/prompt | TFLOP/image "
                  "| floor images/s |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for m, f in floors.items():
            lines.append(f"| {m} | {f['resolution']} | {_num(f.get('unet_forward', 0) / 1e9)} | "
                         f"{f.get('unet_evaluations', '')} | "
                         f"{_num(f.get('vae_decode', 0) / 1e9)} | {_num(f.get('text', 0) / 1e9)} | "
                         f"{_num(f['per_image'] / 1e12)} | {_fmt(f.get('floor_images_per_s'), ',.2f')} |")
        lines.append("")
    if rows:
        lines += ["| model | config | batch | dtype | images/s | s/image | peak GiB | % of floor | vs batch1-fp16 | note |",
                  "|---|---|---:|---|---:|---:|---:|---:|---:|---|"]
        for r in rows:
            if r.error:
                lines.append(f"| {r.model} | {r.config} | {r.batch} | {r.dtype} | failed | | | | | {r.error} |")
                continue
            lines.append(f"| {r.model} | {r.config} | {r.batch} | {r.dtype} | {r.images_per_s:.3f} | "
                         f"{1 / r.images_per_s:.3f} | {_fmt(r.peak_mem_gib, '.2f')} | {_fmt(r.pct_of_floor, '.1f')} | "
                         f"{_fmt(r.speedup, '.2f')} | {r.note} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS, help="models to measure")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help=f"comma-separated configs (default all): {','.join(CONFIGS)}")
    ap.add_argument("--steps", type=int, default=None, help=f"denoising steps (default 50; {STEPS_TINY} with --tiny)")
    ap.add_argument("--n-images", type=int, default=None, help="images timed per row (default 32; 4 with --tiny)")
    ap.add_argument("--batch-size", type=int, default=8, help="batch of the combined / VAE rows (default 8)")
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
    args = ap.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        ap.error(f"unknown config {unknown[0]!r}; use: {', '.join(CONFIGS)}")
    args.configs = configs
    args.steps = args.steps or (STEPS_TINY if args.tiny else 50)
    args.n_images = args.n_images or (4 if args.tiny else 32)
    args.batch_sizes = args.batch_sizes or ([1, 2] if args.tiny else [1, 2, 4, 8, 16])
    args.clip_images = args.clip_images or (16 if args.tiny else 1024)
    if args.tiny:
        args.batch_size = min(args.batch_size, 2)
        args.clip_batch = min(args.clip_batch, 8)
    for name in ("steps", "n_images", "batch_size", "clip_images", "clip_batch"):
        if getattr(args, name) < 1:
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


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    warnings.filterwarnings("ignore")  # random weights: NaN casts in postprocessing, etc.
    import diffusers
    import transformers

    for lib in (diffusers, transformers):  # one progress line per row is enough
        lib.utils.logging.disable_progress_bar()
        lib.utils.logging.set_verbosity_error()
    dev = Device(args.device)
    env = environment(dev)
    args._peak, args._peak_source = (peak_tflops(env["device"], args.peak_tflops) if dev.cuda or args.peak_tflops
                                     else (None, "CPU: no peak table, pass --peak-tflops"))
    if args.flops_only and not dev.cuda and not args.peak_tflops:
        args._peak, args._peak_source = 989.4, "H100 SXM dense bf16 (data sheet), assumed for --flops-only"
    cfgs = {m: load_config(m) for m in PIPELINE_MODELS if m in args.models}
    if args.tiny:
        cfgs = {m: tiny_config(c) for m, c in cfgs.items()}
    args._guidance = {m: (5.0 if c["pipeline"] == "StableDiffusionXLPipeline" else 7.5) for m, c in cfgs.items()}
    args._prompts = _prompts(max(args.batch_sizes + [args.batch_size, 16]))

    floors = {}
    for m, c in cfgs.items():
        f = flops_per_image(c, args.steps)
        f["resolution"] = c["resolution"]
        f["floor_images_per_s"] = args._peak * 1e12 / f["per_image"] if args._peak else None
        floors[m] = f
    if "clip" in args.models:
        fl = clip_flops(tiny=args.tiny)
        floors["clip"] = {"resolution": 32 if args.tiny else 224, "per_image": fl, "unet_forward": 0,
                          "floor_images_per_s": args._peak * 1e12 / fl if args._peak else None}

    rows: list[Row] = []
    work = Path(tempfile.mkdtemp(prefix="t2ibench-bench-"))
    try:
        if not args.flops_only:
            for m, c in cfgs.items():
                print(f"[{m}] building from {'tiny ' if args.tiny else ''}config ...", file=sys.stderr)
                folder = build_pipeline_folder(c, work / m, args.device)
                runner_dtype = str(torch.float32 if not dev.cuda else
                                   (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16))
                runner_dtype = runner_dtype.removeprefix("torch.")
                base = None
                order = ["batch1-fp16"] + [k for k in args.configs if k != "batch1-fp16"]
                for config in order:
                    if config not in args.configs and config != "batch1-fp16":
                        continue
                    args._config = config
                    try:
                        if config in RUNNER_ROWS:
                            got = [measure_runner(m, folder, args, dev)]
                        else:
                            got = [measure_variant(m, folder, c, v, args, dev)
                                   for v in variants(config, args, runner_dtype)]
                    except Exception as exc:  # a failed optimisation is a row, not the end of the run
                        got = [Row(m, config, 0, "", error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")]
                    for r in got:
                        r.config = config
                        if config == "batch1-fp16" and not r.error:
                            base = r.images_per_s
                        if not r.error:
                            fl = floors[m]["floor_images_per_s"]
                            r.pct_of_floor = 100 * r.images_per_s / fl if fl else None
                            r.speedup = r.images_per_s / base if base else None
                        print(f"[{m}] {config} batch {r.batch}: "
                              f"{'failed: ' + r.error if r.error else f'{r.images_per_s:.3f} images/s'}",
                              file=sys.stderr)
                    if config in args.configs:
                        rows += got
                shutil.rmtree(folder, ignore_errors=True)
            if "clip" in args.models:
                args._config = "clip"
                clip_rows = measure_clip(args, dev)
                fl = floors["clip"]["floor_images_per_s"]
                for r in clip_rows:
                    r.pct_of_floor = 100 * r.images_per_s / fl if fl else None
                rows += clip_rows
    finally:
        shutil.rmtree(work, ignore_errors=True)

    text = format_report(env, floors, rows, args)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        doc = {"environment": env, "args": {k: v for k, v in vars(args).items() if not k.startswith("_")},
               "peak_tflops": args._peak, "peak_source": args._peak_source, "floors": floors,
               "rows": [asdict(r) for r in rows]}
        (out / "generation.json").write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
        (out / "generation.md").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())

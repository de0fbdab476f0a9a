"""Diffusers pipelines as text-to-image models: :class:`DiffusersTextToImage` (the call
settings, the CUDA speed set-up, the batch-size probe, one CPU ``torch.Generator`` per image)
and ``load_diffusers`` (the pipeline from a folder or Hub ID, on its device or offloaded)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmark.present.progress import library_bars_off

from .cuda_speed import (
    apply_cuda_layout, apply_offload, choose_offload, compile_pipeline, probe_batch_size, resolve_compile_mode,
    uncompile_pipeline,
)
from .call_settings import PIPELINE_CALL_ARGUMENTS, SCHEDULER_SETTINGS, check_call_settings, named_parameters
from .component_weights import load_components
from .guidance import GuidanceCheck, guidance_record
from .lora import load_loras
from .single_file import load_single_file
from .model_cards import CardSource, choose_call_settings
from .pipeline_classes import AUTO_LOADER, CLASS_LOADER
from .errors import MalformedSpecError
from .generation_output import GenerationOutput
from .text_to_image_base import TextToImageModel
from .tiny_sd import TINY_SD_SETTINGS


def _family(pipe) -> str:
    name = type(pipe).__name__
    if "StableDiffusion3" in name:
        return "sd3"
    if "StableDiffusionXL" in name:
        return "sdxl"
    if name.startswith("StableDiffusion"):
        encoder = getattr(pipe, "text_encoder", None)
        hidden = getattr(getattr(encoder, "config", None), "hidden_size", None)
        return "sd2" if hidden == 1024 else "sd1"
    return "other"


def _native_resolution(pipe) -> int | None:
    """The resolution the pipeline makes when none is asked: its denoiser's sample size (a UNet's
    ``sample_size``, a DiT pipeline's ``default_sample_size``) times the VAE's scale factor, as
    the pipelines compute it themselves."""
    factor = getattr(pipe, "vae_scale_factor", None)
    sample = getattr(pipe, "default_sample_size", None)
    if not isinstance(sample, int):
        unet = getattr(pipe, "unet", None)
        sample = getattr(getattr(unet, "config", None), "sample_size", None)
    if isinstance(sample, (list, tuple)) and sample:
        sample = sample[0]
    if isinstance(sample, int) and isinstance(factor, int):
        return sample * factor
    return None


def _component_config(pipe) -> Callable[[str], dict | None]:
    def read(component: str) -> dict | None:
        config = getattr(getattr(pipe, component, None), "config", None)
        return dict(config) if config is not None else None

    return read


def _replace_scheduler(pipe, settings: dict) -> None:
    """The scheduler settings (call_settings.SCHEDULER_SETTINGS: ``scheduler=NAME`` and config
    values such as ``timestep_spacing="trailing"``, from ``--set`` or a card row), taken out of
    ``settings``: the pipeline's scheduler rebuilt as that class with those config values."""
    import diffusers

    scheduler = settings.pop("scheduler", None)
    config = {k: settings.pop(k) for k in SCHEDULER_SETTINGS if k in settings}
    if scheduler is None and not config:
        return
    if getattr(pipe, "scheduler", None) is None:
        raise MalformedSpecError(f"{type(pipe).__name__} has several schedulers and none called scheduler: "
                                 "--set scheduler= cannot say which to replace")
    cls = getattr(diffusers, str(scheduler), None) if scheduler is not None else type(pipe.scheduler)
    if cls is None or not hasattr(cls, "from_config"):
        raise MalformedSpecError(f"unknown diffusers scheduler {scheduler!r}")
    pipe.scheduler = cls.from_config(pipe.scheduler.config, **config)


def _scheduler_names(pipe) -> str | dict[str, str]:
    """The scheduler's class; a pipeline with several (unCLIP: prior, decoder, super-resolution)
    gives each by component name."""
    from diffusers import SchedulerMixin

    found = {name: type(c).__name__ for name, c in pipe.components.items() if isinstance(c, SchedulerMixin)}
    if "scheduler" in found:
        return found["scheduler"]
    return found if len(found) != 1 else next(iter(found.values()))


def _attention_name() -> str:
    import torch.nn.functional as F

    return "sdpa" if hasattr(F, "scaled_dot_product_attention") else "eager"


@dataclass(frozen=True)
class PipelineIdentity:
    """Which model a loaded pipeline is: ``model_id`` and ``revision`` as asked, the Hub
    ``commit`` it resolved to, its ``family`` (found from the pipeline when None), whether it is
    a built-in random-weight model, the identity records of its LoRAs and component checkpoints
    (``adapters``: a model with a LoRA is another model than its base), the model card rows its
    settings may come from (``cards``: model_cards.py) and how a local folder was matched to one
    (``card_match``: base_model.py)."""

    model_id: str
    revision: str | None = None
    commit: str | None = None
    family: str | None = None
    is_builtin: bool = False
    adapters: Sequence[dict] = ()
    cards: Sequence[CardSource] = ()
    card_match: str | None = None
    checkpoint: dict | None = None  # a single-file checkpoint's identity record (single_file.py): the model is the file
    quantization: dict | None = None  # how its weights are quantized (quantization.py), or None


@dataclass(frozen=True)
class SpeedChoice:
    """How fast to run on CUDA (cuda_speed.py): ``compile`` (None: the device's default, False:
    off, or a mode), ``compile_vae``, ``offload`` (the mode loading chose) and ``offload_auto``
    (how ``auto`` chose it)."""

    compile: bool | str | None = None
    compile_vae: bool = False
    offload: str = "none"
    offload_auto: dict | None = None


#: pipelines that make another size than the one asked: HiDream rescales any height x width to its
#: native area, keeping the aspect ratio (pipeline_hidream_image.py, S_max)
RESIZING_PIPELINES = frozenset({"HiDreamImagePipeline"})


class DiffusersTextToImage(TextToImageModel):
    """A diffusers pipeline; ``settings`` are the call arguments plus provenance."""

    def __init__(self, pipe, identity: PipelineIdentity, *, device, dtype, overrides: dict[str, Any] | None = None,
                 speed: SpeedChoice = SpeedChoice()):
        self.pipe = pipe
        self.model_id = identity.model_id
        self.revision = identity.revision
        self.is_builtin = is_builtin = identity.is_builtin
        self.device = device
        self.dtype = dtype
        family = identity.family or _family(pipe)
        overrides = dict(overrides or {})
        # Batched kernels round differently for different batch sizes (by one grey
        # level here and there). On the CPU, where batching buys little, images are
        # generated one call each so that pixels never depend on the batch.
        self.batch_invariant = bool(overrides.pop("batch_invariant", device.type == "cpu"))

        #: the identity records of its component checkpoints and LoRAs (lora.py, component_weights.py):
        #: a model with a LoRA is another model than its base
        self.adapters = [dict(a) for a in identity.adapters]
        #: how a local folder was matched to a card table row (base_model.py), or None
        self.card_match = identity.card_match
        #: a single-file checkpoint's identity record and the weights' quantization (single_file.py,
        #: quantization.py): part of what the model is, recorded beside its id
        self.checkpoint = dict(identity.checkpoint) if identity.checkpoint else None
        self.quantization = dict(identity.quantization) if identity.quantization else None
        call = self._choose_call(overrides, cards=identity.cards, builtin=family == "tiny")
        scheduler_config = {k: call[k] for k in SCHEDULER_SETTINGS if k in call and k != "scheduler"}
        _replace_scheduler(pipe, call)  # takes the scheduler settings out of the call
        #: whether classifier-free guidance is on, and why (guidance.py); checked on the first call
        self.guidance = guidance_record(pipe, call, self.call_parameters)
        self.guidance_check = GuidanceCheck(pipe, self.guidance)

        self.settings = self._record(call, scheduler_config, family=family, commit=identity.commit,
                                     is_builtin=is_builtin)
        if self.quantization:  # quantized weights make other images: a setting of the run
            self.settings["quantization"] = self.quantization
        pipe.set_progress_bar_config(disable=True)
        if "height" not in self.call_parameters:
            # the call sets no resolution (unCLIP: its super-resolution UNet decides): record the
            # size of the images it makes, from one short call
            self.settings["image_size"] = list(self._size_made())
        elif type(pipe).__name__ in RESIZING_PIPELINES:
            self._record_size_made()
        self._set_up_speed(speed)

    def _record(self, call: dict, scheduler_config: dict, *, family: str, commit: str | None,
                is_builtin: bool) -> dict:
        """``settings``: the call arguments plus everything else that determines the images."""
        import diffusers
        import torch

        pipe, device, dtype = self.pipe, self.device, self.dtype
        checker = getattr(pipe, "safety_checker", None)
        settings = {
            **call,
            "family": family,
            "pipeline": type(pipe).__name__,
            "scheduler": _scheduler_names(pipe),
            **scheduler_config,
            "dtype": str(dtype).removeprefix("torch."),
            "device": str(device),
            "attention": _attention_name(),
            "safety_checker": checker is not None,
            "generator": "torch.Generator(cpu).manual_seed(seed), one per image",
            "batch_invariant": self.batch_invariant,
            "diffusers_version": diffusers.__version__,
            "torch_version": torch.__version__,
        }
        if self.guidance:
            settings["guidance"] = self.guidance
        if self.adapters:
            settings["adapters"] = self.adapters
        if commit:
            settings["commit"] = commit
        if is_builtin:
            settings["builtin"] = "random weights: outputs are meaningless"
        return settings

    def _choose_call(self, overrides: dict, *, cards: Sequence[CardSource], builtin: bool) -> dict:
        """The call arguments (model_cards.py: --set, the model card table, a structural hint, the
        pipeline's defaults), with the resolution always explicit; ``setting_sources`` says where
        each came from (recorded in run_config.json, printed in the plan)."""
        pipe = self.pipe
        # only named parameters of the pipeline's call (its **kwargs only takes
        # deprecated callback arguments, and would swallow typos silently)
        params = self.call_parameters = named_parameters(pipe.__call__)
        check_call_settings(pipe.__call__, overrides, what=type(pipe).__name__, reserved=PIPELINE_CALL_ARGUMENTS)
        call, self.setting_sources = choose_call_settings(
            params, pipeline_class=type(pipe).__name__, cards=cards, read_config=_component_config(pipe),
            overrides=overrides, builtin=TINY_SD_SETTINGS if builtin else None)
        native = _native_resolution(pipe)
        for key in ("height", "width"):  # always recorded: the size of the images made
            if key in params and call.get(key) is None and native:
                call[key] = native
        self.call_kwargs = call
        return call

    def _set_up_speed(self, choice: SpeedChoice) -> None:
        """CUDA speed settings (cuda_speed.py): layout now, compile once the batch is known;
        on other devices nothing changes and nothing is recorded. ``self.speed`` is what happened
        (written to run_config.json by the runner), ``settings`` what was asked."""
        compile, offload, offload_auto = choice.compile, choice.offload, choice.offload_auto
        self.compile_explicit = compile is not None and compile is not False
        if offload == "sequential" and compile is None:
            compile = False  # sequential offload moves weights inside each forward: nothing to compile
        elif offload == "sequential" and self.compile_explicit:
            raise MalformedSpecError("--offload sequential cannot be compiled (weights move inside each forward): "
                                     "use --offload model, or --no-compile")
        self.compile_mode = resolve_compile_mode(compile, self.device)
        self.compile_vae = bool(choice.compile_vae)
        self.static_batch: int | None = None
        self.compiled = False
        self.speed: dict[str, Any] = {}
        if self.device.type == "cuda":
            layout = apply_cuda_layout(self.pipe)
            self.settings.update(layout)
            self.settings["compile"] = self.compile_mode or False
            self.settings["offload"] = offload
            self.speed.update({**layout, "compile": self.compile_mode or False, "offload": offload})
            if offload_auto:
                self.speed["offload_auto"] = offload_auto

    def _record_size_made(self) -> None:
        """The pipeline makes another size than the one asked: record the size made (one short
        call) as height / width, and the size asked beside it, so results name the images' size."""
        width, height = self._size_made()
        asked = [self.settings.get("width"), self.settings.get("height")]
        if asked != [width, height]:
            self.settings.update(width=width, height=height, size_asked=asked)
            for key in ("height", "width"):
                self.setting_sources[key] = (f"{self.setting_sources.get(key, 'pipeline default')}, rescaled by "
                                             f"{type(self.pipe).__name__} to its native area")

    def _size_made(self) -> tuple[int, int]:
        """(width, height) of the images the pipeline makes, from one short call."""
        return self._call(["a photo"], [0], **self._short_call()).images[0].size

    def _short_call(self) -> dict[str, int]:
        """Two denoising steps for every stage of the pipeline (a combined pipeline's prior and
        decoder too): the batch-size probe and the compile warm-up need shapes, not images."""
        return {k: 2 for k in self.call_parameters if k.endswith("num_inference_steps")}

    def auto_batch_size(self) -> tuple[int, dict] | None:
        """The largest batch that fits the GPU at this model's resolution (probed with two
        denoising steps, uncompiled), or None off CUDA or when images are made one at a time."""
        if self.device.type != "cuda" or self.batch_invariant or self.compiled:
            return None

        def run(batch: int) -> None:
            self._call(["a photo of a person"] * batch, list(range(batch)), **self._short_call())

        return probe_batch_size(run, self.device)

    def prepare_batches(self, batch_size: int) -> None:
        """The batch size is known: pad every call to it (static shapes: one compiled graph,
        pixels independent of where a batch starts) and compile when asked. Off CUDA images
        are made one per call (``batch_invariant``) and nothing changes."""
        if not self.batch_invariant:
            self.static_batch = int(batch_size)
            self.settings["static_batch"] = self.static_batch
        if self.compile_mode and not self.compiled:
            self.speed.update(compile_pipeline(self.pipe, self.compile_mode, vae_decoder=self.compile_vae))
            self.compiled = True

    def warm_up(self) -> bool:
        """Compile now (one call at the static batch, two steps), so the compile time is
        reported apart from the time per image; False when nothing is compiled. A compile that
        fails is undone and the run goes on uncompiled, said in one line and recorded in
        ``speed`` (unless compile was asked for explicitly: then the run stops with that line)."""
        if not self.compiled:
            return False
        n = self.static_batch or 1
        try:
            self._call(["a photo of a person"] * n, list(range(n)), **self._short_call())
        except Exception as err:  # noqa: BLE001 - dynamo / inductor raise many kinds
            import torch

            if isinstance(err, torch.cuda.OutOfMemoryError):
                raise
            first = (str(err).strip().splitlines() or [""])[0][:200]
            why = f"{type(err).__name__}: {first}" if first else type(err).__name__
            modules = ", ".join(self.speed.get("compiled", []))
            if self.compile_explicit:
                raise RuntimeError(f"torch.compile of {modules} failed ({why}); run with --no-compile") from err
            uncompile_pipeline(self.pipe)
            self.compiled = False
            self.speed.update({"compile": False, "compiled": [], "compile_error": why})
            print(f"t2ibench: torch.compile of {modules} failed ({why}); generating uncompiled", file=sys.stderr)
        return True

    def _generate(self, prompts: list[str], seeds: list[int]) -> GenerationOutput:
        if self.batch_invariant and len(prompts) > 1:
            parts = [self._call([p], [s]) for p, s in zip(prompts, seeds)]
            return GenerationOutput(
                images=[im for part in parts for im in part.images],
                nsfw=[flag for part in parts for flag in part.nsfw],
            )
        n = len(prompts)
        if self.static_batch and n < self.static_batch:
            # a partial (last) batch is padded with copies of its last image, dropped after
            pad = self.static_batch - n
            out = self._call(prompts + prompts[-1:] * pad, seeds + seeds[-1:] * pad)
            return GenerationOutput(images=out.images[:n], nsfw=out.nsfw[:n])
        return self._call(prompts, seeds)

    def _call(self, prompts: list[str], seeds: list[int], **call_overrides) -> GenerationOutput:
        import torch

        # One generator per image, on the CPU: the pipeline draws each image's
        # initial latents (and any per-step noise) from that image's own generator.
        generators = [torch.Generator("cpu").manual_seed(s) for s in seeds]
        kwargs = {**self.call_kwargs, **call_overrides}
        # one negative prompt per prompt: SD 1.x / 2.x, Kandinsky 2.1 and 3 and Kolors raise TypeError for a
        # string beside a list of prompts ("should be the same type to `prompt`")
        kwargs.update({k: [v] * len(prompts) for k, v in kwargs.items()
                       if k.startswith("negative_prompt") and isinstance(v, str)})

        def call():
            return self.pipe(prompt=prompts, generator=generators, num_images_per_prompt=1, output_type="pil",
                             **kwargs)

        with torch.inference_mode():
            # the first call's denoiser rows are counted: guidance recorded is guidance run (guidance.py)
            out = self.guidance_check.run(call, len(prompts))
        flags = getattr(out, "nsfw_content_detected", None)
        nsfw = [None] * len(prompts) if flags is None else [bool(f) for f in flags]
        return GenerationOutput(images=list(out.images), nsfw=nsfw)


def load_diffusers(path_or_id: str, *, revision, device, dtype, variant=None, token=None, loader=AUTO_LOADER,
                   offload: str | None = None, cls: type | None = None, loras: Sequence = (),
                   components: Sequence = (), single_file=None, quantization=None):
    """The pipeline (through ``loader``: pipeline_classes.py; ``cls`` for CLASS_LOADER), with its
    component checkpoints in place of the base's (component_weights.py) and its LoRAs fused
    (lora.py), on ``device`` or offloaded to it (cuda_speed.choose_offload); returns
    ``(pipe, offload mode, how auto chose it)``. ``single_file``: a checked single-file checkpoint
    (single_file.py), ``path_or_id`` its base; ``quantization``: the denoiser quantized as it
    loads (quantization.py)."""
    from diffusers import AutoPipelineForText2Image, DiffusionPipeline

    library_bars_off("diffusers", "transformers")  # the generation stage draws its own bar
    built = load_components(list(components), dtype)
    kwargs: dict[str, Any] = {"dtype": dtype, **built}
    if revision:
        kwargs["revision"] = revision
    if variant:
        kwargs["variant"] = variant
    if token is not None:
        kwargs["token"] = token
    load = {AUTO_LOADER: AutoPipelineForText2Image, CLASS_LOADER: cls}.get(loader) or DiffusionPipeline
    if single_file is not None:
        loaded = load_single_file(single_file, pipeline_cls=cls, dtype=dtype, prebuilt=built,
                                  quantization_config=quantization and quantization.model_config(dtype))
        pipe = loaded if single_file.layout == "pipeline" else load.from_pretrained(path_or_id, **kwargs, **loaded)
    else:
        if quantization is not None:
            kwargs["quantization_config"] = quantization.pipeline_config(dtype)
        pipe = load.from_pretrained(path_or_id, **kwargs)
    load_loras(pipe, loras)
    mode, how = choose_offload(offload, pipe, device)
    apply_offload(pipe, mode, device)
    vae = getattr(pipe, "vae", None)
    if device.type == "cuda" and hasattr(vae, "enable_slicing"):
        # SDPA (flash / memory-efficient kernels) is diffusers' default attention on
        # torch >= 2; the VAE decodes one image at a time to bound memory at large batches.
        vae.enable_slicing()
    return pipe, mode, how

"""Single-file checkpoints: most community fine-tunes of SD 1.5, SDXL and FLUX are one
``.safetensors`` file (or a ``.gguf`` file of quantized weights), read by diffusers'
``from_single_file`` with the configs of the base model they fine-tune.

* :func:`parse_single_file`: ``--model FILE.safetensors`` (or ``.gguf``), or a Hub file written
  ``hf://ORG/NAME[@REVISION]/PATH`` or as the Hub's URL (``https://huggingface.co/ORG/NAME/blob/
  REVISION/PATH``, the form diffusers takes); pickle files (``.ckpt``, ``.bin``...) are refused;
* :func:`check_single_file`: the file found and checked (weight_files.py) and hashed; its base
  found (``--base REPO_OR_FOLDER``; else the Hub repo itself when it is a diffusers pipeline; else
  the ``base_model`` of the model card beside the file or of its repo) and the base's configs read
  offline: a local or built-in folder, or the Hub cache (online, only the small config files are
  fetched); the layout told from the header: a whole pipeline (the original layout's
  ``first_stage_model.`` / ``vae.`` VAE weights are there: SD 1.5, SDXL, SD 3 files) or the
  denoiser alone (FLUX and GGUF files, a UNet file); and the file's tensors converted with
  diffusers' own converter on PyTorch's meta device (no weights) and matched against the base's
  components built from their configs: an SDXL checkpoint named with an SD 1.5 base is refused
  in one line before anything loads;
* :func:`load_single_file`: ``PipelineClass.from_single_file(FILE, config=BASE_FOLDER,
  local_files_only=True)`` for a whole pipeline (the configs never come from the network: diffusers
  would fetch them when ``local_files_only`` finds none), or the denoiser by its class's
  ``from_single_file`` (GGUF files with ``GGUFQuantizationConfig``) handed to the base pipeline's
  ``from_pretrained``.

The model is the file, not the base: its id is the file's absolute path or ``hf://`` id, and its
identity record (:meth:`CheckedSingleFile.record`: the file's sha256, format, layout and base) is
recorded in run_config.json, results.json and the report, and keys its leaderboard row.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmark.contract.model_specs import HUB_FILE_ID, SINGLE_FILE_SUFFIXES, hub_file_id

from .base_model import read_card_data
from .builtin_cache import build_builtin, check_builtin_name
from .component_weights import shape_problem
from .errors import MalformedSpecError
from .hub_access import cached_commit, ensure_hub_model, hub_offline, is_local_folder, looks_like_path
from .lora import meta_component
from .tiny_sd import build_tiny_sd
from .weight_files import GGUF_SUFFIX, WeightsHeader, check_weights_file, read_header
from .weights_ref import ResolvedWeights, WeightsRef, resolve_weights

__all__ = ["SingleFileSpec", "BaseConfigs", "CheckedSingleFile", "parse_single_file", "check_single_file",
           "load_single_file", "WHAT", "LAYOUTS"]

WHAT = "single-file checkpoint"
#: files that unpickle code when read: never loaded
PICKLE_SUFFIXES = (".ckpt", ".pt", ".pth", ".bin", ".pkl")
#: the base's files a single-file load reads (diffusers' own pattern for them): no weights
CONFIG_PATTERNS = ["*.json", "**/*.json", "*.txt", "**/*.txt", "**/*.model"]
#: a whole pipeline in the original layout holds its VAE under one of these (diffusers' LDM_VAE_KEYS)
VAE_PREFIXES = ("first_stage_model.", "vae.")
LAYOUTS = {"pipeline": "a whole pipeline", "denoiser": "the denoiser alone"}
DENOISERS = ("transformer", "unet", "prior")


@dataclass(frozen=True)
class SingleFileSpec:
    """A parsed single-file spec: the weights reference (a local path, or a Hub repo, revision and
    file) and the model id it is recorded under."""

    text: str
    ref: WeightsRef
    model_id: str

    @property
    def format(self) -> str:
        return "gguf" if self.model_id.endswith(GGUF_SUFFIX) else "safetensors"


def _refuse_pickle(path: str) -> None:
    if path.lower().endswith(PICKLE_SUFFIXES):
        raise MalformedSpecError(f"{path} is a pickle checkpoint, which can run code when it is read: only "
                                 ".safetensors and .gguf files are loaded (convert it to safetensors first)")


def parse_single_file(spec: str) -> SingleFileSpec | None:
    """The single-file reading of ``spec`` (module docstring), or None when it names something
    else (a folder, a Hub model, a built-in model...). Touches nothing but a ``stat``."""
    if not isinstance(spec, str) or not spec.strip():
        return None
    text = spec.strip()
    hub = hub_file_id(text)
    if hub is not None:
        match = HUB_FILE_ID.match(hub)
        if match is None:
            _refuse_pickle(hub)
            raise MalformedSpecError(f"--model {text!r} is not a Hub file hf://ORG/NAME[@REVISION]/PATH ending in "
                                     f"{' or '.join(SINGLE_FILE_SUFFIXES)}")
        return SingleFileSpec(text, WeightsRef(text, repo=match["repo"], weight_name=match["path"],
                                               revision=match["revision"]), hub)
    path = Path(os.path.expanduser(text))
    if path.is_dir():
        return None
    if path.suffix.lower() in PICKLE_SUFFIXES and (path.exists() or looks_like_path(text)):
        _refuse_pickle(text)
    if path.suffix.lower() not in SINGLE_FILE_SUFFIXES:
        return None
    if not path.exists():
        if looks_like_path(text) or os.sep in text:
            raise MalformedSpecError(f"{WHAT} {text!r} does not exist")
        return None
    resolved = path.resolve()
    return SingleFileSpec(text, WeightsRef(text, path=str(resolved)), str(resolved))


def check_local_single_file(single: SingleFileSpec) -> None:
    """A local file checked (weight_files.py) before torch or diffusers load."""
    if single.ref.path is not None:
        check_weights_file(single.ref.path, what=WHAT)


@dataclass(frozen=True)
class BaseConfigs:
    """The base a single file is read with: as written (``spec``), how it was found (``how``),
    the local ``folder`` holding its model_index.json and component configs, the Hub ``commit``
    they came from (None for a folder), and what loads its weights (``load_from``: the folder, or
    the Hub ID for a base from the Hub)."""

    spec: str
    how: str
    folder: Path
    load_from: str
    commit: str | None = None
    builtin: bool = False


def _card_base(single: SingleFileSpec, read_card: Callable[[str], Mapping]) -> tuple[str, str] | None:
    """(base, how) from the model card beside a local file or of the file's Hub repo."""
    where = str(Path(single.ref.path).parent) if single.ref.path else single.ref.repo
    data = read_card(where) or {}
    base = data.get("base_model")
    if isinstance(base, list) and len(base) == 1:
        base = base[0]
    if isinstance(base, str) and base.strip():
        return base.strip(), f"base_model of the model card of {where}"
    return None


def _repo_is_pipeline(single: SingleFileSpec, token) -> bool:
    """The file's Hub repo is itself a diffusers pipeline (stable-diffusion-v1-5 keeps its
    single file beside its diffusers folders): its configs are the file's."""
    if single.ref.repo is None:
        return False
    try:
        ensure_hub_model(single.ref.repo, ["model_index.json"], revision=single.ref.revision, token=token,
                         what="base model")
    except MalformedSpecError:
        return False
    except ValueError:  # not cached and the Hub cannot say: the card may still name a base
        return False
    return True


def _base_folder(base: str, how: str, token) -> BaseConfigs:
    """The base's configs as a local folder (module docstring); one line when it has none."""
    if base.startswith("builtin:"):
        name = base[len("builtin:"):]
        check_builtin_name(name, "text-to-image")
        folder = build_builtin(name, build_tiny_sd, kind="text-to-image")
        return BaseConfigs(base, how, folder, str(folder), builtin=True)
    if is_local_folder(base):
        folder = Path(os.path.expanduser(base)).resolve()
        if not (folder / "model_index.json").is_file():
            raise MalformedSpecError(f"base {base} ({how}) has no model_index.json: a single file is read with the "
                                     "configs of a diffusers pipeline folder or Hub model")
        return BaseConfigs(base, how, folder, str(folder))
    if looks_like_path(base):
        raise MalformedSpecError(f"base folder {base!r} ({how}) does not exist")
    from huggingface_hub import snapshot_download

    where = ensure_hub_model(base, ["model_index.json"], token=token, what=f"base model ({how})")
    try:
        folder = Path(snapshot_download(base, allow_patterns=CONFIG_PATTERNS, token=token,
                                        local_files_only=where == "cache"))
    except Exception as err:  # noqa: BLE001 - the cache or the Hub failing in one of many ways
        raise MalformedSpecError(f"the configs of base model {base} cannot be read ({type(err).__name__}): download "
                                 f"them with `hf download {base} --include '*.json' '*.txt' '*.model'`") from None
    return BaseConfigs(base, how, folder, base, commit=cached_commit(base, "model_index.json"))


def find_base(single: SingleFileSpec, base: str | None, *, token=None,
              read_card: Callable[[str], Mapping] | None = None) -> BaseConfigs:
    """The base of ``single`` (module docstring: ``--base``, the repo itself, the card's
    base_model), its configs found offline first; one line naming ``--base`` when none is known."""
    if base:
        return _base_folder(base.strip(), "--base", token)
    if _repo_is_pipeline(single, token):
        return _base_folder(single.ref.repo, "the file's own Hub repo", token)
    if read_card is None:
        def read_card(where: str) -> Mapping:
            return read_card_data(where, token=token)
    found = _card_base(single, read_card)
    if found is None:
        raise MalformedSpecError(f"{WHAT} {single.text} names no base model: give the diffusers model it fine-tunes "
                                 "with --base REPO_OR_FOLDER (e.g. --base stable-diffusion-v1-5/stable-diffusion-v1-5 "
                                 "for an SD 1.5 fine-tune), whose configs are read with the file")
    return _base_folder(*found, token)


@dataclass(frozen=True)
class CheckedSingleFile:
    """A single file found, checked and hashed, with its base and layout (module docstring);
    ``denoiser``: the base's component the file replaces alone (layout ``denoiser``)."""

    spec: SingleFileSpec
    weights: ResolvedWeights
    header: WeightsHeader
    base: BaseConfigs
    layout: str
    denoiser: str | None
    denoiser_class: str | None = None

    @property
    def model_id(self) -> str:
        return self.spec.model_id

    @property
    def revision(self) -> str | None:
        return self.weights.commit or self.spec.ref.revision

    def record(self) -> dict:
        """The identity record (JSON-ready): the file (path, or repo / file / revision), its sha256,
        format and layout, and the base whose configs it was read with."""
        out = {"kind": "single_file", "id": self.model_id, "sha256": self.weights.sha256,
               "format": self.header.format, "layout": self.layout, "base": self.base.spec,
               "base_from": self.base.how, "base_revision": self.base.commit}
        if self.spec.ref.repo:
            out.update(repo=self.spec.ref.repo, file=self.weights.weight_name, revision=self.revision)
        else:
            out.update(path=str(self.weights.file))
        if self.denoiser:
            out["component"] = self.denoiser
        return out


def _layout(header: WeightsHeader) -> str:
    if header.format == "gguf":
        return "denoiser"
    return "pipeline" if any(k.startswith(VAE_PREFIXES) for k in header.tensors) else "denoiser"


def _converter(cls: type):
    """diffusers' converter of the original layout to its own for model class ``cls``, or None."""
    import diffusers
    from diffusers.loaders.single_file_model import SINGLE_FILE_LOADABLE_CLASSES

    for name, mapping in SINGLE_FILE_LOADABLE_CLASSES.items():
        known = getattr(diffusers, name, None)
        if isinstance(known, type) and issubclass(cls, known):
            return mapping.get("checkpoint_mapping_fn")
    return None


def _check_component(checked_file: Path, header: WeightsHeader, name: str, entry, config: Mapping,
                     pipeline: str) -> None:
    """The file's tensors for component ``name``, converted on the meta device, against the base's
    component built from its config; one line on the first mismatch."""
    import diffusers
    import torch

    model = meta_component(entry, config)
    if model is None:
        return
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    meta = {k: torch.empty(shape, device="meta") for k, shape in header.shapes().items()}
    if set(meta) == set(expected):
        found = {k: tuple(v.shape) for k, v in meta.items()}
    else:
        convert = _converter(getattr(diffusers, entry[1]))
        if convert is None:
            raise MalformedSpecError(f"diffusers reads no single-file {entry[1]}: {pipeline}'s {name} cannot come from "
                                     f"{checked_file}")
        try:
            converted = convert(checkpoint=dict(meta), config=dict(config))
        except Exception as err:  # noqa: BLE001 - the converters index keys a foreign file does not have
            raise MalformedSpecError(f"{WHAT} {checked_file} is not a checkpoint of {pipeline}'s {name} (diffusers' "
                                     f"converter failed: {type(err).__name__} {str(err)[:120]}): a file made for "
                                     "another base model") from None
        # nothing in the original layout: the file is in diffusers' layout, of another architecture
        found = {k: tuple(v.shape) for k, v in (converted or meta).items()}
    why = shape_problem(expected, found, pipeline=pipeline, name=name)
    if why:
        raise MalformedSpecError(f"{WHAT} {checked_file} does not fit {pipeline}'s {name} ({why}): a file made for "
                                 "another base model")


def check_single_file(single: SingleFileSpec, base: BaseConfigs, *, pipeline_cls: type, index: Mapping,
                      read_config: Callable[[str], Mapping | None], token=None) -> CheckedSingleFile:
    """``single`` found, checked and hashed, its layout found and its tensors matched against
    ``base``'s pipeline (``pipeline_cls``, its ``index`` and ``read_config(component)``)."""
    pipeline = pipeline_cls.__name__
    weights = resolve_weights(single.ref, what=WHAT, token=token, suffixes=SINGLE_FILE_SUFFIXES)
    header = read_header(weights.file, what=WHAT)
    layout = _layout(header)
    components = {k: v for k, v in index.items()
                  if not k.startswith("_") and isinstance(v, (list, tuple)) and v[0] is not None}
    denoiser = next((d for d in DENOISERS if d in components), None)
    if layout == "pipeline" and not hasattr(pipeline_cls, "from_single_file"):
        raise MalformedSpecError(f"diffusers reads no single-file checkpoint of a {pipeline} (it has no "
                                 "from_single_file)")
    if layout == "denoiser" and denoiser is None:
        raise MalformedSpecError(f"{pipeline} has no unet or transformer for {WHAT} {weights.file} to replace")
    names = [denoiser] if layout == "denoiser" else [k for k, v in components.items() if v[0] == "diffusers"
                                                      and _converter(_diffusers_class(v[1])) is not None]
    if header.format != "gguf":  # GGUF tensors are quantized blocks: diffusers checks them when it loads
        for name in names:
            config = read_config(name)
            if config is not None:
                _check_component(weights.file, header, name, components[name], config, pipeline)
    if layout == "pipeline":
        return CheckedSingleFile(single, weights, header, base, layout, None)
    return CheckedSingleFile(single, weights, header, base, layout, denoiser, components[denoiser][1])


def _diffusers_class(name: str):
    import diffusers

    return getattr(diffusers, name, object)


def load_single_file(checked: CheckedSingleFile, *, pipeline_cls: type, dtype, quantization_config=None,
                     prebuilt: Mapping | None = None):
    """A whole-pipeline file: the pipeline (``from_single_file``, configs from the base's local
    folder only). A denoiser file: ``{component: model}`` to hand to the base's ``from_pretrained``
    (GGUF through ``GGUFQuantizationConfig``, computing in ``dtype``; ``quantization_config``: an
    on-the-fly quantization of the denoiser)."""
    import diffusers

    file, folder = str(checked.weights.file), str(checked.base.folder)
    if checked.layout == "pipeline":
        return pipeline_cls.from_single_file(file, config=folder, local_files_only=True, dtype=dtype,
                                             **dict(prebuilt or {}))
    name = checked.denoiser
    cls = getattr(diffusers, checked.denoiser_class)
    if checked.header.format == "gguf":
        quantization_config = diffusers.GGUFQuantizationConfig(compute_dtype=dtype)
    kwargs = {"quantization_config": quantization_config} if quantization_config is not None else {}
    return {name: cls.from_single_file(file, config=folder, subfolder=name, local_files_only=True, dtype=dtype,
                                       **kwargs)}

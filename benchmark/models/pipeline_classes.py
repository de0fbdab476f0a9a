"""Which diffusers class runs a pipeline folder, decided from ``model_index.json`` alone (before
any weights load), so that preflight checks the class that will actually run (and its call
signature, for ``--set``) and refuses, in one line, a folder that cannot be run.

* a class ``AutoPipelineForText2Image`` maps (SD, SDXL, SD3, FLUX, PixArt, Sana, Kandinsky,
  Würstchen, Stable Cascade, LCM ...) is loaded through it; for a decoder folder (Kandinsky
  2.2's ``kandinsky-2-2-decoder``, Stable Cascade's decoder) that is the combined prior +
  decoder pipeline, whose prior the folder's model card names (``prior:``): a local folder
  without one is refused here, where diffusers would fail after loading the decoder;
* a text-to-image class it does not map (unCLIP / Karlo) is loaded by
  ``DiffusionPipeline.from_pretrained``, which reads the class from ``model_index.json``;
* anything else (an image-to-image, inpainting or decoder-only pipeline, a class this diffusers
  does not have) is refused.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

from .errors import MalformedSpecError

__all__ = ["AUTO_LOADER", "GENERIC_LOADER", "PipelineChoice", "choose_pipeline_class", "register_moved_libraries"]

AUTO_LOADER = "AutoPipelineForText2Image"
GENERIC_LOADER = "DiffusionPipeline"
#: component libraries that model_index.json files on the Hub name (``["unclip", "UnCLIPTextProjModel"]``,
#: ``["wuerstchen", "PaellaVQModel"]``: Karlo, Würstchen, Stable Cascade) and that diffusers moved to
#: ``diffusers.pipelines.deprecated`` without registering the old names: loading such a folder fails
#: with "unclip is not one of the libraries Diffusers can load components from" (seen with diffusers
#: 0.42.1; tests/test_model_families.py loads such folders)
MOVED_LIBRARIES = ("unclip", "wuerstchen")
#: call parameters that mean the pipeline starts from an image, not from text alone
_IMAGE_INPUTS = ("image", "mask_image", "control_image", "image_embeds", "video")


@dataclass(frozen=True)
class PipelineChoice:
    """The class in ``model_index.json`` (``declared``), the class that will run (``cls``) and
    the diffusers loader that builds it (``loader``)."""

    declared: str
    cls: type
    loader: str

    @property
    def name(self) -> str:
        return self.cls.__name__


def _auto_text_to_image_class(class_name: str) -> type | None:
    """The class ``AutoPipelineForText2Image`` builds for a folder of ``class_name`` (its own
    lookup: the model family of the class in any task's mapping, then that family's
    text-to-image pipeline), or None when it maps none."""
    from diffusers.pipelines.auto_pipeline import AUTO_TEXT2IMAGE_PIPELINES_MAPPING, SUPPORTED_TASKS_MAPPINGS

    for mapping in SUPPORTED_TASKS_MAPPINGS:
        for family, cls in mapping.items():
            if cls.__name__ == class_name:
                return AUTO_TEXT2IMAGE_PIPELINES_MAPPING.get(family)
    return None


def _takes_text_alone(cls: type) -> bool:
    """The call takes ``prompt`` and needs nothing else: no required argument, no image input."""
    params = {k: p for k, p in inspect.signature(cls.__call__).parameters.items() if k != "self"}
    required = [k for k, p in params.items() if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    return "prompt" in params and not required and not any(k in params for k in _IMAGE_INPUTS)


def _card_names_prior(folder: Path) -> bool:
    from huggingface_hub import ModelCard

    readme = folder / "README.md"
    if not readme.is_file():
        return False
    try:
        prior = getattr(ModelCard.load(readme).data, "prior", None)
    except (OSError, ValueError):
        return False
    return bool(prior)


def register_moved_libraries(index: dict) -> list[str]:
    """Register under their old names the :data:`MOVED_LIBRARIES` that ``index`` names, so that
    diffusers' loader finds their classes again; returns the names registered (none when this
    diffusers still has them where the folder says)."""
    import importlib

    import diffusers.pipelines as pipelines

    named = {entry[0] for entry in index.values() if isinstance(entry, (list, tuple)) and len(entry) == 2}
    done = []
    for library in MOVED_LIBRARIES:
        if library in named and not hasattr(pipelines, library):
            try:
                setattr(pipelines, library, importlib.import_module(f"diffusers.pipelines.deprecated.{library}"))
            except ImportError:  # a diffusers without it: loading fails later with diffusers' own message
                continue
            done.append(library)
    return done


def choose_pipeline_class(index: dict, *, spec: str, local_folder: Path | None = None) -> PipelineChoice:
    """The class that will run the pipeline of ``index`` (its ``model_index.json``), or a one-line
    :class:`MalformedSpecError` saying why it cannot run. ``local_folder``: the folder, to check
    a decoder's linked prior (a Hub model's card is read by diffusers when it loads)."""
    import diffusers

    register_moved_libraries(index)
    declared = str(index.get("_class_name") or "")
    cls = getattr(diffusers, declared, None)
    if cls is None or not hasattr(cls, "__call__"):
        raise MalformedSpecError(f"{spec}: pipeline class {declared!r} is not in diffusers {diffusers.__version__}: "
                                 "it is not a text-to-image pipeline this loader reads")
    auto = _auto_text_to_image_class(declared)
    if auto is not None:
        if auto is not cls and getattr(auto, "_load_connected_pipes", False) and local_folder is not None \
                and not _card_names_prior(local_folder):
            raise MalformedSpecError(
                f"{spec}: {declared} is a decoder; diffusers runs it as {auto.__name__} with the prior its model "
                "card names, and this folder's README.md names none (add `prior: [PRIOR_ID_OR_FOLDER]` to its YAML "
                "header, as kandinsky-community/kandinsky-2-2-decoder's card does)")
        return PipelineChoice(declared, auto, AUTO_LOADER)
    if _takes_text_alone(cls):
        return PipelineChoice(declared, cls, GENERIC_LOADER)
    raise MalformedSpecError(f"{spec}: {declared} is not a text-to-image pipeline (its call needs an image or "
                             "embeddings, not a prompt alone), and AutoPipelineForText2Image maps it to none")

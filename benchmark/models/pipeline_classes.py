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
* anything else is refused in one line, the declared class checked before any mapping: an
  image-to-image, inpainting, refiner, upscaler, prior-only, video or audio pipeline (from
  diffusers' task mappings and the class name), DeepFloyd IF's 64 px stage I (:data:`REFUSED`),
  a class this diffusers does not have, or one whose optional package is missing (Kolors needs
  ``sentencepiece``: the line says which to install). A class the Hub still names by an old name
  (:data:`CLASS_ALIASES`: Lumina-Image 2.0) is loaded as diffusers' class.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from pathlib import Path

from .card_front_matter import read_front_matter
from .errors import MalformedSpecError

# diffusers' pipeline index imports its Kolors text encoder, which calls torch.jit.script when the
# module loads; torch 2.14 warns that it is deprecated, once per run, on every audit: not ours to
# act on, and `make demo` prints only its own progress
warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=FutureWarning)

__all__ = ["AUTO_LOADER", "GENERIC_LOADER", "CLASS_LOADER", "CLASS_ALIASES", "REFUSED", "PipelineChoice",
           "choose_pipeline_class", "class_name_refusal", "register_moved_libraries"]

AUTO_LOADER = "AutoPipelineForText2Image"
GENERIC_LOADER = "DiffusionPipeline"
#: the class itself (``cls.from_pretrained``): for a folder whose model_index.json names the class by
#: an old name (:data:`CLASS_ALIASES`)
CLASS_LOADER = "class"
#: class names on the Hub that diffusers renamed: Alpha-VLLM/Lumina-Image-2.0's model_index.json says
#: Lumina2Text2ImgPipeline, diffusers 0.42 has only Lumina2Pipeline
CLASS_ALIASES = {"Lumina2Text2ImgPipeline": "Lumina2Pipeline"}
#: text-to-image classes the benchmark refuses, and why
REFUSED = {
    "IFPipeline": "is DeepFloyd IF's stage I alone, which makes 64x64 images; its full-resolution cascade is three "
                  "pipelines (stage I, IFSuperResolutionPipeline, an x4 upscaler) the loader does not chain: audit it "
                  "as a python: callable that runs all three (docs/models.md)",
}
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
    required = [k for k, p in params.items() if p.default is inspect.Parameter.empty and k != "prompt"
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    return "prompt" in params and not required and not any(k in params for k in _IMAGE_INPUTS)


def _card_names_prior(folder: Path) -> bool:
    readme = folder / "README.md"
    return readme.is_file() and bool(read_front_matter(readme).get("prior"))


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


def _not_text_to_image(declared: str) -> str | None:
    """Why the class ``declared`` does not make images from text alone, from diffusers' own task
    mappings and its name; None when nothing says so."""
    from diffusers.pipelines import auto_pipeline as auto

    tasks = [("AUTO_IMAGE2IMAGE_PIPELINES_MAPPING", "an image-to-image pipeline (it starts from an image)"),
             ("_AUTO_IMAGE2IMAGE_DECODER_PIPELINES_MAPPING", "an image-to-image pipeline (it starts from an image)"),
             ("AUTO_INPAINT_PIPELINES_MAPPING", "an inpainting pipeline (it needs an image and a mask)"),
             ("_AUTO_INPAINT_DECODER_PIPELINES_MAPPING", "an inpainting pipeline (it needs an image and a mask)"),
             ("AUTO_TEXT2VIDEO_PIPELINES_MAPPING", "a text-to-video pipeline"),
             ("AUTO_IMAGE2VIDEO_PIPELINES_MAPPING", "an image-to-video pipeline"),
             ("AUTO_VIDEO2VIDEO_PIPELINES_MAPPING", "a video-to-video pipeline"),
             ("AUTO_CONDITION2VIDEO_PIPELINES_MAPPING", "a video pipeline"),
             ("AUTO_TEXT2AUDIO_PIPELINES_MAPPING", "a text-to-audio pipeline")]
    for mapping, why in tasks:
        if any(c.__name__ == declared for c in getattr(auto, mapping, {}).values()):
            return why
    return class_name_refusal(declared)


def class_name_refusal(declared: str) -> str | None:
    """Why a pipeline class named ``declared`` does not make images from text alone, from its name
    alone (no diffusers import: the check made before the heavy libraries load); None when its
    name does not say. Every class it names is one :func:`choose_pipeline_class` refuses too."""
    for words, why in _NAME_KINDS:
        if any(w in declared for w in words):
            return why
    return None


#: words in a class name and what they say a pipeline is (for classes no task mapping lists)
_NAME_KINDS = (
    (("Img2Img", "Image2Image", "ImageToImage", "Depth2Img", "InstructPix2Pix", "Edit", "Kontext"),
     "an image-to-image pipeline (it starts from an image)"),
    (("Inpaint", "Fill"), "an inpainting pipeline (it needs an image and a mask)"),
    (("Control", "AdapterPipeline"), "a ControlNet or adapter pipeline (it needs a control image)"),
    (("Upscale", "SuperResolution", "Refiner"), "an upscaler or refiner (it starts from an image)"),
    (("PriorPipeline", "PriorRedux"), "a prior: it returns image embeddings, not images (audit the decoder repo "
                                      "that links it, which runs prior and decoder together)"),
    (("Video", "ToWorld", "I2V", "T2V", "Animate"), "a video pipeline"),
    (("Audio", "Music", "Spectrogram"), "an audio pipeline"),
    (("Variation",), "an image-variation pipeline (it starts from an image)"),
)


def _missing_backends(cls) -> list[str]:
    """The packages a diffusers placeholder class (``DummyObject``: its optional dependencies are
    not installed) needs and that are missing."""
    from benchmark.extras import missing

    backends = getattr(cls, "_backends", None) or []
    return missing(*backends) if type(cls).__name__ == "DummyObject" else []


def _declared_class(index: dict, spec: str) -> tuple[str, type]:
    """The class ``model_index.json`` names (an old name diffusers renamed: :data:`CLASS_ALIASES`),
    or one line: not in this diffusers, or in it but missing an optional package."""
    import diffusers

    declared = str(index.get("_class_name") or "")
    cls = getattr(diffusers, CLASS_ALIASES.get(declared, declared), None)
    if cls is None or not hasattr(cls, "__call__"):
        raise MalformedSpecError(f"{spec}: pipeline class {declared!r} is not in diffusers {diffusers.__version__}: "
                                 "it is not a text-to-image pipeline this loader reads")
    absent = _missing_backends(cls)
    if absent:
        raise MalformedSpecError(f"{spec}: {declared} needs {', '.join(absent)}, which is not installed: "
                                 f"pip install {' '.join(absent)}")
    return declared, cls


def choose_pipeline_class(index: dict, *, spec: str, local_folder: Path | None = None) -> PipelineChoice:
    """The class that will run the pipeline of ``index`` (its ``model_index.json``), or a one-line
    :class:`MalformedSpecError` saying why it cannot run. ``local_folder``: the folder, to check
    a decoder's linked prior (a Hub model's card is read by diffusers when it loads).

    The declared class is checked before it is mapped: diffusers' AutoPipelineForText2Image maps an
    image-to-image or inpainting class to its family's text-to-image pipeline, which would audit a
    refiner or an inpainting model as if it were a text-to-image one."""
    register_moved_libraries(index)
    declared, cls = _declared_class(index, spec)
    if declared in REFUSED:
        raise MalformedSpecError(f"{spec}: {declared} {REFUSED[declared]}")
    why = _not_text_to_image(declared)
    if why is not None:
        raise MalformedSpecError(f"{spec}: {declared} is {why}; the benchmark audits text-to-image models")
    auto = _auto_text_to_image_class(declared)
    if auto is not None and auto is not cls:  # a decoder: run with its prior as the combined pipeline
        if getattr(auto, "_load_connected_pipes", False) and local_folder is not None \
                and not _card_names_prior(local_folder):
            raise MalformedSpecError(
                f"{spec}: {declared} is a decoder; diffusers runs it as {auto.__name__} with the prior its model "
                "card names, and this folder's README.md names none (add `prior: [PRIOR_ID_OR_FOLDER]` to its YAML "
                "header, as kandinsky-community/kandinsky-2-2-decoder's card does)")
        return PipelineChoice(declared, auto, AUTO_LOADER)
    if not _takes_text_alone(cls):
        raise MalformedSpecError(f"{spec}: {declared} is not a text-to-image pipeline (its call needs an image or "
                                 "embeddings, not a prompt alone)")
    if declared in CLASS_ALIASES:
        return PipelineChoice(declared, cls, CLASS_LOADER)
    return PipelineChoice(declared, cls, AUTO_LOADER if auto is cls else GENERIC_LOADER)

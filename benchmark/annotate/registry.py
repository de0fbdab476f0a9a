"""The annotator interface and the registry of annotator kinds.

An :class:`Annotator` turns images of a run into rows of one label file
(:mod:`benchmark.annotate.label_files`). It says

* which label-file keys an image needs (:meth:`Annotator.keys`): the annotate stage compares
  them with the file to find what is left to do, so a re-run or a resumed run only computes
  missing rows;
* which rows it writes that belong to no image (:meth:`Annotator.extra_keys`, e.g. MCAS text
  embeddings);
* how a batch becomes rows (:meth:`Annotator.annotate`), from decoded images (``inputs =
  "pixels"``) or from the image embeddings of its CLIP encoder (``inputs = "embeddings"``:
  the stage embeds each image once per encoder, in a cache shared by every annotator of that
  encoder).

An :class:`AnnotatorKind` is registered under a name (``clip_existence``, ``vqa_gender``,
``vqa_attributes``, ``skin_tone``, ``detections``, a task folder's own such as
``mcas_embeddings``, or a plugin's own).
Tasks name the kinds they need with their parameters (:mod:`benchmark.tasks`); the run
option ``kind.option`` names the model (``--encoder``, ``--vqa``, ...), with a default for
built-in and real runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from benchmark.annotate.kinds import ANNOTATOR_KINDS, AnnotatorKind, get_annotator_kind, list_annotator_kinds
from benchmark.annotate.label_files import LabelFile, get_label_file
from benchmark.contract.model_specs import is_builtin
from benchmark.present.progress import library_bars_off
from benchmark.probes.registry import load_config

__all__ = ["Annotator", "AnnotatorKind", "AnnotateContext", "WorkItem", "ANNOTATOR_KINDS", "get_annotator_kind",
           "list_annotator_kinds", "default_annotators", "is_disabled", "model_name", "with_prepared"]

def is_disabled(value: Any) -> bool:
    """An annotator option that turns it off: ``False``, ``"none"``, ``"off"`` or empty."""
    return value is False or (isinstance(value, str) and value.strip().lower() in ("", "none", "off"))


def model_name(model: Any) -> str:
    """What a model spec or a loaded model is called in label files (``annotator`` / ``encoder``)."""
    return model if isinstance(model, str) else str(getattr(model, "name", None) or repr(model))


@dataclass
class WorkItem:
    """One image for an annotator: its probe row, the label-file keys still missing, and its
    pixels (a PIL image) or its embedding, as the annotator's ``inputs`` asks."""

    row: dict
    keys: list[tuple]
    image: Any = None
    embedding: Any = None

    @property
    def probe_id(self) -> str:
        return str(self.row["probe_id"])


@dataclass
class AnnotateContext:
    """What annotators share during one annotate call: where models run, the run's probe
    configs, and the models already loaded (``model(loader, spec)`` loads each once)."""

    run_dir: Path
    device: str | None = None
    batch_size: int = 32
    configs: Mapping[str, dict] = field(default_factory=dict)   # probe family -> the run's config
    families: Mapping[str, str] = field(default_factory=dict)   # suite -> probe family
    loaded: dict = field(default_factory=dict)
    loaded_names: list = field(default_factory=list)            # every model loaded, in order
    batch: Any = None  # the batch being annotated: its images and what its annotators share

    def family_config(self, family: str) -> dict:
        if family in self.configs:
            return self.configs[family]
        return load_config(family)

    def config_of(self, row: Mapping[str, Any]) -> dict:
        """The probe config the row's suite was built from."""
        return self.family_config(self.families.get(str(row["suite"]), ""))

    def prepared(self, model_key: str, model: Any, probe_ids: Sequence[str]) -> Any:
        """What ``model``'s ``prepare_images`` made of the batch's images ``probe_ids`` (in that
        order) on a decode thread, or None: no batch (outside the image pass), a model without
        ``prepare_images``, or images other than those it prepared."""
        batch = self.batch
        if batch is None or list(batch.needing(model_key, model)) != list(probe_ids):
            return None
        return batch.prepared(model_key, model)

    def model(self, key: str, spec: Any, load: Callable[[Any], Any]) -> Any:
        """The loaded model of ``spec`` (``key`` tells model kinds apart); a loaded object is used as is."""
        if not isinstance(spec, str):
            return spec
        if (key, spec) not in self.loaded:
            library_bars_off("transformers")  # the annotate stage draws its own bar
            self.loaded[(key, spec)] = load(spec)
            self.loaded_names.append(spec)
        return self.loaded[(key, spec)]

    def release(self, key: str, spec: Any) -> None:
        """Free a model no annotator still needs (and the GPU memory it held)."""
        if self.loaded.pop((key, spec), None) is not None:
            try:
                import torch
            except ImportError:  # pragma: no cover - torch is there whenever a model was loaded
                return
            if torch.cuda.is_available():
                # a full collection (0.3 s) only where the memory it frees is scarce: the GPU's
                import gc

                gc.collect()
                torch.cuda.empty_cache()


def with_prepared(method: Callable, images: Sequence, prepared: Any) -> Any:
    """``method(images, prepared=prepared)`` with what a decode thread prepared, else
    ``method(images)``: a model of a user's own without ``prepare_images`` takes no ``prepared``."""
    return method(images) if prepared is None else method(images, prepared=prepared)


class Annotator(ABC):
    """Images of some suites -> rows of one label file (see the module docstring).

    ``model`` is a spec (``builtin:tiny-clip``, a Hub ID...) or a loaded model; ``params`` maps
    each suite this annotator labels to its task's parameters (e.g. the questions to ask).
    """

    kind: str = ""
    label_file: str = ""
    inputs: str = "pixels"           # "pixels" or "embeddings"
    model_key: str = ""              # models of one key and spec are loaded once and shared

    def __init__(self, model: Any, params: Mapping[str, Any]):
        self.model = model
        self.name = model_name(model)
        self.params = dict(params)

    @property
    def suites(self) -> list[str]:
        return list(self.params)

    @property
    def spec(self) -> LabelFile:
        return get_label_file(self.label_file)

    @property
    def encoder(self) -> Any:
        """The CLIP encoder whose image embeddings this annotator reads (``inputs == "embeddings"``)."""
        return self.model

    def check(self) -> None:
        """One-line error for a bad model spec, before anything is loaded."""

    @abstractmethod
    def keys(self, row: Mapping[str, Any], ctx: AnnotateContext) -> list[tuple]:
        """The label-file keys image ``row`` needs from this annotator."""

    def extra_keys(self, ctx: AnnotateContext) -> list[tuple]:
        """Keys of rows that belong to no image."""
        return []

    @abstractmethod
    def annotate(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[dict]:
        """Rows of the label file for ``items``."""

    def annotate_extra(self, keys: Sequence[tuple], ctx: AnnotateContext) -> list[dict]:
        return []

    def load(self, ctx: AnnotateContext) -> Any:
        """The annotator's model, loaded through ``ctx`` (shared with annotators of the same model)."""
        return ctx.model(self.model_key, self.model, lambda spec: self.load_model(spec, ctx))

    def load_model(self, spec: str, ctx: AnnotateContext) -> Any:  # pragma: no cover - pixel annotators override
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, suites={self.suites})"


def default_annotators(run_config: Mapping | None) -> dict:
    """The annotator option values a run gets when none are given: the built-in tiny models
    for a run of a built-in model (so the whole audit runs offline), the papers' models
    otherwise (see each kind's registration)."""
    builtin = is_builtin((run_config or {}).get("model"))
    out: dict = {}
    for kind in list_annotator_kinds():
        out.setdefault(kind.option, kind.default(builtin))
    return out

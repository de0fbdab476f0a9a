"""Annotator kinds: what can label a run's images, by name, with the run option naming each
kind's model (see :mod:`benchmark.annotate.registry` for the annotator interface). The
registry, :data:`ANNOTATOR_KINDS`, is one of :mod:`benchmark.registries`.

Light on purpose (no pandas, no model library): a task folder declares its kinds in its
``inputs.py`` with the class as ``"module:Class"``, and the command line reads them to
generate their options (``--<option>``) for ``t2ibench --help``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable, Mapping

from benchmark.registries import ANNOTATOR_KINDS, register_annotator

__all__ = ["AnnotatorKind", "ANNOTATOR_KINDS", "BUILTIN_ANNOTATOR_MODULES", "register_annotator",
           "load_builtin_annotators", "list_annotator_kinds", "get_annotator_kind"]

#: the generic kinds of this package, registered by these modules of ``benchmark.annotate``
BUILTIN_ANNOTATOR_MODULES = ("clip_labels", "vqa_labels", "skin_tone_labels", "detections")


@dataclass(frozen=True)
class AnnotatorKind:
    """A registered annotator: its class, the run option naming its model and the defaults
    (``default(builtin)`` for a built-in tiny run and a real one). ``many``: the option is a
    list of models, one annotator each (MCAS's CLIP encoders). ``settings``: other run options
    passed to ``factory`` as keywords when given.

    ``factory`` may be ``"module:Class"``, imported only when an annotator is made
    (:meth:`create`): a task folder declares its kinds in its light ``inputs.py``, which the
    command line reads to generate the kinds' options without importing the annotators."""

    name: str
    factory: Callable[..., Any] | str
    option: str
    default: Callable[[bool], Any]
    many: bool = False
    help: str = ""
    settings: tuple[str, ...] = ()  # further run options the factory takes as keywords (e.g. vqa_mode)

    @property
    def module(self) -> str:
        """The module that defines the annotator class (what the registries rank by)."""
        return self.factory.partition(":")[0] if isinstance(self.factory, str) else self.factory.__module__

    def create(self, model: Any, params: Mapping[str, Any], **settings: Any) -> Any:
        """An annotator of this kind for ``model`` (the factory imported on first use)."""
        factory = self.factory
        if isinstance(factory, str):
            module, _, name = factory.partition(":")
            factory = getattr(import_module(module), name)
        return factory(model, params, **settings)


def load_builtin_annotators() -> None:
    """Register the generic annotator kinds of this package: the registries' loader calls it
    before it imports the task folders (:func:`benchmark.tasks.discovery.import_task_folders`),
    so that kinds are listed in the same order whoever asks first."""
    for name in BUILTIN_ANNOTATOR_MODULES:
        import_module(f"benchmark.annotate.{name}")


def list_annotator_kinds() -> list[AnnotatorKind]:
    """Every kind: this package's generic ones, then the task folders' in folder order, then plugins'."""
    return list(ANNOTATOR_KINDS.values())  # ranked by the module of each class (benchmark.registries)


def get_annotator_kind(name: str) -> AnnotatorKind:
    if name not in ANNOTATOR_KINDS:
        raise ValueError(f"unknown annotator kind {name!r}; known: {', '.join(ANNOTATOR_KINDS)}")
    return ANNOTATOR_KINDS[name]



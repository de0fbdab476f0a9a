"""Annotator kinds: the registry of what can label a run's images, by name, with the run option
naming each kind's model (see :mod:`benchmark.annotate.registry` for the annotator interface).

Light on purpose (no pandas, no model library): a task folder declares its kinds in its
``inputs.py`` with the class as ``"module:Class"``, and the command line reads them to
generate their options (``--<option>``) for ``t2ibench --help``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable, Mapping

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


ANNOTATOR_KINDS: dict[str, AnnotatorKind] = {}
_loaded = False
#: held while a registry loads its entries (the generic annotator modules, the task folders,
#: the plugins): a thread asking meanwhile (two queue workers in one process) waits for the
#: whole load instead of reading half-filled registries. Re-entrant: loading one registry
#: loads the others. The lowest of the lazy registries holds it; the others import it.
LOADING = threading.RLock()


def register_annotator(kind: AnnotatorKind) -> AnnotatorKind:
    if kind.name in ANNOTATOR_KINDS and ANNOTATOR_KINDS[kind.name] is not kind:
        raise ValueError(f"annotator kind {kind.name!r} is registered twice")
    ANNOTATOR_KINDS[kind.name] = kind
    return kind


def load_builtin_annotators() -> None:
    """Register the generic annotator kinds of this package, then those of the task folders."""
    global _loaded
    with LOADING:
        if not _loaded:
            _loaded = True
            for name in BUILTIN_ANNOTATOR_MODULES:
                import_module(f"benchmark.annotate.{name}")
            # a task folder's own annotator kinds (e.g. MCAS's embeddings); by name, as the task
            # folders sit above this registry
            import_module("benchmark.tasks.discovery").import_task_folders()


def list_annotator_kinds() -> list[AnnotatorKind]:
    """Every kind: this package's generic ones, then the task folders' in folder order, then plugins'."""
    load_builtin_annotators()
    rank = import_module("benchmark.tasks.discovery").registration_rank
    return sorted(ANNOTATOR_KINDS.values(), key=lambda kind: rank(kind.module))


def get_annotator_kind(name: str) -> AnnotatorKind:
    load_builtin_annotators()
    if name not in ANNOTATOR_KINDS:
        raise ValueError(f"unknown annotator kind {name!r}; known: {', '.join(ANNOTATOR_KINDS)}")
    return ANNOTATOR_KINDS[name]



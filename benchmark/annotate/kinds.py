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

from benchmark.registries import ANNOTATOR_KINDS

__all__ = ["AnnotatorKind", "ANNOTATOR_KINDS", "list_annotator_kinds", "get_annotator_kind"]


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

    def create(self, model: Any, params: Mapping[str, Any], **settings: Any) -> Any:
        """An annotator of this kind for ``model`` (the factory imported on first use)."""
        factory = self.factory
        if isinstance(factory, str):
            module, _, name = factory.partition(":")
            factory = getattr(import_module(module), name)
        return factory(model, params, **settings)


def list_annotator_kinds() -> list[AnnotatorKind]:
    """Every kind: this package's generic ones, then the task folders' in folder order, then plugins'."""
    return list(ANNOTATOR_KINDS.values())  # in their declared places (benchmark.registries)


def get_annotator_kind(name: str) -> AnnotatorKind:
    if name not in ANNOTATOR_KINDS:
        raise ValueError(f"unknown annotator kind {name!r}; known: {', '.join(ANNOTATOR_KINDS)}")
    return ANNOTATOR_KINDS[name]



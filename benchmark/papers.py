"""The papers the benchmark implements, by key: the registry their citations go into.

Each paper is cited in its task folder (``benchmark/tasks/<paper>/citation.py``), registered
when the folder is imported (:mod:`benchmark.tasks.discovery`); a plugin registers its own
with :func:`register_paper`. Keys are short and stable; probes, scores, dataset cards and
metric cards refer to a paper by key.

:class:`TaskRegistry` is the mapping :data:`PAPERS` and
:data:`benchmark.scores.metadata.SCORE_METADATA` are made of: its first lookup imports the
task folders, and it lists its entries in folder order, whichever folder was imported first.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from importlib import import_module
from typing import TypeVar

__all__ = ["Paper", "PAPERS", "TaskRegistry", "register_paper", "paper_label", "caller_module"]

V = TypeVar("V")


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    authors: str
    venue: str
    url: str
    bibtex: str
    label: str = ""  # the short name the project cites it by ("GEP"); the key when empty

    @property
    def short(self) -> str:
        return f"{self.authors.split(',')[0].split(' ')[-1]} et al., {self.venue}"


def caller_module(depth: int = 1) -> str:
    """The module ``depth`` frames above the caller (as :func:`collections.namedtuple` finds
    its ``__module__``): who registers an entry, which decides where it is listed."""
    return str(sys._getframe(depth + 1).f_globals.get("__name__", ""))


class TaskRegistry(MutableMapping[str, V]):
    """A name -> entry mapping filled by the task folders and plugins.

    Reading it (a lookup, ``in``, iteration, ``len``) first imports the task folders, by name
    as they sit above this layer; entries are listed as the other registries list theirs
    (:func:`benchmark.tasks.discovery.registration_rank` of the registering module: the task
    folders in folder order, then plugins), registration order breaking ties.
    """

    def __init__(self, what: str):
        self.what = what  # "score", "paper": for messages
        self._entries: dict[str, V] = {}
        self._module: dict[str, str] = {}  # name -> module that registered it
        self._ordered = True

    def register(self, name: str, entry: V, module: str) -> V:
        self._module.setdefault(name, module)  # a re-registration keeps its place
        self._ordered = self._ordered and name in self._entries
        self._entries[name] = entry
        return entry

    def registered(self, name: str) -> V | None:
        """The entry registered as ``name`` so far (None), without importing the task folders."""
        return self._entries.get(name)

    def _ready(self) -> dict[str, V]:
        discovery = import_module("benchmark.tasks.discovery")
        discovery.import_task_folders()
        if not self._ordered:
            self._ordered = True
            rank = discovery.registration_rank
            self._entries = dict(sorted(self._entries.items(), key=lambda kv: rank(self._module[kv[0]])))
        return self._entries

    def __getitem__(self, name: str) -> V:
        return self._ready()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._ready()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ready())

    def __len__(self) -> int:
        return len(self._ready())

    def __setitem__(self, name: str, entry: V) -> None:
        self.register(name, entry, self._module.get(name, ""))

    def __delitem__(self, name: str) -> None:
        del self._entries[name]
        del self._module[name]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.what}: {', '.join(self)})"


#: every paper's citation by key, in folder order (a :class:`TaskRegistry`)
PAPERS: TaskRegistry[Paper] = TaskRegistry("paper")


def paper_label(key: str) -> str:
    """The short name a paper is cited by (``"GEP"``), or ``key`` for a paper not registered."""
    paper = PAPERS.get(str(key))
    return paper.label or paper.key if paper else str(key)


def register_paper(paper: Paper) -> Paper:
    """Add a paper's citation (from its task folder, or a plugin's)."""
    if PAPERS.registered(paper.key) not in (None, paper):
        raise ValueError(f"paper {paper.key!r} is already cited differently")
    return PAPERS.register(paper.key, paper, caller_module())

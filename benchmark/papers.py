"""The papers the benchmark implements, by key: what a citation is (:class:`Paper`) and the
short name a paper is cited by.

Each paper is cited in its task folder (``benchmark/tasks/<paper>/citation.py``), registered
from its ``task.py``'s ``REGISTRATIONS``; a plugin registers its own with
:func:`benchmark.registries.register_paper`. Keys are
short and stable; probes, scores, dataset cards and metric cards refer to a paper by key. The
registry, :data:`PAPERS`, is one of :mod:`benchmark.registries` (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmark.registries import PAPERS

__all__ = ["Paper", "PAPERS", "paper_label"]


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    authors: str
    venue: str
    url: str
    bibtex: str
    label: str = ""  # the short name the project cites it by ("GEP"); the key when empty
    prompt_source: str = ""  # where its prompt lists come from, and their licence (the probe dataset card)

    @property
    def short(self) -> str:
        return f"{self.authors.split(',')[0].split(' ')[-1]} et al., {self.venue}"


def paper_label(key: str) -> str:
    """The short name a paper is cited by (``"GEP"``), or ``key`` for a paper not registered."""
    paper = PAPERS.get(str(key))
    return paper.label or paper.key if paper else str(key)

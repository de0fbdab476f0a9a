"""What the leaderboard app's tabs share: where the results come from (:class:`Source`), the
rows shown and worked out once per reload (:class:`BoardState`), the context a tab builder gets
(:class:`AppContext`: the state, components other tabs reach into, refresh functions) and a tab's
entry in the app (:class:`Tab`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import gradio as gr

from submissions import provenance as prov
from submissions.leaderboard import (board_index, board_model, board_table, contents, paging, results_files,
                                    score_columns, wording)

#: a model picker lists at most this many models (the best ranked, and those picked)
MAX_CHOICES = 100
#: the forest plot draws the selected models, else this many of the table's current order
FOREST_TOP = 20


class Source:
    """Where results come from (a folder, or a Hub dataset downloaded to one); ``load()`` re-reads."""

    def __init__(self, results_dir: str | Path | None = None, repo: str | None = None,
                 revision: str | None = None) -> None:
        if (results_dir is None) == (repo is None):
            raise ValueError("give exactly one of a results folder or a Hub results dataset")
        self.results_dir, self.repo, self.revision = results_dir, repo, revision

    def load(self) -> board_index.Board:
        """The board; a Hub dataset that cannot be read gives an empty board with a visible error."""
        if self.repo is None:
            return contents.load_board(self.results_dir)
        try:
            table_folder = contents.download_contents(self.repo, self.revision)
            if table_folder is not None:  # one download: the table, not every JSON file
                try:
                    return contents.load_board(table_folder, f"{self.repo} (Hub dataset)", files_present=False)
                except contents.OldTable:
                    pass  # a table of an older version: the JSON files are read
            folder = results_files.download_results(self.repo, self.revision)
        except ValueError as exc:
            board = board_index.Board(source=self.repo)
            board.errors.append(str(exc))
            return board
        return results_files.load_folder(folder, source=f"{self.repo} (Hub dataset)",
                                         within=results_files.hub_cache_folder(folder))


class Rows(Mapping):
    """Row key -> :class:`board_model.ModelRow`, each made when asked (``st.by_key[key]``)."""

    def __init__(self, index: board_index.BoardIndex) -> None:
        self._index = index

    def __getitem__(self, key: str) -> board_model.ModelRow:
        if key not in self._index.position:
            raise KeyError(key)
        return self._index.row(key)

    def __contains__(self, key: object) -> bool:
        return key in self._index.position

    def __iter__(self) -> Iterator[str]:
        return iter(self._index.keys)

    def __len__(self) -> int:
        return len(self._index.keys)


class BoardState:
    """The rows the app shows, re-read by :meth:`reload`: the board's index (its columns), the
    labels and the default order worked out once per reload; rows and documents are made only for
    what a page, a picker or the details show (nothing the page sends grows with the number of
    models)."""

    def __init__(self, source: Source, requests: Any = None) -> None:
        self.source = source
        self.requests = requests  # the requests queue, to check which rows its workers evaluated
        self.reload()

    def reload(self) -> None:
        self.board = self.source.load()
        if self.requests is not None:
            self.board.index = self.board.index.with_finished(prov.finished_requests(self.requests))
        self.index = self.board.index
        self.by_key = Rows(self.index)
        self.labels = wording.index_labels(self.index)
        self.key_by_label = {label: key for key, label in self.labels.items()}
        self._names = board_table.present_names(self.index)
        overview = score_columns.view_names(self._names, score_columns.OVERVIEW)
        self._ranked = board_table.order_rows(self.index.row_frame(), overview[0] if overview else None)["key"].tolist()

    @property
    def rows(self) -> list[str]:
        """The row keys (natural order)."""
        return self.index.keys

    def names(self, suites: Sequence[str] = ()) -> list[str]:
        return self._names if not suites else board_table.present_names(self.index, suites)

    def ranked(self) -> list[str]:
        """Row keys in the leaderboard's default order (best first)."""
        return self._ranked

    def table(self, **filters: Any) -> board_table.Table:
        """One page of the leaderboard (``page``, ``page_size``: :mod:`paging`)."""
        return board_table.leaderboard_table(self.index, labels=self.labels, page_size=paging.PAGE_SIZE,
                                             present=self.names(filters.get("suites") or ()), **filters)

    def pick_label(self, key: str) -> str:
        """A row in a picker: its Model cell (a revision only where the id has several rows) and tags."""
        return self.labels[key] + wording.row_tags(self.by_key[key].latest)

    def model_choices(self, keep: Sequence[str] = ()) -> list[tuple[str, str]]:
        """A picker's choices: the first :data:`MAX_CHOICES` models of the default order and the
        ones in ``keep`` (a picker never lists every model)."""
        keys = self._ranked[:MAX_CHOICES]
        keys = keys + [k for k in dict.fromkeys(keep) if k in self.by_key and k not in set(keys)]
        self.index.submissions([self.index.position[k] for k in keys])  # one read for the lot
        return [(self.pick_label(k), k) for k in keys]

    def first_key(self) -> str | None:
        return self._ranked[0] if self._ranked else None

    def detail_row(self, key: str | None) -> board_model.ModelRow | None:
        """Row ``key`` with its whole results document (read on demand: the table holds a slim one)."""
        row = self.by_key.get(key) if key else None
        if row is None:
            return None
        return replace(row, latest=contents.full_document(row.latest, self.source.repo, self.source.revision))


@dataclass
class AppContext:
    """What tab builders share: the state, the tabs, the detail view's model picker, the
    refresh functions the Reload button calls (``on_reload``) and wiring that needs every tab
    built first (``after_tabs``)."""

    state: BoardState
    tabs: gr.Tabs | None = None
    model: gr.Dropdown | None = None
    selected: gr.Dropdown | None = None  # models selected in the table (forest plots, Compare)
    top: gr.State | None = None  # keys of the table's current order, its first FOREST_TOP
    reloaders: list[tuple[Callable, list, list]] = field(default_factory=list)
    wiring: list[Callable[[], Any]] = field(default_factory=list)

    def on_reload(self, fn: Callable, inputs: list, outputs: list) -> None:
        """After a reload, ``fn(*inputs)`` gives the new values of ``outputs``."""
        self.reloaders.append((fn, list(inputs), list(outputs)))

    def after_tabs(self, wire: Callable[[], Any]) -> None:
        """Run ``wire()`` once every tab exists (events that reach into another tab)."""
        self.wiring.append(wire)


@dataclass(frozen=True)
class Tab:
    id: str
    title: str
    build: Callable[[AppContext], None]

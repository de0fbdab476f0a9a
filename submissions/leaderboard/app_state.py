"""What the leaderboard app's tabs share: where the results come from (:class:`Source`), the
rows shown and worked out once per reload (:class:`BoardState`), the context a tab builder gets
(:class:`AppContext`: the state, components other tabs reach into, refresh functions) and a tab's
entry in the app (:class:`Tab`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import gradio as gr

from submissions import provenance as prov
from submissions.leaderboard import board_model, board_table, contents, paging, results_files, score_columns, wording

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

    def load(self) -> board_model.Board:
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
            board = board_model.Board(source=self.repo)
            board.errors.append(str(exc))
            return board
        return results_files.load_folder(folder, source=f"{self.repo} (Hub dataset)")


class BoardState:
    """The rows the app shows, re-read by :meth:`reload`; labels and the default order are worked
    out once per reload (nothing the page sends grows with the number of models)."""

    def __init__(self, source: Source, requests: Any = None) -> None:
        self.source = source
        self.requests = requests  # the requests queue, to check which rows its workers evaluated
        self.reload()

    def reload(self) -> None:
        self.board = self.source.load()
        if self.requests is not None:
            finished = prov.finished_requests(self.requests)
            self.board.submissions = [replace(s, finished=finished) for s in self.board.submissions]
        self.rows = self.board.rows()
        self.by_key = {r.key: r for r in self.rows}
        self.labels = wording.model_labels(self.rows)
        self.key_by_label = {label: key for key, label in self.labels.items()}
        self._names = score_columns.headline_names([r.latest for r in self.rows])
        overview = score_columns.view_names(self._names, score_columns.OVERVIEW)
        self._ranked = board_table.sort_rows(self.rows, overview[0] if overview else None)

    def names(self, suites: Sequence[str] = ()) -> list[str]:
        return self._names if not suites else score_columns.headline_names([r.latest for r in self.rows], suites)

    def ranked(self) -> list[board_model.ModelRow]:
        """Rows in the leaderboard's default order (best first)."""
        return self._ranked

    def table(self, **filters: Any) -> board_table.Table:
        """One page of the leaderboard (``page``, ``page_size``: :mod:`paging`)."""
        return board_table.leaderboard_table(self.rows, labels=self.labels, page_size=paging.PAGE_SIZE,
                                      present=self.names(filters.get("suites") or ()), **filters)

    def model_choices(self, keep: Sequence[str] = ()) -> list[tuple[str, str]]:
        """A picker's choices: the first :data:`MAX_CHOICES` models of the default order and the
        ones in ``keep`` (a picker never lists every model)."""
        keys = [r.key for r in self._ranked[:MAX_CHOICES]]
        keys += [k for k in dict.fromkeys(keep) if k in self.by_key and k not in keys]
        return [(wording.row_label(self.by_key[k]), k) for k in keys]

    def first_key(self) -> str | None:
        return self._ranked[0].key if self._ranked else None

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

"""What the leaderboard app's tabs share: where the results come from (:class:`Source`: what it
holds now, a cheap stamp that says whether anything changed, its revision), the rows shown and
worked out once per reload (:class:`BoardState`; a reload that finds nothing changed keeps them,
one that finds changes says which rows: :class:`Change`), the context a tab builder gets
(:class:`AppContext`: the state, components other tabs reach into, refresh functions) and a tab's
entry in the app (:class:`Tab`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import gradio as gr
import pandas as pd

from benchmark.contract.digest import sha256_hex
from submissions import provenance as prov
from submissions.leaderboard import (board_index, board_model, board_table, contents, paging, results_files,
                                    score_columns, wording)
from submissions.leaderboard.accepted import CONTENTS_FILE
from submissions.leaderboard.links import Links

#: a model picker lists at most this many models (the best ranked, and those picked)
MAX_CHOICES = 100
#: the forest plot draws the selected models, else this many of the table's current order
FOREST_TOP = 20


class Source:
    """Where results come from (a folder, or a Hub dataset downloaded to one): ``load()`` re-reads,
    ``stamp()`` says cheaply what the source holds now (a local folder: its files' paths, sizes and
    times from one listing, nothing read; a Hub dataset: the file its contents table resolves to,
    one request), so that a reload finds out that nothing changed without reading anything."""

    def __init__(self, results_dir: str | Path | None = None, repo: str | None = None,
                 revision: str | None = None) -> None:
        if (results_dir is None) == (repo is None):
            raise ValueError("give exactly one of a results folder or a Hub results dataset")
        self.results_dir, self.repo, self.revision = results_dir, repo, revision
        self.commit: str | None = None  # the Hub dataset's commit the board was read at
        self._listing: results_files.Listing | None = None  # the folder as stamp() listed it

    def stamp(self) -> str | None:
        """What the source holds now, as a short text (None: it cannot be told, read it again)."""
        if self.repo is None:
            listing = results_files.list_results(self.results_dir) if Path(self.results_dir).is_dir() else None
            self._listing = listing  # what load() reads next: the folder is listed once a reload
            if listing is None:
                return None
            text = "\n".join([*(f"{f.rel}\t{f.size}\t{f.mtime_ns}" for f in listing.files),
                               *(f"{rel}\t{why}" for rel, why in listing.refused)])
            return "files " + sha256_hex(text.encode())
        try:
            folder = contents.download_contents(self.repo, self.revision)
        except Exception:
            return None
        if folder is None:
            return None
        table = folder / CONTENTS_FILE
        st = table.stat()
        return f"{table.resolve()}\t{st.st_size}\t{st.st_mtime_ns}"

    def load(self) -> board_index.Board:
        """The board; a Hub dataset that cannot be read gives an empty board with a visible error."""
        if self.repo is None:
            listing, self._listing = self._listing, None
            return contents.load_board(self.results_dir, listing=listing)
        try:
            table_folder = contents.download_contents(self.repo, self.revision)
            if table_folder is not None:  # one download: the table, not every JSON file
                try:
                    self.commit = table_folder.name
                    return contents.load_board(table_folder, f"{self.repo} (Hub dataset)", files_present=False)
                except contents.OldTable:
                    pass  # a table of an older version: the JSON files are read
            folder = results_files.download_results(self.repo, self.revision)
        except ValueError as exc:
            board = board_index.Board(source=self.repo)
            board.errors.append(str(exc))
            return board
        self.commit = folder.name
        return results_files.load_folder(folder, source=f"{self.repo} (Hub dataset)",
                                         within=results_files.hub_cache_folder(folder))

    def links(self) -> Links:
        """Where the board's links go (the Hub dataset at the commit read, or the local folder)."""
        if self.repo is not None:
            return Links(repo=self.repo, revision=self.commit or self.revision)
        return Links(root=Path(self.results_dir).resolve())

    def revision_text(self, stamp: str | None) -> str:
        """The contents revision the board came from, in words: the Hub dataset at its commit, or
        the local folder and a digest of its files' listing."""
        if self.repo is not None:
            return f"{self.repo}@{self.commit or self.revision or 'main'}"
        digest = stamp.split(" ", 1)[1][:16] if stamp else "unknown"
        return f"{Path(self.results_dir).resolve()} (files digest {digest})"


@dataclass(frozen=True)
class Change:
    """What a reload found: ``nothing`` changed (the board is kept as it was), or the row keys
    ``added``, ``removed`` and ``changed`` (their file's content)."""

    nothing: bool = False
    added: frozenset = frozenset()
    removed: frozenset = frozenset()
    changed: frozenset = frozenset()

    def touches(self, keys) -> bool:
        """Any of ``keys`` was removed or changed."""
        return bool((self.removed | self.changed) & set(keys or ()))

    def text(self) -> str:
        if self.nothing:
            return "nothing changed"
        parts = [f"{len(s):,} {w}" for s, w in ((self.added, "added"), (self.changed, "changed"),
                                              (self.removed, "removed")) if s]
        return ", ".join(parts) or "files re-read, no row changed"


def _row_versions(index: board_index.BoardIndex) -> dict[str, int]:
    """Row key -> a hash of its holder's columns (a change of any shown value, or of who evaluated
    it, changes it)."""
    rows = index.row_frame()
    if not len(rows):
        return {}
    hashes = pd.util.hash_pandas_object(rows, index=False)
    return dict(zip(rows["key"].tolist(), hashes.tolist()))


def _time_sensitive(board: board_index.Board) -> bool:
    """A file refused only for a time in the future: time may make it valid, so it is read again."""
    return any(results_files.FUTURE in s.problem for s in board.skipped)


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
        self.stamp: str | None = None
        self.change = Change()
        self._versions: dict[str, int] = {}
        self._read(*self._stamp())

    def _stamp(self) -> tuple[str | None, Mapping | None]:
        """(what the source and the queue hold now, the queue's FINISHED requests)."""
        stamp = self.source.stamp()
        finished = prov.finished_requests(self.requests) if self.requests is not None else None
        if stamp is not None and finished is not None:
            stamp += " queue " + sha256_hex("\n".join(sorted(f"{k}\t{r.results_path}"
                                                          for k, r in finished.items())).encode())
        return stamp, finished

    def reload(self) -> Change:
        """Read the source again, unless its stamp says nothing changed (then nothing is read or
        worked out again: the rows, labels and orders are kept). Returns what changed."""
        stamp, finished = self._stamp()
        if stamp is not None and stamp == self.stamp and not _time_sensitive(self.board):
            self.change = Change(nothing=True)
            return self.change
        before = self._versions
        self._read(stamp, finished)
        after = self._versions
        self.change = Change(added=frozenset(after.keys() - before.keys()),
                             removed=frozenset(before.keys() - after.keys()),
                             changed=frozenset(k for k in after.keys() & before.keys() if after[k] != before[k]))
        return self.change

    def _read(self, stamp: str | None, finished: Mapping | None) -> None:
        self.board = self.source.load()
        self.stamp = stamp
        if self.requests is not None:
            self.board.index = self.board.index.with_finished(finished)
        self.index = self.board.index
        self.by_key = Rows(self.index)
        self.labels = wording.index_labels(self.index)
        self.key_by_label = {label: key for key, label in self.labels.items()}
        self._names = board_table.present_names(self.index)
        overview = score_columns.view_names(self._names, score_columns.OVERVIEW)
        self._ranked = board_table.order_rows(self.index.row_frame(), overview[0] if overview else None)["key"].tolist()
        self._versions = _row_versions(self.index)
        self.links = self.source.links()
        self.revision = self.source.revision_text(stamp)

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
                                             present=self.names(filters.get("suites") or ()), links=self.links,
                                             **filters)

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
    loaders: list[tuple[Callable, list, list]] = field(default_factory=list)
    wiring: list[Callable[[], Any]] = field(default_factory=list)

    def on_reload(self, fn: Callable, inputs: list, outputs: list) -> None:
        """After a reload that changed something, ``fn(*inputs)`` gives the new values of ``outputs``
        (``state.change`` says which rows changed; a reload that changed nothing calls no one)."""
        self.reloaders.append((fn, list(inputs), list(outputs)))

    def on_load(self, fn: Callable, inputs: list, outputs: list) -> None:
        """When a page opens, ``fn(*inputs)`` gives the values of ``outputs`` (a view in its URL)."""
        self.loaders.append((fn, list(inputs), list(outputs)))

    def after_tabs(self, wire: Callable[[], Any]) -> None:
        """Run ``wire()`` once every tab exists (events that reach into another tab)."""
        self.wiring.append(wire)


@dataclass(frozen=True)
class Tab:
    id: str
    title: str
    build: Callable[[AppContext], None]

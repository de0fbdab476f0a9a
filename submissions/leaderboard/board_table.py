"""The leaderboard table: the rows of a board (its :class:`BoardIndex`) filtered (suites,
families, search, demo, who evaluated, who made the images, adapters, access, date, package
version), ranked, ordered, and one page of them laid out as a :class:`Table`
(:func:`leaderboard_table`; the columns themselves: :mod:`board_columns`). Everything here works
on the index's columns, over every row: a page is the only thing made per row.

Rules (also in ``docs/leaderboard.md``):

- Ranks, by the ranking score (:mod:`submissions.leaderboard.ranks`): *Rank*, the position in the
  order shown (by the value, or by each interval's worse end, ties of the worse end broken by
  the value), *Tier* (groups the intervals cannot order: tier 1 is tied with the leader) and
  *Range* (the ranks the intervals allow). Ranks count the rows the filters keep, the search
  apart; demo rows and undefined values are not ranked; scores a reference changes are ranked
  only among rows of that reference.
- Orders (:data:`board_view.ORDERS`), all over every row: by value (the default, and what a
  score header's click gives), conservative (by each interval's worse end), by mean win rate,
  best or worst first (undefined values after, demo rows last), by model name, by date. Scores a
  reference changes are never ordered across references: the papers' protocol first, then each
  reference's rows.
- A score's cell is the entry the contents table holds for it (one per score name, chosen by
  :func:`benchmark.present.text.entry_rank`); with a suites filter, only an entry of a chosen suite.
- Where that entry is corrected with people's labels (``human_corrected``,
  docs/human_correction.md) the cell, the rank and the order use the corrected value and interval
  ("(people)" in the cell), and such rows are ranked and ordered apart from automatic-only rows,
  first: the two measure different things (people's perception against the annotator's).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from benchmark.scores.metadata import SCORE_METADATA
from submissions import provenance
from submissions.leaderboard import board_view as bv
from submissions.leaderboard.board_columns import (  # noqa: F401 (re-exported: the table's names)
    BADGE_COLUMN, CELL_PAD_PX, MODEL_COLUMN, RANGE_COLUMN, RANK_COLUMN, SUITES_COLUMN, TABLE_PX, TIER_COLUMN,
    PageRows, badge_width, column_px, fitted_widths, lay_out, people_checked, score_columns_of, text_px)
from submissions.leaderboard.board_index import BoardIndex
from submissions.leaderboard.board_model import ModelRow
from submissions.leaderboard.board_view import (BY_VALUE, BY_VALUE_WORST, CONSERVATIVE, CONSERVATIVE_WORST,  # noqa: F401
                                                MODEL_AZ, MODEL_ZA, NEWEST, OLDEST, ORDERS, WIN_RATE, WIN_RATE_WORST)
from submissions.leaderboard.links import Links
from submissions.leaderboard.paging import Page, page_of
from submissions.leaderboard.ranks import (RankRange, badness_intervals, conservative_ranks, rank_range_arrays, tiers,
                                           value_ranks)
from submissions.leaderboard.score_columns import OVERVIEW, REFERENCED_PAPERS, headline_order, view_names
from submissions.leaderboard.wording import index_labels

#: the index of the first score column with the default columns (Model, Rank, Tier, Badge, Suites)
FIRST_SCORE = 2 + len(bv.DEFAULT_COLUMNS)


def _index_of(rows: BoardIndex | Sequence[ModelRow]) -> BoardIndex:
    return rows if isinstance(rows, BoardIndex) else BoardIndex.of_submissions([r.latest for r in rows])


def present_names(index: BoardIndex, suites: Sequence[str] = ()) -> list[str]:
    """Headline score names some row has (metadata order), with an entry of ``suites`` if given."""
    frame = index.frame
    present = {n for n in index.names if (frame[f"{n}_suite"].isin(suites) if suites else
                                          frame[f"{n}_suite"].notna()).any()}
    return headline_order(present)


def _has_suites(index: BoardIndex, positions: np.ndarray, suites: Sequence[str]) -> np.ndarray:
    """Per position: the file scored every suite of ``suites``."""
    column = index.table.column("suites").combine_chunks().take(pa.array(positions, type=pa.int64()))
    flat, parents = pc.list_flatten(column), pc.list_parent_indices(column)
    ok = np.ones(len(positions), dtype=bool)
    for suite in suites:
        has = np.zeros(len(positions), dtype=bool)
        has[parents.filter(pc.equal(flat, suite)).to_numpy()] = True
        ok &= has
    return ok


def _made_between(created: pd.Series, since: str, until: str) -> np.ndarray:
    """Per row: created on or after ``since`` and on or before ``until`` (YYYY-MM-DD, UTC; "" = open)."""
    keep = np.ones(len(created), dtype=bool)
    when = pd.to_datetime(created, utc=True)
    for day, after in ((since, True), (until, False)):
        try:
            bound = pd.Timestamp(_dt.date.fromisoformat(day), tz="UTC") if day else None
        except ValueError:
            bound = None
        if bound is not None:
            keep &= ((when >= bound) if after else (when < bound + pd.Timedelta(days=1))).fillna(False).to_numpy()
    return keep


def filter_rows(rows: BoardIndex | Sequence[ModelRow], *, suites: Sequence[str] = (), families: Sequence[str] = (),
                search: str = "", show_demo: bool = True, provenance_filter: str = "all", images: str = "all",
                adapters: str = "all", access: str = "all", since: str = "", until: str = "",
                versions: Sequence[str] = ()) -> pd.DataFrame:
    """The rows (frame of their holders, natural order) that scored every suite in ``suites``, of
    a family in ``families`` (empty: any), whose model id contains ``search`` (case-insensitive),
    evaluated as ``provenance_filter`` says (``all``, the maintainers' worker, self-reported), with
    images made as ``images`` says (``all``, generated, supplied, api), with or without adapters
    (:data:`board_view.ADAPTERS_CHOICES`), reached as ``access`` says, made between ``since`` and
    ``until`` (YYYY-MM-DD), by a package version in ``versions`` (empty: any)."""
    index = _index_of(rows)
    rows = index.row_frame()
    keep = np.ones(len(rows), dtype=bool)
    if provenance_filter and provenance_filter != "all":
        keep &= rows["evaluated"].to_numpy() == (provenance_filter == provenance.PROVENANCE_WORKER)
    if images and images != "all":
        keep &= (rows["images"] == images).to_numpy()
    if families:
        keep &= rows["family"].isin(families).to_numpy()
    if versions:
        keep &= rows["package_version"].isin(versions).to_numpy()
    if adapters in (bv.BASE_ONLY, bv.WITH_ADAPTERS):
        keep &= (rows["n_adapters"].to_numpy() > 0) == (adapters == bv.WITH_ADAPTERS)
    if access and access != "all":
        keep &= (rows["access"] == access).to_numpy()
    if since or until:
        keep &= _made_between(rows["created"], since, until)
    if not show_demo:
        keep &= ~rows["demo"].to_numpy(dtype=bool)
    needle = (search or "").strip().lower()
    if needle:
        keep &= rows["model_id"].str.lower().str.contains(needle, regex=False).to_numpy()
    if suites and len(rows):
        keep &= _has_suites(index, rows.index.to_numpy(), suites)
    return rows[keep]


def _groups(rows: pd.DataFrame, name: str) -> np.ndarray:
    """Which rows are ranked and ordered together by ``name``: rows whose entry is corrected with
    people's labels apart from (before) automatic-only rows, and within each the reference group
    (codes, the papers' protocol first) for a score a reference changes."""
    apart = (~people_checked(rows, name)).astype(int)
    if SCORE_METADATA[name].paper not in REFERENCED_PAPERS:
        return apart
    return apart * len(rows) + pd.factorize(rows["reference"].fillna("").to_numpy(dtype=object), sort=True)[0]


@dataclass
class Ranked:
    """The ranks of rows by one score, per row (aligned with the rows given): ``value`` and
    ``conservative`` ranks (0: not ranked), ``tier`` (0: none), the rank range (``range_best``,
    ``range_worst``; 0: not ranked); ``leaders``, the rows tied with the leader (tier 1) of the
    first group (the papers' protocol), and ``clipped``, the ranked rows whose interval reaches a
    limit of the score."""

    value: np.ndarray
    conservative: np.ndarray
    tier: np.ndarray
    range_best: np.ndarray
    range_worst: np.ndarray
    leaders: int = 0
    clipped: int = 0
    count: int = 0  # the rows ranked
    tiers: int = 0  # the tiers of the first group

    @property
    def ranges(self) -> list[RankRange | None]:
        """The rank ranges (None: not ranked)."""
        return [RankRange(int(b), int(w)) if b else None for b, w in zip(self.range_best, self.range_worst)]

    def take(self, at: np.ndarray) -> Ranked:
        """The ranks of the rows at positions ``at``."""
        return Ranked(self.value[at], self.conservative[at], self.tier[at], self.range_best[at], self.range_worst[at],
                      self.leaders, self.clipped, self.count, self.tiers)


def rank_rows(rows: pd.DataFrame, name: str | None, suites: Sequence[str] = ()) -> Ranked:
    """Ranks of ``rows`` by score ``name``: among rows with a defined value, never demo rows, in
    their group (:func:`_groups`)."""
    out = Ranked(*(np.zeros(len(rows), dtype=int) for _ in range(5)))
    if not name or not len(rows):
        return out
    meta = SCORE_METADATA[name]
    value, low, high, _ = score_columns_of(rows, name, suites)
    best, worse = badness_intervals(meta, value, low, high)
    point = meta.badness(value)
    ranked = np.isfinite(value) & ~rows["demo"].to_numpy(dtype=bool)
    out.count = int(ranked.sum())
    groups = _groups(rows, name)
    for g in np.unique(groups[ranked]):
        where = np.flatnonzero(ranked & (groups == g))
        out.value[where] = value_ranks(point[where])
        out.conservative[where] = conservative_ranks(worse[where], point[where])
        out.tier[where] = tiers(best[where], worse[where])
        out.range_best[where], out.range_worst[where] = rank_range_arrays(best[where], worse[where])
        out.leaders = out.leaders or int(np.sum(out.tier[where] == 1))
        out.tiers = out.tiers or int(out.tier[where].max())
    at_limit = (np.nan_to_num(low, nan=np.inf) <= meta.min_value) | (np.nan_to_num(high, nan=-np.inf) >= meta.max_value)
    out.clipped = int(np.sum(ranked & at_limit))
    return out


def win_rates(rows: pd.DataFrame, names: Sequence[str], suites: Sequence[str] = ()) -> np.ndarray:
    """Per row, the mean win rate over the scores ``names`` (HEIM's overall view): for each score,
    the share of the other ranked rows of its group whose value is worse (ties count half),
    averaged over the scores the row has a ranked value of; NaN for rows with none (and demo rows)."""
    total, count = np.zeros(len(rows)), np.zeros(len(rows))
    demo = rows["demo"].to_numpy(dtype=bool) if len(rows) else np.zeros(0, dtype=bool)
    for name in names:
        value, *_ = score_columns_of(rows, name, suites)
        bad = SCORE_METADATA[name].badness(value)
        ranked = np.isfinite(value) & ~demo
        groups = _groups(rows, name)
        for g in np.unique(groups[ranked]):
            where = np.flatnonzero(ranked & (groups == g))
            if len(where) < 2:
                continue
            ordered = np.sort(bad[where])
            worse = len(where) - np.searchsorted(ordered, bad[where], side="right")
            ties = np.searchsorted(ordered, bad[where], side="right") - np.searchsorted(ordered, bad[where], side="left")
            total[where] += (worse + 0.5 * (ties - 1)) / (len(where) - 1)
            count[where] += 1
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def order_rows(rows: pd.DataFrame, name: str | None, how: str = BY_VALUE, suites: Sequence[str] = (),
               win: np.ndarray | None = None) -> pd.DataFrame:
    """``rows`` in the order ``how`` (:data:`board_view.ORDERS`) by score ``name`` (see the module
    docstring; ``win``: the rows' mean win rates, for that order); ties keep the natural order
    (model id, key)."""
    natural = np.arange(len(rows))
    order = bv.order_of(how)
    if order.mode == "name":
        return rows if not order.reverse else rows.iloc[::-1]
    if order.mode == "created":
        when = pd.to_datetime(rows["created"], utc=True)
        stamp = when.astype("int64").to_numpy(dtype=float) if len(rows) else np.zeros(0)
        stamp = np.where(when.isna().to_numpy(), np.nan, stamp)
        key = np.where(np.isnan(stamp), 0.0, stamp if order.reverse else -stamp)
        return rows.iloc[np.lexsort((natural, key, np.isnan(stamp)))]
    demo = rows["demo"].to_numpy(dtype=bool)
    sign = -1.0 if order.reverse else 1.0
    if order.mode == "win_rate":
        win = np.full(len(rows), np.nan) if win is None else win
        return rows.iloc[np.lexsort((natural, np.where(np.isnan(win), 0.0, -sign * win), np.isnan(win), demo))]
    if not name:
        return rows.iloc[np.lexsort((natural, demo))]
    value, low, high, _ = score_columns_of(rows, name, suites)
    meta = SCORE_METADATA[name]
    _, worse = badness_intervals(meta, value, low, high)
    undefined = ~np.isfinite(value)
    worse = np.where(undefined, 0.0, sign * worse)
    point = np.where(undefined, 0.0, sign * meta.badness(np.nan_to_num(value)))
    first, second = (point, worse) if order.mode == "value" else (worse, point)
    return rows.iloc[np.lexsort((natural, second, first, undefined, _groups(rows, name), demo))]


def sort_rows(rows: Sequence[ModelRow], name: str | None, suites: Sequence[str] = ()) -> list[ModelRow]:
    """``rows`` best first by the value of score ``name`` (:func:`order_rows`), as rows (the forest plots' order)."""
    rows = list(rows)
    index = _index_of(rows)
    by_key = {r.key: r for r in rows}
    return [by_key[k] for k in order_rows(index.row_frame(), name, BY_VALUE, suites)["key"]]


@dataclass
class Table:
    """The leaderboard table (one page of it): numbers behind the cells, the text shown."""

    headers: list[str]
    values: list[list[Any]]
    display: list[list[str]]
    datatype: list[str]
    widths: list[str]
    keys: list[str]  # row keys of the page, in row order
    page: Page | None = None  # which page of how many matching rows
    order: list[str] = field(default_factory=list)  # the keys of every matching row, in order
    leaders: int = 0  # rows tied with the leader (tier 1)
    ranked_by: str | None = None  # the score of the ranks and the order
    how: str = BY_VALUE  # the order (board_view.ORDERS)
    styling: list[list[str]] = field(default_factory=list)  # per cell CSS ("not scored" greyed)
    kinds: list[str] = field(default_factory=list)  # per column: what its header click orders by
    scores: list[str | None] = field(default_factory=list)  # per column: its score (None: not a score)
    tiers: int = 0  # the tiers among the rows ranked (the first group: the papers' protocol)
    clipped: int = 0  # ranked rows whose interval reaches a limit of the score
    ranked: int = 0  # rows ranked (defined values, no demo; the search apart)

    @property
    def first_score(self) -> int:
        """The index of the first score column."""
        return next((i for i, s in enumerate(self.scores) if s is not None), len(self.headers))

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.values, columns=self.headers)

    def shown(self) -> pd.DataFrame:
        """What the page shows, as text (the Model cell: its link's text, the label)."""
        frame = pd.DataFrame(self.display, columns=self.headers)
        if MODEL_COLUMN in frame:
            frame[MODEL_COLUMN] = [row[self.headers.index(MODEL_COLUMN)] for row in self.values]
        return frame

    def gradio_value(self) -> dict:
        """The ``gr.Dataframe`` value: numbers as data, the "value [low, high]" text as display values."""
        styling = self.styling or [[""] * len(self.headers) for _ in self.display]
        return {"headers": self.headers, "data": self.values,
                "metadata": {"display_value": self.display, "styling": styling}}


@dataclass
class Board:
    """Every row a view keeps, ordered, with their ranks (the table's pages and the download read it)."""

    rows: pd.DataFrame  # the frame of the rows kept by the filters and the search, in order
    ranked: Ranked  # aligned with ``rows``
    win_rate: np.ndarray  # aligned with ``rows``
    sort_by: str | None
    names: list[str]
    how: str


def view_board(index: BoardIndex, *, suites: Sequence[str] = (), families: Sequence[str] = (), search: str = "",
               show_demo: bool = True, sort_by: str | None = None, order: str = BY_VALUE,
               names: Sequence[str] | None = None, view: str | None = OVERVIEW, evaluated: str = "all",
               images: str = "all", adapters: str = "all", access: str = "all", since: str = "", until: str = "",
               versions: Sequence[str] = (), present: Sequence[str] | None = None,
               with_win_rate: bool = True) -> Board:
    """Every row of ``index`` that the filters and the search keep, ranked (the search apart: it
    does not re-rank) and in the order ``order`` by ``sort_by`` (default: the first score column),
    with their mean win rates over the score columns (``with_win_rate``; else only for that order)."""
    present = present_names(index, suites) if present is None else present
    names = list(names) if names is not None else view_names(present, view)
    if sort_by not in present:
        sort_by = names[0] if names else None
    filtered = filter_rows(index, suites=suites, families=families, show_demo=show_demo, provenance_filter=evaluated,
                           images=images, adapters=adapters, access=access, since=since, until=until,
                           versions=versions)
    ranked = rank_rows(filtered, sort_by, suites)
    win = win_rates(filtered, names, suites) if with_win_rate or bv.order_of(order).mode == "win_rate" else \
        np.full(len(filtered), np.nan)
    needle = (search or "").strip().lower()
    found = filtered["model_id"].str.lower().str.contains(needle, regex=False).to_numpy() if needle else \
        np.ones(len(filtered), dtype=bool)
    how = bv.order_of(order).key
    ordered = order_rows(filtered[found], sort_by, how, suites, win[found])
    at = filtered.index.get_indexer(ordered.index)
    return Board(ordered, ranked.take(at), win[at], sort_by, names, how)


def leaderboard_table(rows: BoardIndex | Sequence[ModelRow], *, page: Any = 1, page_size: int | None = None,
                      labels: Mapping[str, str] | None = None, columns: Sequence[str] = bv.DEFAULT_COLUMNS,
                      links: Links | None = None, **filters: Any) -> Table:
    """The leaderboard: one row per model, Model and Rank, the optional ``columns``
    (:data:`board_columns.COLUMNS`), one "value [low, high]" column per headline score of ``view``
    (``names`` overrides it), in the order ``order`` (:data:`board_view.ORDERS`) by ``sort_by``
    (default: the first score column); with ``page_size`` only page ``page`` of the matching rows is
    made (:mod:`submissions.leaderboard.paging`). ``filters``: those of :func:`view_board`.

    Ranks count the rows the filters keep, the search apart (searching does not re-rank). Score
    cells hold the value as a number (None when undefined) and show "value [low, high]" or "not
    scored"; the Badge and Suites cells are HTML made here from fixed names and escaped text; the
    Model cell's value is the label (rows are found by it), its text a link. ``labels`` and
    ``present`` (the headline names the rows have) may be given, worked out once.
    """
    index = _index_of(rows)
    board = view_board(index, with_win_rate="win_rate" in columns, **filters)
    shown = page_of(len(board.rows), page, page_size or max(1, len(board.rows)))
    kept = board.rows.iloc[shown.start:shown.stop]
    part = board.ranked.take(np.arange(shown.start, shown.stop))
    labels = labels if labels is not None else index_labels(index)
    positions = kept.index.to_numpy()
    subs = index.submissions(positions)
    adapters = index.table.column("adapters").take(pa.array(positions, type=pa.int64())).to_pylist() \
        if len(positions) else []
    mode = bv.order_of(board.how).mode
    rank = part.conservative if mode == "conservative" else part.value
    if mode == "win_rate":
        rank = _win_rank(board.win_rate)[shown.start:shown.stop]
    page_rows = PageRows(kept, subs, labels, rank, part.tier, part.ranges, board.win_rate[shown.start:shown.stop],
                         adapters, links or Links())
    laid = lay_out(page_rows, columns, board.names, filters.get("suites") or ())
    return Table(laid.headers, laid.values, laid.display, laid.datatype, laid.widths, keys=[s.key for s in subs],
                 page=shown, order=board.rows["key"].tolist(), leaders=board.ranked.leaders, ranked_by=board.sort_by,
                 how=board.how, styling=laid.styling, kinds=laid.kinds, scores=laid.scores,
                 tiers=board.ranked.tiers, clipped=board.ranked.clipped, ranked=board.ranked.count)


def _win_rank(win: np.ndarray) -> np.ndarray:
    """Ranks by mean win rate (higher first; ties share; 0 where there is none)."""
    out = np.zeros(len(win), dtype=int)
    ok = np.isfinite(win)
    out[ok] = value_ranks(-win[ok])
    return out


def all_suites(rows: BoardIndex | Sequence[ModelRow]) -> list[str]:
    """Every suite some row scored (the suites filter's choices)."""
    table = _index_of(rows).table
    return sorted(set(pc.list_flatten(table.column("suites")).to_pylist())) if table.num_rows else []


def all_families(rows: BoardIndex | Sequence[ModelRow]) -> list[str]:
    return sorted(set(_index_of(rows).row_frame()["family"].dropna()))


def all_versions(rows: BoardIndex | Sequence[ModelRow]) -> list[str]:
    """Every package version that made some row (the version filter's choices)."""
    return sorted(set(_index_of(rows).row_frame()["package_version"].dropna()))

"""The leaderboard table: the rows of a board (its :class:`BoardIndex`) filtered (suites,
families, search, demo, who evaluated, who made the images), ordered, ranked, and one page of
them laid out as a :class:`Table` (:func:`leaderboard_table`). Everything here works on the
index's columns, over every row: a page is the only thing made per row.

Rules (also in ``docs/leaderboard.md``):

- Rank columns, by the ranking score (:mod:`submissions.leaderboard.ranks`): *Rank*, the bound
  rank (by the worse end of each interval), and *Range*, the ranks the intervals allow (``≈``:
  tied). Ranks count the rows the filters keep, the search apart; demo rows and undefined values
  are not ranked; scores a reference changes are ranked only among rows of that reference.
- Orders (:data:`ORDERS`), all over every row: *best first* (by the bound rank, then the value;
  undefined values after, demo rows last), *worst first* (the reverse, undefined values and demo
  rows still last), and by model name (A to Z, Z to A). Scores a reference changes are never
  ordered across references: the papers' protocol first, then each reference's rows.
- A score's cell is the entry the contents table holds for it (one per score name, chosen by
  :func:`benchmark.present.text.entry_rank`); with a suites filter, only an entry of a chosen suite.
- Where that entry is corrected with people's labels (``human_corrected``,
  docs/human_correction.md) the cell, the rank and the order use the corrected value and interval
  ("(people)" in the cell), and such rows are ranked and ordered apart from automatic-only rows,
  first: the two measure different things (people's perception against the annotator's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from benchmark.scores.metadata import SCORE_METADATA
from submissions import provenance
from submissions.leaderboard.board_index import BoardIndex
from submissions.leaderboard.board_model import ModelRow, Submission
from submissions.leaderboard.paging import Page, page_of
from submissions.leaderboard.ranks import RankRange, badness_intervals, bound_ranks, rank_ranges
from submissions.leaderboard.score_columns import (OVERVIEW, REFERENCED_PAPERS, cell_text, headline_order,
                                                   value_column, view_names)
from submissions.leaderboard.wording import badges, badges_html, index_labels, suites_html

MODEL_COLUMN, RANK_COLUMN, RANGE_COLUMN, BADGE_COLUMN, SUITES_COLUMN = "Model", "Rank", "Range", "Badge", "Suites"
#: the index of the first score column (Model, Rank, Range, Badge, Suites come first)
FIRST_SCORE = 5
BEST_FIRST, WORST_FIRST, MODEL_AZ, MODEL_ZA = "best first", "worst first", "model A–Z", "model Z–A"
#: the orders a visitor can choose, every one over all rows
ORDERS = (BEST_FIRST, WORST_FIRST, MODEL_AZ, MODEL_ZA)


def badge_width(subs: Iterable[Submission]) -> int:
    """The Badge column's width (px): room for the widest set of badges a row has (12 px bold
    letters, 16 px padding, 2 px border and 3 px margin per badge), never less than its header."""
    widest = max((sum(text_px(name, bold=True) * 12 / 13 + 21 for name, _ in badges(s)) for s in subs), default=0)
    return max(column_px([], BADGE_COLUMN), int(widest) + CELL_PAD_PX + 4)


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


def filter_rows(rows: BoardIndex | Sequence[ModelRow], *, suites: Sequence[str] = (), families: Sequence[str] = (), search: str = "",
                show_demo: bool = True, provenance_filter: str = "all", images: str = "all") -> pd.DataFrame:
    """The rows (frame of their holders, natural order) that scored every suite in ``suites``, of
    a family in ``families`` (empty: any), whose model id contains ``search`` (case-insensitive),
    evaluated as ``provenance_filter`` says (``all``, the maintainers' worker, self-reported), with
    images made as ``images`` says (``all``, generated, supplied, api)."""
    index = _index_of(rows)
    rows = index.row_frame()
    keep = np.ones(len(rows), dtype=bool)
    if provenance_filter and provenance_filter != "all":
        keep &= rows["evaluated"].to_numpy() == (provenance_filter == provenance.PROVENANCE_WORKER)
    if images and images != "all":
        keep &= (rows["images"] == images).to_numpy()
    if families:
        keep &= rows["family"].isin(families).to_numpy()
    if not show_demo:
        keep &= ~rows["demo"].to_numpy(dtype=bool)
    needle = (search or "").strip().lower()
    if needle:
        keep &= rows["model_id"].str.lower().str.contains(needle, regex=False).to_numpy()
    if suites and len(rows):
        keep &= _has_suites(index, rows.index.to_numpy(), suites)
    return rows[keep]


def people_checked(rows: pd.DataFrame, name: str) -> np.ndarray:
    """Per row: its entry of score ``name`` has a value corrected with people's labels."""
    if f"{name}_people" not in rows:
        return np.zeros(len(rows), dtype=bool)
    return np.isfinite(rows[f"{name}_people"].to_numpy(dtype=float, na_value=np.nan))


def score_columns_of(rows: pd.DataFrame, name: str, suites: Sequence[str] = ()) -> tuple[np.ndarray, ...]:
    """(value, low, high, has an entry) of score ``name`` for ``rows`` (NaN where undefined or
    absent; with ``suites``, an entry of another suite counts as absent): the value corrected with
    people's labels and its interval where the entry has one (:func:`people_checked`)."""
    if f"{name}_suite" not in rows:
        nan = np.full(len(rows), np.nan)
        return nan, nan, nan, np.zeros(len(rows), dtype=bool)
    has = rows[f"{name}_suite"].isin(suites).to_numpy() if suites else rows[f"{name}_suite"].notna().to_numpy()
    people = people_checked(rows, name)
    cols = []
    for p in ("", "_low", "_high"):
        auto = rows[f"{name}{p}"].to_numpy(dtype=float, na_value=np.nan)
        if people.any():
            auto = np.where(people, rows[f"{name}_people{p}"].to_numpy(dtype=float, na_value=np.nan), auto)
        cols.append(np.where(has, auto, np.nan))
    return (*cols, has)


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
    """The ranks of rows by one score: per row (aligned with the rows given) the bound rank
    (0: not ranked), the rank range (None: not ranked), and the number of rows tied with the
    leader of the largest group (the papers' protocol)."""

    bound: np.ndarray
    ranges: list[RankRange | None]
    leaders: int = 0


def rank_rows(rows: pd.DataFrame, name: str | None, suites: Sequence[str] = ()) -> Ranked:
    """Ranks of ``rows`` by score ``name``: among rows with a defined value, never demo rows, in
    their group (:func:`_groups`)."""
    bound, ranges = np.zeros(len(rows), dtype=int), [None] * len(rows)
    if not name or not len(rows):
        return Ranked(bound, ranges)
    value, low, high, _ = score_columns_of(rows, name, suites)
    best, worse = badness_intervals(SCORE_METADATA[name], value, low, high)
    ranked = np.isfinite(value) & ~rows["demo"].to_numpy(dtype=bool)
    groups = _groups(rows, name)
    leaders = 0
    for g in np.unique(groups[ranked]):
        where = np.flatnonzero(ranked & (groups == g))
        bound[where] = bound_ranks(worse[where])
        got = rank_ranges((int(i), (best[i], worse[i])) for i in where)
        for i, r in got.items():
            ranges[i] = r
        leaders = leaders or sum(1 for r in got.values() if r.best == 1)
    return Ranked(bound, ranges, leaders)


def order_rows(rows: pd.DataFrame, name: str | None, how: str = BEST_FIRST, suites: Sequence[str] = ()
               ) -> pd.DataFrame:
    """``rows`` in the order ``how`` (:data:`ORDERS`) by score ``name`` (see the module docstring);
    ties keep the natural order (model id, key)."""
    natural = np.arange(len(rows))
    if how in (MODEL_AZ, MODEL_ZA):
        return rows if how == MODEL_AZ else rows.iloc[::-1]
    demo = rows["demo"].to_numpy(dtype=bool)
    if not name:
        return rows.iloc[np.lexsort((natural, demo))]
    value, low, high, _ = score_columns_of(rows, name, suites)
    meta = SCORE_METADATA[name]
    _, worse = badness_intervals(meta, value, low, high)
    undefined = ~np.isfinite(value)
    sign = -1.0 if how == WORST_FIRST else 1.0
    worse = np.where(undefined, 0.0, sign * worse)
    point = np.where(undefined, 0.0, sign * meta.badness(np.nan_to_num(value)))
    return rows.iloc[np.lexsort((natural, point, worse, undefined, _groups(rows, name), demo))]


def sort_rows(rows: Sequence[ModelRow], name: str | None, suites: Sequence[str] = ()) -> list[ModelRow]:
    """``rows`` best first by score ``name`` (:func:`order_rows`), as rows (the forest plots' order)."""
    rows = list(rows)
    index = _index_of(rows)
    by_key = {r.key: r for r in rows}
    return [by_key[k] for k in order_rows(index.row_frame(), name, BEST_FIRST, suites)["key"]]


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
    leaders: int = 0  # rows tied with the leader (rank range from 1)
    ranked_by: str | None = None  # the score of the ranks and the order
    how: str = BEST_FIRST  # the order (ORDERS)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.values, columns=self.headers)

    def shown(self) -> pd.DataFrame:
        """What the page shows, as text."""
        return pd.DataFrame(self.display, columns=self.headers)

    def gradio_value(self) -> dict:
        """The ``gr.Dataframe`` value: numbers as data, the "value [low, high]" text as display values."""
        return {"headers": self.headers, "data": self.values,
                "metadata": {"display_value": self.display, "styling": [[""] * len(self.headers)
                                                                          for _ in self.display]}}


def _cell(value: float, low: float, high: float, has: bool) -> dict | None:
    """The entry a score cell shows, from its columns."""
    if not has:
        return None
    ci = {"low": low, "high": high} if np.isfinite(low) and np.isfinite(high) else None
    return {"value": value if np.isfinite(value) else None, "defined": bool(np.isfinite(value)), "ci": ci}


#: the table's width at a 1280 px window (Gradio's 1216 px content width, less its border): the
#: Model column takes what the others leave, so the table fills it
TABLE_PX = 1212
#: a cell's padding, left and right together (the app's CSS), and a safety margin on text widths
CELL_PAD_PX, TEXT_MARGIN = 12, 1.03
_NARROW, _WIDE = set(".,:;'|!iljfrtI ()[]-/"), set("mwMW@%")


def text_px(text: str, bold: bool = False) -> float:
    """The width of ``text`` in the table's 13 px sans-serif (digits 6.5 px, punctuation and
    i, l, f, t, r narrower, m, w wider; bold headers in a system font about a third wider)."""
    width = sum(3.6 if c in _NARROW else 10.5 if c in _WIDE else 7.8 if c.isupper() else 6.55 for c in text)
    return width * TEXT_MARGIN * (1.32 if bold else 1.0)


def column_px(texts: Iterable[str], header: str, minimum: int = 40) -> int:
    """A column wide enough for its longest text on one line and for each word of its header
    (headers wrap between words)."""
    longest = max((text_px(t) for t in texts), default=0.0)
    word = max((text_px(w, bold=True) for w in header.split()), default=0.0)
    return max(minimum, int(max(longest, word) + CELL_PAD_PX + 1))


def fitted_widths(widths: list[int], model_index: int = 0, model_min: int = 140) -> list[int]:
    """``widths`` with the Model column given what the others leave of :data:`TABLE_PX` (never
    less than ``model_min``, nor than its own text needs when it fits): the table fills a 1280 px
    window; wider tables (many score columns) scroll inside their box, the Model column pinned."""
    rest = sum(w for i, w in enumerate(widths) if i != model_index)
    out = list(widths)
    out[model_index] = max(model_min, TABLE_PX - rest) if rest + widths[model_index] <= TABLE_PX else \
        max(model_min, min(widths[model_index], TABLE_PX - rest))
    return out


def leaderboard_table(rows: BoardIndex | Sequence[ModelRow], *, suites: Sequence[str] = (),
                      families: Sequence[str] = (), search: str = "", show_demo: bool = True,
                      sort_by: str | None = None, order: str = BEST_FIRST, names: Sequence[str] | None = None,
                      view: str | None = OVERVIEW, evaluated: str = "all", images: str = "all", page: Any = 1,
                      page_size: int | None = None, labels: Mapping[str, str] | None = None,
                      present: Sequence[str] | None = None) -> Table:
    """The leaderboard: one row per model, the Rank and Range columns (by ``sort_by``), one
    "value [low, high]" column per headline score of ``view`` (``names`` overrides it), in the order
    ``order`` (:data:`ORDERS`) by ``sort_by`` (default: the first column); with ``page_size`` only
    page ``page`` of the matching rows is made (:mod:`submissions.leaderboard.paging`).

    Ranks count the rows the filters keep, the search apart (searching does not re-rank). Score
    cells hold the value as a number (None when undefined) and show :func:`cell_text`; the Badge
    and Suites cells are HTML made here from fixed names and escaped text; the Model cell is plain
    text (the page shows it as text). ``labels`` and ``present`` (the headline names the rows
    have) may be given, worked out once.
    """
    index = _index_of(rows)
    present = present_names(index, suites) if present is None else present
    names = list(names) if names is not None else view_names(present, view)
    if sort_by not in present:
        sort_by = names[0] if names else None
    filtered = filter_rows(index, suites=suites, families=families, show_demo=show_demo,
                           provenance_filter=evaluated, images=images)
    ranked = rank_rows(filtered, sort_by, suites)
    ranks = pd.DataFrame({"bound": ranked.bound, "range": pd.Series(ranked.ranges, dtype=object).to_numpy()},
                         index=filtered.index)
    needle = (search or "").strip().lower()
    found = filtered[filtered["model_id"].str.lower().str.contains(needle, regex=False)] if needle else filtered
    order = order if order in ORDERS else BEST_FIRST
    ordered = order_rows(found, sort_by, order, suites)
    shown = page_of(len(ordered), page, page_size or max(1, len(ordered)))
    kept = ordered.iloc[shown.start:shown.stop]
    labels = labels if labels is not None else index_labels(index)
    subs = index.submissions(kept.index.to_numpy())
    headers = [MODEL_COLUMN, RANK_COLUMN, RANGE_COLUMN, BADGE_COLUMN, SUITES_COLUMN] + [value_column(n) for n in names]
    values, display = [], []
    cells = {n: score_columns_of(kept, n, suites) for n in names}
    checked = {n: people_checked(kept, n) & cells[n][3] for n in names}
    for j, (pos, s) in enumerate(zip(kept.index, subs)):
        bound, rng = int(ranks.at[pos, "bound"]), ranks.at[pos, "range"]
        base = [labels[s.key], bound or None, rng.best if rng else None, badges_html(s), suites_html(s)]
        entries = [_cell(*(c[j] for c in cells[n])) for n in names]
        values.append(base + [e["value"] if e and e["defined"] else None for e in entries])
        display.append([base[0], str(bound) if bound else "", rng.text() if rng else "", *base[3:]]
                       + [cell_text(e) + (" (people)" if checked[n][j] else "") for n, e in zip(names, entries)])
    texts = list(zip(*display)) if display else [()] * len(headers)
    widths = fitted_widths([column_px(texts[0], MODEL_COLUMN, 140), column_px(texts[1], RANK_COLUMN),
                            column_px(texts[2], RANGE_COLUMN), badge_width(subs), column_px([str(len(s.suites)) for s in subs], SUITES_COLUMN)]
                           + [column_px(texts[FIRST_SCORE + k], headers[FIRST_SCORE + k], 64)
                              for k in range(len(names))])
    return Table(headers, values, display, datatype=["str", "number", "number", "html", "html"] + ["number"] * len(names),
                 widths=[f"{w}px" for w in widths], keys=[s.key for s in subs], page=shown,
                 order=ordered["key"].tolist(), leaders=ranked.leaders, ranked_by=sort_by, how=order)


def all_suites(rows: BoardIndex | Sequence[ModelRow]) -> list[str]:
    """Every suite some row scored (the suites filter's choices)."""
    table = _index_of(rows).table
    return sorted(set(pc.list_flatten(table.column("suites")).to_pylist())) if table.num_rows else []


def all_families(rows: BoardIndex | Sequence[ModelRow]) -> list[str]:
    return sorted(set(_index_of(rows).row_frame()["family"].dropna()))

"""The columns of the leaderboard table: each is one :class:`Column` (its header, what its header
click orders by, its hover text, how its cells are made from a page's rows) in :data:`COLUMNS`,
the optional ones a visitor picks; the Model and Rank columns always come first and the score
columns last. A new column is one more entry of :data:`COLUMNS` (and, to be shown by default,
of :data:`board_view.DEFAULT_COLUMNS`).

Also here: the score cells (:func:`score_columns_of`, "value [low, high]" or "not scored") and the
columns' widths, worked out on the server from the text a page shows (the table's 13 px font), so
that the overview fills a 1280 px window with every score cell on one line.

Results text reaches HTML cells only through :func:`benchmark.present.text.html_escape`; links
come from :mod:`links` (validated ids) and are escaped too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from benchmark.present.text import html_escape
from submissions.leaderboard.board_model import Submission
from submissions.leaderboard.board_view import ACCESS_WORDS
from submissions.leaderboard.links import Links, adapter_name, adapter_url
from submissions.leaderboard.ranks import RankRange
from submissions.leaderboard.score_columns import cell_text, value_column
from submissions.leaderboard.wording import badges, badges_html, short_revision, suites_html

MODEL_COLUMN, RANK_COLUMN, RANGE_COLUMN, BADGE_COLUMN, SUITES_COLUMN = "Model", "Rank", "Range", "Badge", "Suites"
TIER_COLUMN, WIN_RATE_COLUMN = "Tier", "Win rate"
#: a score cell of a row without an entry of that score
NOT_SCORED = "not scored"
NOT_SCORED_STYLE = "color: #8a8a8a; font-style: italic"
#: after a score cell's value corrected with people's labels of a random sample (docs/human_correction.md)
PEOPLE_MARK = "(people)"


def people_checked(rows: pd.DataFrame, name: str) -> np.ndarray:
    """Per row: its entry of score ``name`` has a value corrected with people's labels
    (``human_corrected``, docs/human_correction.md)."""
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


def score_cell(value: float, low: float, high: float, has: bool, people: bool = False) -> tuple[float | None, str]:
    """(the number behind a score cell, its text): "value [low, high]", "undefined", "not scored";
    `` (people)`` after a value corrected with people's labels (``people``)."""
    if not has:
        return None, NOT_SCORED
    ci = {"low": low, "high": high} if np.isfinite(low) and np.isfinite(high) else None
    defined = bool(np.isfinite(value))
    entry = {"value": value if defined else None, "defined": defined, "ci": ci}
    return (float(value) if defined else None), cell_text(entry) + (f" {PEOPLE_MARK}" if people else "")


# --------------------------------------------------------------------------- widths

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


def badge_width(subs: Iterable[Submission]) -> int:
    """The Badge column's width (px): room for the widest set of badges a row has (12 px bold
    letters, 16 px padding, 2 px border and 3 px margin per badge), never less than its header."""
    widest = max((sum(text_px(name, bold=True) * 12 / 13 + 21 for name, _ in badges(s)) for s in subs), default=0)
    return max(column_px([], BADGE_COLUMN), int(widest) + CELL_PAD_PX + 4)


# --------------------------------------------------------------------------- a page's rows


@dataclass
class PageRows:
    """The rows one page shows, with what the columns need: the frame of their holders, their
    submissions, labels, and per row the rank, tier, rank range and mean win rate (0 / None / NaN
    where there is none), their adapters, and where links go."""

    frame: pd.DataFrame
    subs: list[Submission]
    labels: Mapping[str, str]
    rank: np.ndarray
    tier: np.ndarray
    ranges: list[RankRange | None]
    win_rate: np.ndarray
    adapters: list[list[dict]]
    links: Links

    def column(self, name: str) -> list:
        return self.frame[name].tolist() if name in self.frame else [None] * len(self.frame)


Cells = list[tuple[Any, str]]


@dataclass(frozen=True)
class Column:
    """One column: ``id`` (the URL's and the picker's), ``header``, ``kind`` (what a click on its
    header orders by: :func:`board_view.header_order`), ``datatype`` (Gradio's), ``help`` (the
    header's hover text), ``cells`` (a page's rows -> (value, text shown) per row), ``width`` (a
    page's rows and texts -> px; default: the longest text)."""

    id: str
    header: str
    kind: str
    datatype: str
    help: str
    cells: Callable[[PageRows], Cells]
    width: Callable[[PageRows, list[str]], int] | None = None

    def px(self, page: PageRows, texts: list[str]) -> int:
        return self.width(page, texts) if self.width is not None else column_px(texts, self.header)


def _text_cells(values: Iterable[Any], fmt: Callable[[Any], str] = str) -> Cells:
    return [(None if _missing(v) else fmt(v), "" if _missing(v) else fmt(v)) for v in values]


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NaT


def _model_cells(page: PageRows) -> Cells:
    """The label as the value (a row click finds the row by it) and a link shown: the model's Hub
    page, or its results file for local, API and built-in models."""
    out = []
    for s, source in zip(page.subs, page.column("source")):
        label = page.labels[s.key]
        url = page.links.model(s.model_id, source)
        shown = html_escape(label) if url is None else (
            f'<a class="lb-model-link" href="{html_escape(url)}" target="_blank" rel="noopener noreferrer">'
            f"{html_escape(label)}</a>")
        out.append((label, shown))
    return out


def _rank_cells(page: PageRows) -> Cells:
    return [(int(r), str(int(r))) if r else (None, "") for r in page.rank]


def _tier_cells(page: PageRows) -> Cells:
    return [(int(t), str(int(t))) if t else (None, "") for t in page.tier]


def _range_cells(page: PageRows) -> Cells:
    return [(r.best, r.text()) if r else (None, "") for r in page.ranges]


def _adapter_cells(page: PageRows) -> Cells:
    out = []
    for adapters in page.adapters:
        parts = []
        for a in adapters or ():
            name, url = html_escape(adapter_name(a)), adapter_url(a)
            parts.append(f'<a href="{html_escape(url)}" target="_blank" rel="noopener noreferrer">{name}</a>'
                         if url else name)
        out.append((", ".join(adapter_name(a) for a in adapters or ()), ", ".join(parts)))
    return out


def _adapters_width(page: PageRows, texts: list[str]) -> int:
    return min(260, column_px([", ".join(adapter_name(a) for a in ads or ()) for ads in page.adapters], "Adapters"))


def _checkpoint_cells(page: PageRows) -> Cells:
    return [(None, "") if _missing(sha) else (str(sha), str(sha)[:12]) for sha in page.column("checkpoint_sha256")]


def _degenerate_cells(page: PageRows) -> Cells:
    """"N of M" (degenerate images of those checked; the value: N), empty where not recorded."""
    return [(None, "") if _missing(n) or _missing(m) else (int(n), f"{int(n):,} of {int(m):,}")
            for n, m in zip(page.column("n_degenerate"), page.column("n_checked"))]


def _date(value: Any) -> str:
    return pd.Timestamp(value).isoformat()[:10]


#: the optional columns, in the order they stand in the table (between Rank and the scores)
COLUMNS: dict[str, Column] = {c.id: c for c in (
    Column("tier", TIER_COLUMN, "tier", "number",
           "Groups the intervals cannot order. Tier 1: tied with the leader (no model's interval is entirely better). "
           "Tier k: only models of tiers 1 to k-1 are surely better. Click: order by the intervals (conservative).",
           _tier_cells),
    Column("range", RANGE_COLUMN, "tier", "number",
           "The ranks the intervals allow (as Chatbot Arena shows ranks): 3-7 ≈ means somewhere from 3 to 7. "
           "Click: order by the intervals (conservative).", _range_cells),
    Column("badge", BADGE_COLUMN, "", "html",
           "demo: a built-in tiny random-weight model or annotator (meaningless scores); degenerate: blank, one-colour "
           "or non-finite images were scored; evaluated: audited by the maintainers' workers; human-checked: scores "
           "corrected with people's labels of a random sample (ranked apart); supplied / api: images the benchmark "
           "did not generate; -ref: made against a reference dataset. Hover a badge for details.",
           lambda p: [(badges_html(s), badges_html(s)) for s in p.subs], lambda p, texts: badge_width(p.subs)),
    Column("suites", SUITES_COLUMN, "", "html", "The number of suites scored; hover the number for their names.",
           lambda p: [(suites_html(s), suites_html(s)) for s in p.subs],
           lambda p, texts: column_px([str(len(s.suites)) for s in p.subs], SUITES_COLUMN)),
    Column("win_rate", WIN_RATE_COLUMN, "win_rate", "number",
           "Mean win rate over the score columns shown (as HEIM reports it): for each score, the share of the other "
           "ranked models this model's value beats (ties count half), averaged over the scores it has. Point values "
           "only: it ignores the intervals. Click: order by it.",
           lambda p: [(round(float(w), 3), f"{w:.2f}") if np.isfinite(w) else (None, "") for w in p.win_rate]),
    Column("family", "Family", "", "str", "The model family the runner recorded (settings.family).",
           lambda p: _text_cells(p.column("family"))),
    Column("adapters", "Adapters", "", "html", "LoRAs and component checkpoints applied to the base model, by the "
           "name their record gives (else their Hub repo); a link to the repo when on the Hub.",
           _adapter_cells, _adapters_width),
    Column("created", "Date", "created", "str", "When the results were made (UTC). Click: newest first.",
           lambda p: _text_cells(p.column("created"), _date)),
    Column("version", "Package", "", "str", "The benchmark version that made the results.",
           lambda p: _text_cells(p.column("package_version"))),
    Column("images", "Images", "", "str", "Who made the images: generated by the benchmark, supplied, or an API.",
           lambda p: _text_cells(p.column("images"))),
    Column("access", "Access", "", "str", "How the model was reached: " + "; ".join(
        f"{k}: {v}" for k, v in ACCESS_WORDS.items()) + ".", lambda p: _text_cells(p.column("access"))),
    Column("revision", "Revision", "", "str", "The model revision audited (a commit hash is shortened).",
           lambda p: _text_cells(p.column("revision"), short_revision)),
    Column("checkpoint", "Checkpoint sha256", "", "str", "A single-file checkpoint's sha256 (shortened; the "
           "download has it whole): the model is the file, wherever it lies. Empty: a folder or Hub model.",
           _checkpoint_cells),
    Column("quantization", "Quantization", "", "str", "How the weights were quantized (BACKEND:SCHEME): another "
           "model than the unquantized one, in a row of its own. Empty: not quantized.",
           lambda p: _text_cells(p.column("quantization"))),
    Column("degenerate", "Degenerate", "", "str", "Degenerate images (blank, one colour, or black from non-finite "
           "output) among those checked, which were scored all the same. Empty: recorded before the check.",
           _degenerate_cells),
    Column("human_checked", "Human-checked", "", "str", "yes: some score is corrected with people's labels of a "
           "random sample of the audit's images; those score cells read (people), show the corrected value and "
           "interval, and such rows are ranked and ordered apart from automatic-only rows (first).",
           lambda p: [(True, "yes") if not _missing(v) and bool(v) else (None, "") for v in p.column("human_checked")]),
)}
MODEL = Column("model", MODEL_COLUMN, "model", "html",
               "The model id: click the name for its Hub page (or its results file for local, API and built-in "
               "models), the row for its details. Header click: order by name.", _model_cells)
RANK = Column("rank", RANK_COLUMN, "rank", "number",
              "The position in the order shown: by the value (ties share a rank), or by each interval's worse end "
              "(conservative; ties broken by the value). Demo rows and undefined values are not ranked. "
              "Click: reverse the order.", _rank_cells)


def column_choices() -> list[tuple[str, str]]:
    """(header, id) of the optional columns: the column picker's choices."""
    return [(c.header, c.id) for c in COLUMNS.values()]


@dataclass
class Laid:
    """A page laid out: headers, values, text shown, per-cell styles, datatypes, widths, and the
    kind of each column (what its header orders by) and its score (None for other columns)."""

    headers: list[str]
    values: list[list[Any]]
    display: list[list[str]]
    styling: list[list[str]]
    datatype: list[str]
    widths: list[str]
    kinds: list[str]
    scores: list[str | None]


def lay_out(page: PageRows, column_ids: Sequence[str], names: Sequence[str], suites: Sequence[str] = ()) -> Laid:
    """The page's table: Model, Rank, the optional columns ``column_ids`` (in :data:`COLUMNS` order),
    then one column per score of ``names``."""
    cols = [MODEL, RANK, *(c for c in COLUMNS.values() if c.id in set(column_ids))]
    per_column = [c.cells(page) for c in cols]
    for n in names:
        parts = score_columns_of(page.frame, n, suites)
        people = people_checked(page.frame, n) & parts[3]
        per_column.append([score_cell(*(part[j] for part in parts), people=bool(people[j]))
                           for j in range(len(page.frame))])
    headers = [c.header for c in cols] + [value_column(n) for n in names]
    values = [list(row) for row in zip(*([v for v, _ in cells] for cells in per_column))] if len(page.frame) else []
    display = [list(row) for row in zip(*([t for _, t in cells] for cells in per_column))] if len(page.frame) else []
    n_fixed = len(cols)
    styling = [[NOT_SCORED_STYLE if j >= n_fixed and text == NOT_SCORED else "" for j, text in enumerate(row)]
               for row in display]
    texts = [[t for _, t in cells] for cells in per_column]
    widths = [c.px(page, [page.labels[s.key] for s in page.subs] if c is MODEL else texts[i])
              for i, c in enumerate(cols)]
    widths[0] = max(widths[0], 140)
    widths += [column_px(texts[n_fixed + k], headers[n_fixed + k], 64) for k in range(len(names))]
    return Laid(headers, values, display, styling, [c.datatype for c in cols] + ["number"] * len(names),
                [f"{w}px" for w in fitted_widths(widths)], [c.kind for c in cols] + ["score"] * len(names),
                [None] * n_fixed + list(names))

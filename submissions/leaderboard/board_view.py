"""What a visitor has chosen to see of the board (:class:`View`: search, filters, order, columns,
page), the orders a visitor can choose (:data:`ORDERS`, each named on the page), what a header
click does (:func:`header_order`), and the view as a URL query (:meth:`View.query`,
:meth:`View.from_query`): a copied link opens the same view in another browser.

Pure data, no Gradio: the Leaderboard tab keeps its components' values in a :class:`View`, the
table (:mod:`board_table`) reads one.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping, Sequence
from urllib.parse import urlencode

from submissions.leaderboard.score_columns import OVERVIEW


@dataclass(frozen=True)
class Order:
    """One order of the board: ``key`` (the URL's and the API's value), ``label`` (the dropdown's
    words), ``mode`` (what it orders by: ``value``, ``conservative``, ``win_rate``, ``name``,
    ``created``) and whether it is the reverse of the natural direction (worst first, Z to A,
    oldest first)."""

    key: str
    label: str
    mode: str
    reverse: bool = False


BY_VALUE, BY_VALUE_WORST = "value", "value-worst"
CONSERVATIVE, CONSERVATIVE_WORST = "conservative", "conservative-worst"
WIN_RATE, WIN_RATE_WORST = "win-rate", "win-rate-worst"
MODEL_AZ, MODEL_ZA = "name", "name-za"
NEWEST, OLDEST = "newest", "oldest"
#: every order a visitor can choose, each over all rows (the first is the default)
ORDERS: dict[str, Order] = {o.key: o for o in (
    Order(BY_VALUE, "value, best first", "value"),
    Order(BY_VALUE_WORST, "value, worst first", "value", True),
    Order(CONSERVATIVE, "conservative (interval's worse end), best first", "conservative"),
    Order(CONSERVATIVE_WORST, "conservative (interval's worse end), worst first", "conservative", True),
    Order(WIN_RATE, "mean win rate, best first", "win_rate"),
    Order(WIN_RATE_WORST, "mean win rate, worst first", "win_rate", True),
    Order(MODEL_AZ, "model A–Z", "name"),
    Order(MODEL_ZA, "model Z–A", "name", True),
    Order(NEWEST, "newest first", "created"),
    Order(OLDEST, "oldest first", "created", True),
)}
DEFAULT_ORDER = BY_VALUE


def order_of(key: str | None) -> Order:
    """The order ``key`` (a label is accepted too), else the default."""
    if key in ORDERS:
        return ORDERS[key]
    return next((o for o in ORDERS.values() if o.label == key), ORDERS[DEFAULT_ORDER])


def order_choices() -> list[tuple[str, str]]:
    """(label, key) of every order: the dropdown's choices."""
    return [(o.label, o.key) for o in ORDERS.values()]


def _flip(order: Order, mode: str, best: str, worst: str) -> str:
    """Clicking the column of ``mode`` again reverses its order; a first click gives ``best``."""
    return (worst if not order.reverse else best) if order.mode == mode else best


def header_order(kind: str, score: str | None, current_score: str | None, current: str) -> tuple[str | None, str] | None:
    """What a click on a header does: (the score to rank by, the order) or None (the column does not
    order). ``kind`` is the column's kind (``score``, ``model``, ``rank``, ``tier``, ``win_rate``,
    ``created``; anything else orders nothing), ``score`` the score of a score column. A score's
    header orders by its value, best first; clicked again, worst first (conservative stays
    conservative); Rank reverses the order it ranks by; Tier orders by the intervals (conservative)."""
    order = order_of(current)
    # the score's own column and Rank reverse the order shown, conservative staying conservative
    same_mode = (_flip(order, "conservative", CONSERVATIVE, CONSERVATIVE_WORST) if order.mode == "conservative"
                 else _flip(order, "value", BY_VALUE, BY_VALUE_WORST))
    if kind == "score" and score:
        return (score, BY_VALUE) if score != current_score else (score, same_mode)
    if kind == "model":
        return current_score, _flip(order, "name", MODEL_AZ, MODEL_ZA)
    if kind == "rank":
        return current_score, same_mode
    if kind == "tier":
        return current_score, _flip(order, "conservative", CONSERVATIVE, CONSERVATIVE_WORST)
    if kind == "win_rate":
        return current_score, _flip(order, "win_rate", WIN_RATE, WIN_RATE_WORST)
    if kind == "created":
        return current_score, _flip(order, "created", NEWEST, OLDEST)
    return None


ALL = "all"
#: the adapters filter: base models alone, or models with a LoRA / component checkpoint applied
BASE_ONLY, WITH_ADAPTERS = "base models", "with adapters (LoRA, checkpoints)"
ADAPTERS_CHOICES = (ALL, BASE_ONLY, WITH_ADAPTERS)
#: the access filter: how the model was reached (board_index.access_of)
ACCESS_CHOICES = (ALL, "hub", "local", "api", "supplied", "builtin")
ACCESS_WORDS = {"hub": "open weights on the Hub", "local": "local weights or a Python callable",
                "api": "an image API", "supplied": "images made elsewhere and supplied",
                "builtin": "a built-in tiny demo model"}
#: the optional columns shown by default (board_columns.COLUMNS has them all)
DEFAULT_COLUMNS = ("tier", "badge", "suites")
#: a page number past any board's end: the last page (the table clamps it)
LAST_PAGE = 10 ** 9


@dataclass(frozen=True)
class View:
    """Everything that decides the table a visitor sees (and downloads): the search, the filters,
    the score ranked and ordered by, the order, the score columns (``scores``: a view of
    :mod:`score_columns`), the other columns shown, and the page."""

    search: str = ""
    suites: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    show_demo: bool = True
    sort_by: str | None = None
    order: str = DEFAULT_ORDER
    scores: str = OVERVIEW
    columns: tuple[str, ...] = DEFAULT_COLUMNS
    evaluated: str = ALL
    images: str = ALL
    adapters: str = ALL
    access: str = ALL
    since: str = ""  # YYYY-MM-DD: created on or after
    until: str = ""  # YYYY-MM-DD: created on or before
    versions: tuple[str, ...] = ()
    page: int = 1

    def filters(self) -> dict[str, Any]:
        """The keywords of :func:`board_table.leaderboard_table` (all but the page)."""
        return dict(search=self.search, suites=self.suites, families=self.families, show_demo=self.show_demo,
                    sort_by=self.sort_by, order=self.order, view=self.scores, columns=self.columns,
                    evaluated=self.evaluated, images=self.images, adapters=self.adapters, access=self.access,
                    since=self.since, until=self.until, versions=self.versions)

    def query(self) -> str:
        """The view as a URL query: only what differs from the default view (``""`` for it)."""
        default, out = View(), []
        for f in fields(self):
            if getattr(self, f.name) == getattr(default, f.name):
                continue
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = ",".join(value) if value else "-"
            elif isinstance(value, bool):
                value = "1" if value else "0"
            out.append((QUERY_KEYS[f.name], str(value)))
        return urlencode(out)

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> View:
        """The view a URL query describes (unknown keys ignored; values are checked against the board
        by the tab, :func:`valid_view`)."""
        by_key = {q: name for name, q in QUERY_KEYS.items()}
        values: dict[str, Any] = {}
        for q, raw in params.items():
            name = by_key.get(q)
            if name is None:
                continue
            default = getattr(cls(), name)
            raw = str(raw)
            if isinstance(default, tuple):
                values[name] = () if raw in ("", "-") else tuple(v for v in raw.split(",") if v)
            elif isinstance(default, bool):
                values[name] = raw not in ("0", "false", "no", "")
            elif name == "page":  # "last": a number past the end, which the table clamps to the last page
                values[name] = int(raw) if raw.isdigit() else LAST_PAGE if raw.lower() == "last" else 1
            else:
                values[name] = raw
        return cls(**values)


#: the URL query's keys (short; never ``page``, ``view`` or ``deep_link``, which Gradio's own page reads)
QUERY_KEYS = {"search": "q", "suites": "suite", "families": "family", "show_demo": "demo", "sort_by": "score",
              "order": "order", "scores": "scores", "columns": "cols", "evaluated": "by", "images": "images",
              "adapters": "adapters", "access": "access", "since": "from", "until": "to", "versions": "version",
              "page": "p"}


def valid_view(view: View, *, scores: Sequence[str], views: Sequence[str], columns: Sequence[str],
               choices: Mapping[str, Sequence[str]]) -> View:
    """``view`` with every value the board does not offer replaced by its default: ``scores`` the
    score names, ``views`` the score views, ``columns`` the optional column ids, ``choices`` the
    choices of the other dropdowns by field (suites, families, evaluated, images, versions)."""
    default = View()

    def one(name: str, options: Sequence[str]) -> Any:
        value = getattr(view, name)
        return value if value in options else getattr(default, name)

    def many(name: str, options: Sequence[str]) -> tuple[str, ...]:
        return tuple(v for v in dict.fromkeys(getattr(view, name)) if v in options)

    return replace(
        view, sort_by=view.sort_by if view.sort_by in scores else None, order=order_of(view.order).key,
        scores=view.scores if view.scores in views else (views[0] if views else default.scores),
        columns=many("columns", columns), suites=many("suites", choices.get("suites", ())),
        families=many("families", choices.get("families", ())), versions=many("versions", choices.get("versions", ())),
        evaluated=one("evaluated", choices.get("evaluated", (ALL,))), images=one("images", choices.get("images", (ALL,))),
        adapters=one("adapters", ADAPTERS_CHOICES), access=one("access", ACCESS_CHOICES),
        since=_day(view.since), until=_day(view.until), page=max(1, int(view.page or 1)))


def _day(text: str) -> str:
    """``text`` when it is a date YYYY-MM-DD, else ""."""
    try:
        return _dt.date.fromisoformat(str(text).strip()).isoformat() if text else ""
    except ValueError:
        return ""

"""The Leaderboard tab: the table one page at a time (searched, filtered, ordered and ranked on
the server over every row), its filters, its order (a dropdown, and a click on a column's
header: by value, clicked again worst first), the columns shown (a picker), paging (first,
previous, a page box, next, last), downloads of the whole view (CSV, parquet), the models
selected for the forest plots and Compare, and a row click that opens the model's details.

The view (:class:`board_view.View`) is kept in the address bar's query: every update writes it
there, and a page opened with a query shows that view, so a copied link reproduces it. The
table's own header menus (which would sort the page shown only) are hidden; a header click is
sent to the server (a hidden button the page's script clicks), which orders every row.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import gradio as gr

from benchmark.present.text import md_escape
from submissions import provenance as prov
from submissions.leaderboard import board_table, board_view as bv, export, paging, score_columns, wording
from submissions.leaderboard.app_state import FOREST_TOP, AppContext, BoardState
from submissions.leaderboard.board_columns import column_choices

#: every update of the table runs in one queue, one at a time, in the order asked: a page asked for
#: while another loads is shown after it, never dropped ("multiple": each click and each number
#: typed is an event of its own); a filter's change needs only its last state ("always_last": a
#: search typed letter by letter runs once more after the one running, not once per letter)
TABLE_EVENTS = {"trigger_mode": "multiple", "concurrency_id": "lb-table", "concurrency_limit": 1}
FILTER_EVENTS = {**TABLE_EVENTS, "trigger_mode": "always_last"}
#: the View fields the filter components hold, in the order of the components (and of the API's inputs)
FIELDS = ("search", "suites", "families", "show_demo", "sort_by", "scores", "evaluated", "images", "order",
          "adapters", "access", "since", "until", "versions", "columns")
#: the browser writes the view's query into the address bar (no reload, no history entry)
SET_URL_JS = ("(q) => { const u = new URL(window.location.href); u.search = q || ''; "
              "window.history.replaceState(null, '', u); return []; }")
#: the header the page's script saw clicked (app.HEAD_JS sets it before clicking the hidden button)
HEADER_JS = "(h, ...rest) => [window.__lbHeader || '', ...rest]"
DOWNLOAD_JS = "() => { const b = document.querySelector('#lb-download-file'); if (b) b.click(); return []; }"


class SessionViews:
    """The view each browser session was last shown (by Gradio's session hash), its page included:
    page turns count from it, so two clicks on "Next" in a row turn two pages even when the second
    is sent before the page box shows the first; and a filter event that asks for the view already
    shown (a component set by the page's load from its URL, or by a header click) changes nothing.
    At most ``limit`` sessions are remembered, the oldest forgotten."""

    def __init__(self, limit: int = 10_000) -> None:
        self._views: OrderedDict[str, bv.View] = OrderedDict()
        self._lock = threading.Lock()
        self.limit = limit

    def get(self, session: str | None) -> bv.View | None:
        with self._lock:
            return self._views.get(session) if session else None

    def page(self, session: str | None, default: Any) -> Any:
        view = self.get(session)
        return view.page if view is not None else default

    def set(self, session: str | None, view: bv.View) -> None:
        if not session:
            return
        with self._lock:
            self._views[session] = view
            self._views.move_to_end(session)
            while len(self._views) > self.limit:
                self._views.popitem(last=False)


def view_of(values: Sequence[Any], page: Any = 1) -> bv.View:
    """The :class:`View` of the filter components' values (in :data:`FIELDS` order)."""
    got = dict(zip(FIELDS, values))
    tuples = {k: tuple(got.get(k) or ()) for k in ("suites", "families", "versions", "columns")}
    view = bv.View(search=got.get("search") or "", show_demo=bool(got.get("show_demo", True)),
                   sort_by=got.get("sort_by"), scores=got.get("scores") or score_columns.OVERVIEW,
                   evaluated=got.get("evaluated") or bv.ALL, images=got.get("images") or bv.ALL,
                   order=bv.order_of(got.get("order")).key, adapters=got.get("adapters") or bv.ALL,
                   access=got.get("access") or bv.ALL, since=str(got.get("since") or "").strip(),
                   until=str(got.get("until") or "").strip(), **tuples)
    return replace(view, page=page if isinstance(page, int) else 1)


def values_of(view: bv.View) -> list[Any]:
    """The filter components' values of ``view`` (in :data:`FIELDS` order)."""
    return [list(v) if isinstance(v := getattr(view, f), tuple) else v for f in FIELDS]


def _table_component_value(table: board_table.Table) -> dict:
    return {"value": table.gradio_value(), "datatype": table.datatype, "column_widths": table.widths}


def _choices(st: BoardState) -> dict[str, list]:
    """The choices of the filters that depend on the board."""
    return {"suites": board_table.all_suites(st.index), "families": board_table.all_families(st.index),
            "versions": board_table.all_versions(st.index), "evaluated": list(prov.PROVENANCE_CHOICES),
            "images": list(wording.IMAGES_CHOICES)}


def _filters_row(st: BoardState, views: list[str]) -> dict[str, gr.components.Component]:
    """The leaderboard's search, view, order and filters (in :data:`FIELDS` order)."""
    choices = _choices(st)
    with gr.Row():
        search = gr.Textbox(label="Search model", placeholder="part of a model name", elem_id="lb-search", scale=3)
        view = gr.Dropdown(choices=views, value=views[0], label="Score columns", elem_id="lb-view", scale=2)
        sort_by = gr.Dropdown(choices=_sort_choices(st), value=_keep(None, _sort_choices(st)),
                              label="Rank and order by", elem_id="lb-sort", scale=2)
        order = gr.Dropdown(choices=bv.order_choices(), value=bv.DEFAULT_ORDER, label="Order", elem_id="lb-order",
                            scale=2, min_width=130)
        show_demo = gr.Checkbox(value=True, label="Show demo rows", elem_id="lb-show-demo", scale=1, min_width=120)
    with gr.Accordion("Filters (suite, family, adapters, access, images, who evaluated, date, package version) and "
                      "the columns shown", open=False, elem_id="lb-filters"):
        with gr.Row():
            suites = gr.Dropdown(choices=choices["suites"], multiselect=True, value=[],
                                 label="Suites (models that scored all of them)", elem_id="lb-suites")
            families = gr.Dropdown(choices=choices["families"], multiselect=True, value=[], label="Model family",
                                   elem_id="lb-families")
            adapters = gr.Dropdown(choices=list(bv.ADAPTERS_CHOICES), value=bv.ALL, elem_id="lb-adapters",
                                   label="Adapters (LoRA, component checkpoints)")
            access = gr.Dropdown(choices=[(bv.ACCESS_WORDS.get(a, a), a) for a in bv.ACCESS_CHOICES], value=bv.ALL,
                                 label="Access (open weights on the Hub, local, API, ...)", elem_id="lb-access")
        with gr.Row():
            images = gr.Dropdown(choices=choices["images"], value=bv.ALL, elem_id="lb-images",
                                 label="Images (generated by the benchmark / supplied / from an API)")
            provenance = gr.Dropdown(choices=choices["evaluated"], value=bv.ALL, elem_id="lb-provenance",
                                     label="Evaluated by (maintainers' worker / self-reported)")
            since = gr.Textbox(label="Made on or after (YYYY-MM-DD)", elem_id="lb-since", placeholder="2025-01-01")
            until = gr.Textbox(label="Made on or before (YYYY-MM-DD)", elem_id="lb-until", placeholder="2026-12-31")
            versions = gr.Dropdown(choices=choices["versions"], multiselect=True, value=[], label="Package version",
                                   elem_id="lb-versions")
        columns = gr.Dropdown(choices=column_choices(), value=list(bv.DEFAULT_COLUMNS), multiselect=True,
                              label="Columns shown (besides Model, Rank and the scores)", elem_id="lb-columns")
    comps = {"search": search, "suites": suites, "families": families, "show_demo": show_demo, "sort_by": sort_by,
             "scores": view, "evaluated": provenance, "images": images, "order": order, "adapters": adapters,
             "access": access, "since": since, "until": until, "versions": versions, "columns": columns}
    return comps


def page_line(table: board_table.Table) -> str:
    """The line beside the paging buttons: which rows, which page, in which order, how many models
    the audit cannot tell from the leader (tier 1), and how many intervals reach the score's limit."""
    parts = [table.page.text()]
    order = bv.order_of(table.how)
    if order.mode in ("name", "created"):
        parts.append(f"by {order.label}" if order.mode == "name" else order.label)
    elif order.mode == "win_rate":
        parts.append(f"by {order.label} over the score columns shown")
    elif table.ranked_by:
        parts.append(f"by {md_escape(score_columns.value_column(table.ranked_by))}: {order.label}")
    if table.leaders:
        parts.append(f"tier 1, tied with the leader: {table.leaders:,} of {table.ranked:,} ranked models"
                     + (f" ({table.tiers:,} tiers)" if table.tiers > 1 else ""))
    if table.clipped and order.mode == "conservative":
        parts.append(f"{table.clipped:,} intervals reach the score's limit (ordered by value among equal ends)")
    return " · ".join(parts)


def _paging_row() -> tuple:
    """First / previous / the page box / next / last, compact, and the line saying what is shown."""
    with gr.Row(equal_height=True, elem_id="lb-paging"):
        first_btn = gr.Button("« First", size="sm", elem_id="lb-first", scale=0, min_width=76)
        prev_btn = gr.Button("◀ Previous", size="sm", elem_id="lb-prev", scale=0, min_width=96)
        number = gr.Number(value=1, precision=0, show_label=False, container=False, elem_id="lb-page-number",
                           scale=0, min_width=80)
        next_btn = gr.Button("Next ▶", size="sm", elem_id="lb-next", scale=0, min_width=80)
        last_btn = gr.Button("Last »", size="sm", elem_id="lb-last", scale=0, min_width=76)
        info = gr.Markdown("", elem_id="lb-page")
    return first_btn, prev_btn, number, next_btn, last_btn, info


def _selection_choices(st: BoardState, table: board_table.Table, selected: Sequence[str]) -> list[tuple[str, str]]:
    keys = [k for k in dict.fromkeys([*(selected or []), *table.keys]) if k in st.by_key]
    return [(st.labels[k], k) for k in keys]


def table_of(st: BoardState, view: bv.View) -> board_table.Table:
    """The page of the table ``view`` asks for."""
    return st.table(page=view.page, **view.filters())


def leaderboard_tab(ctx: AppContext) -> None:
    """The table, one page at a time (searched, filtered, ordered and ranked on the server): one
    row per model, a view of the headline scores; a row click opens the model's details; the
    models selected here are the forest plots' and Compare's."""
    st = ctx.state
    views = score_columns.views(st.names())
    comps = _filters_row(st, views)
    first = table_of(st, bv.View(sort_by=comps["sort_by"].value, scores=views[0]))
    first_btn, prev_btn, number, next_btn, last_btn, info = _paging_row()
    info.value = page_line(first)
    table = gr.Dataframe(interactive=False, wrap=False, pinned_columns=1, elem_id="lb-table", max_height=1800,
                         elem_classes=["lb-sans"], label="Models: click a header to order by it (again: the other "
                         "way), a name for its model page, a row for its details; hover a header for what it means",
                         **_table_component_value(first))
    with gr.Row(equal_height=True):
        ctx.selected = gr.Dropdown(choices=_selection_choices(st, first, []), value=[], multiselect=True, scale=4,
                                   elem_id="lb-selected", label="Selected models (for the forest plots and Compare; "
                                   "pick from this page, or search first)")
        csv_btn = gr.Button("Download CSV", size="sm", elem_id="lb-download-csv", scale=0, min_width=130)
        parquet_btn = gr.Button("Download parquet", size="sm", elem_id="lb-download-parquet", scale=0, min_width=150)
    ctx.top = gr.State(first.order[:FOREST_TOP])
    legend = gr.Markdown(wording.legend_markdown(first.scores[first.first_score:]), elem_id="lb-legend")
    query = gr.Textbox(value="", visible="hidden", elem_id="lb-query")
    tab = _TableEvents(st, comps, [table, legend, info, number, ctx.selected, ctx.top, query], views[0])
    tab.wire(number, (first_btn, prev_btn, next_btn, last_btn), query)
    _wire_downloads(st, csv_btn, parquet_btn, [comps[f] for f in FIELDS])
    _wire_row_click(ctx, table)
    ctx.on_load(tab.on_load, [], [*tab.outputs, *tab.filters])
    ctx.on_reload(tab.refresh, [number, ctx.selected, *tab.filters],
                  [*tab.outputs, *(comps[f] for f in ("suites", "families", "versions", "sort_by", "scores"))])


def _typed_page(typed, shown):
    return typed


class _TableEvents:
    """What the table's events do: a filter (page 1, unless it asks for the view shown already), a
    page turn (counted from the page the session was last shown), a header click, a page opened
    with a view in its URL, a reload. Every one ends in :meth:`update`: the page of the table, the
    legend, the line above it, the page box, the selection's choices, the first keys of the order
    (forest plots) and the view's query (the address bar)."""

    def __init__(self, st: BoardState, comps: dict, outputs: list, default_scores: str) -> None:
        self.st, self.comps, self.outputs = st, comps, outputs
        self.filters = [comps[f] for f in FIELDS]
        self.default = replace(bv.View(), scores=default_scores)
        self.sessions = SessionViews()
        #: the dropdowns' choices the page was built with (a page opened later gets them too): a reload
        #: sends a dropdown only when its choices differ from those
        self.choices = {**_choices(st), "sort_by": _sort_choices(st), "scores": score_columns.views(st.names())}
        self.built = st.stamp  # what the board held when the page was built

    def update(self, session, view: bv.View, selected, typed=None) -> tuple:
        t = table_of(self.st, view)
        shown = replace(view, page=t.page.number, sort_by=t.ranked_by)  # (the score it ranks by, when none is given)
        self.sessions.set(session, shown)
        default_score = t.scores[t.first_score] if t.first_score < len(t.scores) else None
        in_url = replace(shown, sort_by=None) if shown.sort_by == default_score else shown  # (the default: left out)
        # the page box shows the page shown, unless it holds that number already (typed): a number
        # typed since, while this page loaded, stays in the box
        box = gr.skip() if typed is not None and typed == t.page.number else t.page.number
        return (gr.Dataframe(**_table_component_value(t)), wording.legend_markdown(t.scores[t.first_score:]),
                page_line(t), box, gr.Dropdown(choices=_selection_choices(self.st, t, selected), value=selected or []),
                t.order[:FOREST_TOP], in_url.query())

    def on_filter(self, request: gr.Request, selected, *values):
        view, last = view_of(values), self.sessions.get(request.session_hash)
        if last is not None and replace(last, page=1) == replace(view, sort_by=view.sort_by or last.sort_by):
            return [gr.skip()] * len(self.outputs)  # the view shown already (controls set by a load or a click)
        return self.update(request.session_hash, view, selected)

    def turn(self, to):
        def handler(request: gr.Request, p, selected, *values):
            page = to(p, self.sessions.page(request.session_hash, p or 1))
            page = page if page != paging.LAST else bv.LAST_PAGE
            return self.update(request.session_hash, view_of(values, int(page or 1)), selected,
                               typed=p if to is _typed_page else None)
        return handler

    def on_header(self, request: gr.Request, header, selected, *values):
        """A header clicked: order by its column (:func:`board_view.header_order`)."""
        view = view_of(values)
        t = table_of(self.st, replace(view, page=1))
        kind, score = next(((k, s) for h, k, s in zip(t.headers, t.kinds, t.scores) if h == header), ("", None))
        got = bv.header_order(kind, score, t.ranked_by, view.order)
        if got is None:
            return (*[gr.skip()] * len(self.outputs), gr.skip(), gr.skip())
        view = replace(view, sort_by=got[0], order=got[1])
        return (*self.update(request.session_hash, view, selected), view.sort_by, view.order)

    def on_load(self, request: gr.Request):
        """A page opened with a view in its query shows that view; one opened after a reload changed
        the board shows the board as it is now (the page itself was built with the board as it was)."""
        view = _valid(self.st, bv.View.from_query(dict(request.query_params)) if request is not None else bv.View())
        if view == self.default and self.st.stamp == self.built:
            return [gr.skip()] * (len(self.outputs) + len(self.filters))
        out = self.update(request.session_hash, view, [])
        shown_by = view.sort_by or self.comps["sort_by"].value
        return [*out, *values_of(replace(view, sort_by=shown_by))]

    def refresh(self, page, selected, *values):
        """After a reload that changed the board: the same view of the new board (a dropdown whose
        choices and value are those it has is not sent again)."""
        st = self.st
        view = _valid(st, view_of(values, int(page or 1)))
        out = self.update(None, view, [k for k in selected or [] if k in st.by_key])
        choices = {**_choices(st), "sort_by": _sort_choices(st, view.suites), "scores": score_columns.views(st.names())}
        shown = {"sort_by": _keep(view.sort_by, choices["sort_by"]), "scores": view.scores}
        asked = dict(zip(FIELDS, values))
        return (*out, *(gr.skip() if choices[f] == self.choices.get(f) and shown.get(f, asked[f]) == asked[f]
                        else gr.Dropdown(choices=choices[f], value=shown.get(f, asked[f]))
                        for f in ("suites", "families", "versions", "sort_by", "scores")))

    def wire(self, number, buttons, query) -> None:
        """The events: every filter, the paging controls, the header click, the address bar."""
        first_btn, prev_btn, next_btn, last_btn = buttons
        selected, comps, outputs = self.outputs[4], self.comps, self.outputs
        for name, comp in comps.items():  # a filter resets the page to the first; "search" and "page": API names
            comp.change(self.on_filter, inputs=[selected, *self.filters], outputs=outputs,
                        api_name="search" if name == "search" else None, **FILTER_EVENTS)
        for event, to, api_name in ((number.submit, _typed_page, None),
                                    (first_btn.click, lambda typed, shown: 1, None),
                                    (prev_btn.click, lambda typed, shown: (shown or 1) - 1, None),
                                    (next_btn.click, lambda typed, shown: (shown or 1) + 1, "page"),
                                    (last_btn.click, lambda typed, shown: paging.LAST, "last")):
            event(self.turn(to), inputs=[number, selected, *self.filters], outputs=outputs, api_name=api_name,
                  **TABLE_EVENTS)
        header_name = gr.Textbox(value="", visible="hidden", elem_id="lb-header-name")
        header_click = gr.Button("order by header", visible="hidden", elem_id="lb-header-click")
        header_click.click(self.on_header, inputs=[header_name, selected, *self.filters],
                           outputs=[*outputs, comps["sort_by"], comps["order"]], js=HEADER_JS, api_name="header",
                           **TABLE_EVENTS)
        query.change(None, inputs=[query], outputs=None, js=SET_URL_JS)
        st = self.st
        comps["suites"].change(lambda s, cur: gr.Dropdown(choices=_sort_choices(st, s),
                                                         value=_keep(cur, _sort_choices(st, s))),
                               inputs=[comps["suites"], comps["sort_by"]], outputs=[comps["sort_by"]])


def _valid(st: BoardState, view: bv.View) -> bv.View:
    """``view`` with what this board does not offer replaced by the default."""
    return bv.valid_view(view, scores=st.names(view.suites), views=score_columns.views(st.names()),
                         columns=[c for _, c in column_choices()], choices=_choices(st))


def _wire_downloads(st: BoardState, csv_btn, parquet_btn, filters) -> None:
    """Each button writes the whole view (every matching row, in order) and the page downloads it
    at once (the hidden download button is clicked by the page's script once its file is set)."""
    download = gr.DownloadButton("file", visible="hidden", elem_id="lb-download-file")
    folder = Path(tempfile.mkdtemp(prefix="t2ibench-leaderboard-downloads-"))
    atexit.register(shutil.rmtree, folder, True)  # one per board built: gone when the server stops

    def make(fmt: str):
        def write(*values):
            view = _valid(st, view_of(values))
            board = board_table.view_board(st.index, present=st.names(view.suites), **{
                k: v for k, v in view.filters().items() if k != "columns"})
            table = export.board_export(st.index, board, st.labels, st.revision)
            return export.write_export(table, fmt, folder, view.query())
        return write

    for btn, fmt in ((csv_btn, "csv"), (parquet_btn, "parquet")):
        btn.click(make(fmt), inputs=filters, outputs=[download], api_name=f"download_{fmt}").then(
            None, None, None, js=DOWNLOAD_JS)


def _wire_row_click(ctx: AppContext, table: gr.Dataframe) -> None:
    """A row click opens its model in the detail tab (built later: it sets ``ctx.model``)."""
    st = ctx.state

    def on_select(evt: gr.SelectData):
        row = evt.row_value or []
        key = st.key_by_label.get(str(row[0])) if row else None
        if key not in st.by_key or ctx.model is None:
            return gr.Dropdown(), gr.Tabs()
        return gr.Dropdown(choices=st.model_choices([key]), value=key), gr.Tabs(selected="detail")

    ctx.after_tabs(lambda: table.select(on_select, inputs=None, outputs=[ctx.model, ctx.tabs])
                   if ctx.model is not None else None)


def _sort_choices(st: BoardState, suites: Sequence[str] | None = None) -> list[tuple[str, str]]:
    return [(score_columns.value_column(n), n) for n in st.names(suites or ())]


def _keep(current: str | None, choices: list[tuple[str, str]]) -> str | None:
    values = [v for _, v in choices]
    return current if current in values else (values[0] if values else None)

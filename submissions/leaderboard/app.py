"""The leaderboard as a Gradio app: a table of models ("value [low, high]" per headline score),
a forest plot per score across all models, a comparison of two or more models, a detail
view per model and an image browser.

Runs three ways: ``t2ibench leaderboard --results DIR`` (or ``--repo ORG/NAME``),
``python app.py`` in a Hub Space (reads the env ``RESULTS_REPO`` or ``RESULTS_DIR``), and
imported: ``build_app(results_dir=...)`` returns the ``gr.Blocks``.

Each tab is built by one small function ``tab(ctx)`` listed in :data:`TABS`; a new tab is one
more :class:`Tab` there (or ``build_app(..., tabs=[*TABS, Tab(...)])``). A tab that shows
data registers how to refresh it with ``ctx.on_reload``.

Escaping: results text reaches the page only as plain-text cells, labels and captions
(Gradio renders those as text), through ``benchmark.present.text.md_escape`` in Markdown, or through
``benchmark.present.text.html_escape`` in the two HTML cells (badges, suites); links are built from
validated Hub repo ids only.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import benchmark
from benchmark.extras import require
from benchmark.papers import PAPERS
from benchmark.present.plotting import forest_figure as draw
from benchmark.contract.run_folder import REPORT_DIR
from benchmark.tasks.of_run import report_sections

require("gradio", "matplotlib", extra="app", purpose="run the leaderboard")

import gradio as gr  # noqa: E402

from benchmark.present.text import short_estimator  # noqa: E402
from submissions import provenance as prov  # noqa: E402
from submissions.leaderboard import contents, data, paging  # noqa: E402
from submissions.leaderboard import images as image_data  # noqa: E402
from submissions.leaderboard import submit_tab  # noqa: E402
from submissions.leaderboard.paired import paired_markdown  # noqa: E402

TITLE = "Text-to-image bias leaderboard"
#: a model picker lists at most this many models (the best ranked, and those picked)
MAX_CHOICES = 100
#: the forest plot draws the selected models, else this many of the table's current order
FOREST_TOP = 20
FOREST_TITLE = "Forest plots"
CSS = """
#lb-warnings {background:#fff4e5;border:2px solid #e07b00;border-radius:6px;padding:.6em 1em}
#lb-detail-head blockquote {background:#fde8e8;border-left:6px solid #c62828;font-weight:bold}
.lb-badge {display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;font-weight:700;line-height:18px;
           border:1px solid;margin-right:3px;white-space:nowrap}
.lb-badge-demo {background:#fde8e8;color:#8e0000;border-color:#c62828}
.lb-badge-evaluated {background:#e6f4ea;color:#135e2b;border-color:#2e7d32}
.lb-badge-supplied, .lb-badge-api {background:#fff4e5;color:#7a4100;border-color:#b26a00}
.lb-badge[class$="-ref"] {background:#e8eefd;color:#0d2f8e;border-color:#2851c6}
.lb-suites {cursor:help;border-bottom:1px dotted #888}
.lb-sans [role="gridcell"], .lb-sans [role="gridcell"] *, .lb-sans [role="columnheader"] *
  {font-family:var(--font) !important;font-size:13px}
"""


def intro() -> str:
    """The board's first paragraph: the papers it holds by their short names, from the registry."""
    labels = [paper.label or paper.key for paper in PAPERS.values()]
    papers = ", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) > 1 else "".join(labels)
    return (f"Social-bias audits of text-to-image models with the probes and scores of {papers}. Each cell is a "
            "value and its bootstrap confidence interval. Rows marked **demo** come from built-in tiny random-weight "
            "models: their scores are meaningless. Click a row for the model's details.")


# --------------------------------------------------------------------------- loading


class Source:
    """Where results come from (a folder, or a Hub dataset downloaded to one); ``load()`` re-reads."""

    def __init__(self, results_dir: str | Path | None = None, repo: str | None = None,
                 revision: str | None = None) -> None:
        if (results_dir is None) == (repo is None):
            raise ValueError("give exactly one of a results folder or a Hub results dataset")
        self.results_dir, self.repo, self.revision = results_dir, repo, revision

    def load(self) -> data.Board:
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
            folder = data.download_results(self.repo, self.revision)
        except ValueError as exc:
            board = data.Board(source=self.repo)
            board.errors.append(str(exc))
            return board
        return data.load_folder(folder, source=f"{self.repo} (Hub dataset)")


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
        self.labels = data.model_labels(self.rows)
        self.key_by_label = {label: key for key, label in self.labels.items()}
        self._names = data.headline_names([r.latest for r in self.rows])
        overview = data.view_names(self._names, data.OVERVIEW)
        self._ranked = data.sort_rows(self.rows, overview[0] if overview else None)

    def names(self, suites: Sequence[str] = ()) -> list[str]:
        return self._names if not suites else data.headline_names([r.latest for r in self.rows], suites)

    def ranked(self) -> list[data.ModelRow]:
        """Rows in the leaderboard's default order (best first)."""
        return self._ranked

    def table(self, **filters: Any) -> data.Table:
        """One page of the leaderboard (``page``, ``page_size``: :mod:`paging`)."""
        return data.leaderboard_table(self.rows, labels=self.labels, page_size=paging.PAGE_SIZE,
                                      present=self.names(filters.get("suites") or ()), **filters)

    def model_choices(self, keep: Sequence[str] = ()) -> list[tuple[str, str]]:
        """A picker's choices: the first :data:`MAX_CHOICES` models of the default order and the
        ones in ``keep`` (a picker never lists every model)."""
        keys = [r.key for r in self._ranked[:MAX_CHOICES]]
        keys += [k for k in dict.fromkeys(keep) if k in self.by_key and k not in keys]
        return [(data.row_label(self.by_key[k]), k) for k in keys]

    def first_key(self) -> str | None:
        return self._ranked[0].key if self._ranked else None

    def detail_row(self, key: str | None) -> data.ModelRow | None:
        """Row ``key`` with its whole results document (read on demand: the table holds a slim one)."""
        row = self.by_key.get(key) if key else None
        if row is None:
            return None
        return replace(row, latest=contents.full_document(row.latest, self.source.repo, self.source.revision))


# --------------------------------------------------------------------------- tabs


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


def _table_component_value(table: data.Table) -> dict:
    return {"value": table.gradio_value(), "datatype": table.datatype, "column_widths": table.widths}


def _filters_row(st: BoardState, views: list[str]) -> dict[str, gr.components.Component]:
    """The leaderboard's search, view, order and filters (in the order :func:`_table_for` takes them)."""
    with gr.Row():
        search = gr.Textbox(label="Search model", placeholder="part of a model name", elem_id="lb-search", scale=3)
        view = gr.Dropdown(choices=views, value=views[0], label="Columns", elem_id="lb-view", scale=2)
        sort_by = gr.Dropdown(choices=_sort_choices(st), value=_keep(None, _sort_choices(st)),
                              label="Rank by (best first)", elem_id="lb-sort", scale=2)
        show_demo = gr.Checkbox(value=True, label="Show demo rows", elem_id="lb-show-demo", scale=1, min_width=120)
    with gr.Accordion("Filter by suite, model family, who evaluated and who made the images", open=False):
        with gr.Row():
            images = gr.Dropdown(choices=list(data.IMAGES_CHOICES), value="all", elem_id="lb-images",
                                 label="Images (generated by the benchmark / supplied / from an API)")
            provenance = gr.Dropdown(choices=list(prov.PROVENANCE_CHOICES), value="all", elem_id="lb-provenance",
                                     label="Evaluated by (maintainers' worker / self-reported)")
            suites = gr.Dropdown(choices=data.all_suites(st.rows), multiselect=True, value=[],
                                 label="Suites (models that scored all of them)", elem_id="lb-suites")
            families = gr.Dropdown(choices=data.all_families(st.rows), multiselect=True, value=[],
                                   label="Model family", elem_id="lb-families")
    return {"search": search, "suites": suites, "families": families, "show_demo": show_demo, "sort_by": sort_by,
            "view": view, "evaluated": provenance, "images": images}


def _table_for(st: BoardState, page: Any, search_v, suites_v, families_v, demo_v, sort_v, view_v, prov_v,
               images_v="all") -> tuple[data.Table, list[str]]:
    """(the page of the table, the keys of its order's first FOREST_TOP) for the filters' values."""
    filters = dict(suites=suites_v or (), families=families_v or (), search=search_v or "", show_demo=bool(demo_v),
                   sort_by=sort_v, view=view_v, evaluated=prov_v or "all", images=images_v or "all")
    table = st.table(page=page, **filters)
    return table, table.order[:FOREST_TOP]


def _paging_row(first: data.Table) -> tuple:
    with gr.Row(equal_height=True):
        prev_btn = gr.Button("◀ Previous", size="sm", elem_id="lb-prev", scale=0, min_width=110)
        number = gr.Number(value=1, precision=0, minimum=1, label="Page", elem_id="lb-page-number", scale=0,
                           min_width=90)
        next_btn = gr.Button("Next ▶", size="sm", elem_id="lb-next", scale=0, min_width=110)
        info = gr.Markdown(first.page.text(), elem_id="lb-page")
    return prev_btn, number, next_btn, info


def _selection_choices(st: BoardState, table: data.Table, selected: Sequence[str]) -> list[tuple[str, str]]:
    keys = [k for k in dict.fromkeys([*(selected or []), *table.keys]) if k in st.by_key]
    return [(st.labels[k], k) for k in keys]


def leaderboard_tab(ctx: AppContext) -> None:
    """The table, one page at a time (searched, filtered, sorted and ranked on the server): one
    row per model, a view of the headline scores; a row click opens the model's details; the
    models selected here are the forest plots' and Compare's."""
    st = ctx.state
    views = data.views(st.names())
    comps = _filters_row(st, views)
    filters = list(comps.values())
    first, top0 = _table_for(st, 1, "", [], [], True, comps["sort_by"].value, views[0], "all")
    prev_btn, number, next_btn, info = _paging_row(first)
    table = gr.Dataframe(interactive=False, wrap=True, pinned_columns=1, elem_id="lb-table", max_height=720,
                         elem_classes=["lb-sans"], label="Models, best first (Rank: its rank range, ≈ tied); "
                         "click a row for its details", **_table_component_value(first))
    ctx.selected = gr.Dropdown(choices=_selection_choices(st, first, []), value=[], multiselect=True,
                               elem_id="lb-selected", label="Selected models (for the forest plots and Compare; "
                               "pick from this page, or search first)")
    ctx.top = gr.State(top0)
    legend = gr.Markdown(data.legend_markdown(data.view_names(st.names(), views[0])), elem_id="lb-legend")

    def update(page, selected, *values):
        t, top = _table_for(st, page, *values)
        names = data.view_names(st.names(values[1] or ()), values[5])
        return (gr.Dataframe(**_table_component_value(t)), data.legend_markdown(names), t.page.text(),
                t.page.number, gr.Dropdown(choices=_selection_choices(st, t, selected), value=selected or []), top)

    outputs = [table, legend, info, number, ctx.selected, ctx.top]
    for comp in filters:  # a filter resets the page to the first; "search" and "page" are API names (the bench)
        comp.change(lambda *v: update(1, *v), inputs=[ctx.selected, *filters], outputs=outputs,
                    api_name="search" if comp is comps["search"] else None)
    paged = [number, ctx.selected, *filters]
    number.submit(update, inputs=paged, outputs=outputs)
    prev_btn.click(lambda p, *v: update((p or 1) - 1, *v), inputs=paged, outputs=outputs)
    next_btn.click(lambda p, *v: update((p or 1) + 1, *v), inputs=paged, outputs=outputs, api_name="page")
    comps["suites"].change(lambda s, cur: gr.Dropdown(choices=_sort_choices(st, s),
                                                      value=_keep(cur, _sort_choices(st, s))),
                           inputs=[comps["suites"], comps["sort_by"]], outputs=[comps["sort_by"]])
    _wire_row_click(ctx, table)

    def refresh(page, selected, search_v, suites_v, families_v, demo_v, sort_v, view_v, prov_v, images_v="all"):
        views_now = data.views(st.names())
        view_v = view_v if view_v in views_now else views_now[0]
        sort_v = _keep(sort_v, _sort_choices(st, suites_v))
        selected = [k for k in selected or [] if k in st.by_key]
        out = update(page, selected, search_v, suites_v, families_v, demo_v, sort_v, view_v, prov_v, images_v)
        return (*out, gr.Dropdown(choices=data.all_suites(st.rows)), gr.Dropdown(choices=data.all_families(st.rows)),
                gr.Dropdown(choices=_sort_choices(st, suites_v), value=sort_v),
                gr.Dropdown(choices=views_now, value=view_v))

    ctx.on_reload(refresh, [number, ctx.selected, *filters],
                  [*outputs, comps["suites"], comps["families"], comps["sort_by"], comps["view"]])


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


def forest_figure(rows: Sequence[data.ModelRow], names: Sequence[str]):
    """Forest plots of ``names`` across ``rows`` (one panel per score, two columns), or None."""
    panels = data.forest_panels(rows, names)
    if not panels:
        return None
    fig = draw(panels, width=12.0, row_inches=0.3, label_chars=30, ncols=2 if len(panels) > 1 else 1)
    return _detached(fig)


def _detached(fig):
    """The figure out of pyplot's registry (Gradio draws it later; nothing else keeps it alive)."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    return fig


def forest_keys(st: BoardState, selected: Sequence[str] | None, top: Sequence[str] | None,
                show_demo: bool) -> list[str]:
    """The models the forest plots draw: those selected in the table, else the first
    :data:`FOREST_TOP` of its current order (``top``; None without a table tab: the default
    order's), never every model."""
    if top is None:
        top = [r.key for r in st.ranked()[:FOREST_TOP]]
    keys = [k for k in selected or [] if k in st.by_key] or [k for k in top if k in st.by_key]
    return [k for k in keys if show_demo or not st.by_key[k].latest.demo]


def forest_tab(ctx: AppContext) -> None:
    """The selected models' values and intervals per score (else the table's first ones), best
    first: who differs from whom beyond noise."""
    st = ctx.state
    views = data.views(st.names())
    with gr.Row():
        view = gr.Dropdown(choices=views, value=views[0], label="Scores", elem_id="lb-forest-view", scale=3)
        show_demo = gr.Checkbox(value=True, label="Show demo rows", elem_id="lb-forest-demo", scale=1)
    gr.Markdown(f"The models selected on the Leaderboard tab, else its first {FOREST_TOP} in its current order. "
                "Point: the value; bar: its bootstrap interval; dashed line: the ideal value. Rows are best first; "
                "overlapping bars mean the audit cannot tell those models apart. Grey rows are demo models.")
    inputs = [view, show_demo, *(c for c in (ctx.selected, ctx.top) if c is not None)]  # no table tab: none

    def figure(view_v, demo_v, selected=None, top=None):
        rows = [st.by_key[k] for k in forest_keys(st, selected, top, bool(demo_v))]
        return forest_figure(rows, data.view_names(st.names(), view_v))

    plot = gr.Plot(value=figure(views[0], True, [], ctx.top.value if ctx.top is not None else None),
                   elem_id="lb-forest", show_label=False)
    for comp in (view, show_demo):
        comp.change(figure, inputs=inputs, outputs=[plot], api_name="forest" if comp is view else None)

    def on_tab(evt: gr.SelectData, *values):
        """Drawn again when the tab is opened (the selection and the table's order change
        elsewhere: no figure is drawn for each search or page turn)."""
        return figure(*values) if evt.selected and str(evt.value) == FOREST_TITLE else gr.Plot()

    ctx.after_tabs(lambda: ctx.tabs.select(on_tab, inputs=inputs, outputs=[plot]) if ctx.tabs is not None else None)

    def refresh(view_v, demo_v, selected=None, top=None):
        views_now = data.views(st.names())
        view_v = view_v if view_v in views_now else views_now[0]
        return gr.Dropdown(choices=views_now, value=view_v), figure(view_v, demo_v, selected, top)

    ctx.on_reload(refresh, inputs, [view, plot])


def compare_models(rows: Sequence[data.ModelRow], view: str | None) -> tuple[str, Any, Any]:
    """What the Compare tab shows for ``rows``: (message, table, figure). The one function the
    tab calls: swap it to change how models are compared."""
    if len(rows) < 2:
        return "Pick two or more models.", None, None
    names = data.view_names(data.headline_names([r.latest for r in rows]), view)
    return "", data.compare_table(rows, names), forest_figure(rows, names)


def compare_tab(ctx: AppContext) -> None:
    """Two or more models side by side: their cells in one table and their intervals in one plot.
    The picker lists the best ranked models and those selected in the table."""
    st = ctx.state
    views = data.views(st.names())
    first_four = [k for _, k in st.model_choices()[:4]]
    with gr.Row():
        picked = gr.Dropdown(choices=st.model_choices(), value=first_four,
                             multiselect=True, label="Models (two or more)", elem_id="lb-compare-models", scale=3)
        view = gr.Dropdown(choices=views, value=views[-1], label="Scores", elem_id="lb-compare-view", scale=1)

    def compare(keys, view_v):
        return compare_models([st.by_key[k] for k in keys or [] if k in st.by_key], view_v)

    msg0, table0, fig0 = compare(first_four, views[-1])
    msg = gr.Markdown(msg0, elem_id="lb-compare-msg")
    table = gr.Dataframe(value=table0, interactive=False, wrap=True, elem_id="lb-compare-table", show_label=False,
                         elem_classes=["lb-sans"])
    plot = gr.Plot(value=fig0, elem_id="lb-compare-plot", show_label=False)
    for comp in (picked, view):
        comp.change(compare, inputs=[picked, view], outputs=[msg, table, plot])
    # Significance of a difference: the paired test of `t2ibench compare`, on demand (it scores both runs again)
    paired_button = gr.Button("Paired test of the two models (run folders)", elem_id="lb-compare-paired-button",
                              size="sm")
    paired = gr.Markdown("", elem_id="lb-compare-paired")
    paired_button.click(lambda keys: paired_markdown([st.by_key[k].latest for k in keys or [] if k in st.by_key]),
                        inputs=[picked], outputs=[paired])

    def take_selection(selected, keys):
        keys = [k for k in selected or [] if k in st.by_key] if len(selected or []) >= 2 else keys
        return gr.Dropdown(choices=st.model_choices(keys), value=keys)

    if ctx.selected is not None:
        ctx.selected.change(take_selection, inputs=[ctx.selected, picked], outputs=[picked])

    def refresh(keys, view_v):
        keys = [k for k in keys or [] if k in st.by_key]
        return (gr.Dropdown(choices=st.model_choices(keys), value=keys), *compare(keys, view_v))

    ctx.on_reload(refresh, [picked, view], [picked, msg, table, plot])


def detail_tab(ctx: AppContext) -> None:
    """One model: provenance, every score entry in one table with its notes, plots."""
    st = ctx.state
    picked = gr.Dropdown(choices=st.model_choices(), value=st.first_key(), label="Model", elem_id="lb-model")
    ctx.model = picked

    @gr.render(inputs=[picked])
    def _detail(key: str | None) -> None:
        row = st.detail_row(key)
        if row is None:
            gr.Markdown("No model to show: the results folder has no valid file." if not st.rows else
                        "Choose a model above, or click its row in the leaderboard.")
            return
        _render_detail(row)

    ctx.on_reload(lambda key: gr.Dropdown(choices=st.model_choices([key] if key in st.by_key else []),
                                          value=key if key in st.by_key else st.first_key()),
                  [picked], [picked])


def images_tab(ctx: AppContext) -> None:
    """A model's generated images with prompts and labels: its run folder, or the images dataset
    its submission pushed to the Hub."""
    st = ctx.state

    def choices() -> list[tuple[str, str]]:
        rows = [r for r in st.ranked() if image_data.image_source(r.latest)][:MAX_CHOICES]
        return [(data.row_label(r), r.key) for r in rows]

    def model_images(key: str | None) -> tuple[list[str], str | None, bool, str, list]:
        """(suites, suite shown, Hub button visible, status line, images) for model ``key``."""
        row = st.detail_row(key)  # the whole document: its labels caption the images
        where = image_data.image_source(row.latest) if row else None
        if where is None:
            return [], None, False, ("No model here has browsable images: results inside a run folder, or a "
                                     "submission that pushed its images (`t2ibench submit --push-images`)."), []
        if where[0] == "run":
            suites = image_data.run_suites(where[1])
            suite_v = suites[0] if suites else None
            items = image_data.run_images(where[1], row.latest.doc, suite_v)
            return suites, suite_v, False, _status(items, where), items
        suites = list(row.latest.suites)
        return (suites, suites[0] if suites else None, True,
                f"Images are in the Hub dataset [{where[1]}]({data.HUB_DATASETS}{where[1]}): press the button to "
                "stream a page of them.", [])

    first = (choices() or [(None, None)])[0][1]
    suites0, suite0, hub0, status0, items0 = model_images(first)
    with gr.Row():
        model = gr.Dropdown(choices=choices(), value=first, label="Model (those whose images can be browsed)",
                            elem_id="lb-images-model", scale=3)
        suite = gr.Dropdown(choices=suites0, value=suite0, label="Suite", elem_id="lb-images-suite", scale=2)
        search = gr.Textbox(label="Prompt contains", elem_id="lb-images-search", scale=2)
    load_hub = gr.Button("Load images from the Hub", visible=hub0, size="sm", elem_id="lb-images-hub")
    status = gr.Markdown(status0, elem_id="lb-images-status")
    gallery = gr.Gallery(value=items0, columns=6, height="auto", object_fit="contain", elem_id="lb-gallery",
                         show_label=False, allow_preview=True)

    def pick_model(key):
        suites, suite_v, hub, text_v, items = model_images(key)
        return gr.Dropdown(choices=suites, value=suite_v), gr.Button(visible=hub), text_v, items

    def show(key, suite_v, search_v, from_hub=False):
        row = st.detail_row(key)  # the whole document: its labels caption the images
        where = image_data.image_source(row.latest) if row else None
        if where is None or (where[0] == "hub" and not from_hub):
            return gr.Markdown(), gr.Gallery()
        try:
            items = (image_data.run_images(where[1], row.latest.doc, suite_v, search_v or "") if where[0] == "run"
                     else image_data.hub_images(where[1], suite_v, search_v or ""))
        except ValueError as exc:
            return data.md_escape(exc), []
        return _status(items, where), items

    model.input(pick_model, inputs=[model], outputs=[suite, load_hub, status, gallery])
    suite.input(show, inputs=[model, suite, search], outputs=[status, gallery])
    search.submit(show, inputs=[model, suite, search], outputs=[status, gallery])
    load_hub.click(lambda k, s, q: show(k, s, q, from_hub=True), inputs=[model, suite, search],
                   outputs=[status, gallery])

    def refresh(key):
        keys = [k for _, k in choices()]
        key = key if key in keys else (keys[0] if keys else None)
        return (gr.Dropdown(choices=choices(), value=key), *pick_model(key))

    ctx.on_reload(refresh, [model], [model, suite, load_hub, status, gallery])


def _status(items: list, where: tuple[str, Any]) -> str:
    origin = "the run folder" if where[0] == "run" else f"the Hub dataset {where[1]}"
    if not items:
        return f"No image matches, in {data.md_escape(origin)}."
    return (f"{len(items)} image(s) from {data.md_escape(origin)} (at most {image_data.MAX_IMAGES}; images left out of every "
            "score are not shown: refused by the image API, not supplied, or flagged by the safety checker). Click one to enlarge it; its caption is the prompt and its labels.")


TABS: list[Tab] = [
    Tab("board", "Leaderboard", leaderboard_tab),
    Tab("forest", FOREST_TITLE, forest_tab),
    Tab("compare", "Compare models", compare_tab),
    Tab("detail", "Model details", detail_tab),
    Tab("images", "Images", images_tab),
]


# --------------------------------------------------------------------------- the app


def build_app(results_dir: str | Path | None = None, repo: str | None = None, *,
              revision: str | None = None, tabs: Sequence[Tab] = TABS, requests_dir: str | Path | None = None,
              requests_repo: str | None = None) -> gr.Blocks:
    """The leaderboard for the results in ``results_dir`` or the Hub dataset ``repo``; with a
    requests queue (``requests_dir`` or ``requests_repo``) also the "Submit a model" tab, and
    rows count as evaluated by the maintainers' workers only when the queue says so."""
    benchmark.load_tasks()  # the task folders fill the registries once, before the board reads them
    requests = submit_tab.open_requests(requests_dir, requests_repo) \
        if requests_dir is not None or requests_repo is not None else None
    ctx = AppContext(BoardState(Source(results_dir, repo, revision), requests))
    st = ctx.state
    with gr.Blocks(title=TITLE) as demo:
        gr.Markdown(f"# {TITLE}\n\n{intro()}")
        with gr.Row(equal_height=True):
            source_md = gr.Markdown(_source_line(st.board), elem_id="lb-source")
            reload_btn = gr.Button("Reload results", size="sm", elem_id="lb-reload", scale=0, min_width=140)
        board_warn = data.warnings_markdown(st.board)
        warnings = gr.Markdown(board_warn, visible=bool(board_warn), elem_id="lb-warnings")
        with gr.Tabs(selected=tabs[0].id if tabs else None) as ctx.tabs:
            for tab in tabs:
                with gr.Tab(tab.title, id=tab.id):
                    tab.build(ctx)
            if requests is not None:
                submit_tab.add_submit_tab(requests, **submit_tab.options_from_env())
        for wire in ctx.wiring:
            wire()

        all_inputs = [c for _, ins, _ in ctx.reloaders for c in ins]
        all_outputs = [c for _, _, outs in ctx.reloaders for c in outs]

        def on_reload(*values):
            st.reload()
            warn = data.warnings_markdown(st.board)
            out: list[Any] = [gr.Markdown(warn, visible=bool(warn)), _source_line(st.board)]
            pos = 0
            for fn, ins, outs in ctx.reloaders:
                result = fn(*values[pos:pos + len(ins)])
                pos += len(ins)
                out += list(result) if isinstance(result, tuple) else [result]
            return out

        reload_btn.click(on_reload, inputs=all_inputs, outputs=[warnings, source_md, *all_outputs])
    return demo


def _sort_choices(st: BoardState, suites: Sequence[str] | None = None) -> list[tuple[str, str]]:
    return [(data.value_column(n), n) for n in st.names(suites or ())]


def _keep(current: str | None, choices: list[tuple[str, str]]) -> str | None:
    values = [v for _, v in choices]
    return current if current in values else (values[0] if values else None)


def _source_line(board: data.Board) -> str:
    n, m = len(board.submissions), len(board.rows())
    return f"Results from **{data.md_escape(board.source)}**: {n} valid file(s), {m} model(s)."


# --------------------------------------------------------------------------- detail view


_plot_cache: dict[tuple, list[tuple[str, str]]] = {}


def report_plots(sub: data.Submission) -> list[tuple[str, str]]:
    """(PNG path, caption) of the report's figures, for a results file inside a run folder.

    Regenerated from the run's detail tables by each task's own figures (the report's; into a
    cache folder: the run folder is not written); a run without detail tables shows the PNGs
    of its ``report/`` folder. A bare results file has neither (it does not embed per-item
    detail), so only the scores plot is shown for it.
    """
    if sub.run_dir is None:
        return []
    key = (str(sub.path), sub.path.stat().st_mtime_ns)
    if key not in _plot_cache:
        _plot_cache[key] = _draw_report_plots(sub)
    return _plot_cache[key]


def _draw_report_plots(sub: data.Submission) -> list[tuple[str, str]]:
    import pandas as pd

    out_dir = Path(tempfile.mkdtemp(prefix="t2ibench-leaderboard-plots-"))
    details = sub.doc.get("details") or {}
    run_dir = sub.run_dir.resolve()

    def read_detail(name: str):
        rel = details.get(name)
        path = (run_dir / rel).resolve() if isinstance(rel, str) else None
        ok = path is not None and path.is_file() and run_dir in path.parents  # never outside the run folder
        return pd.read_parquet(path) if ok else None

    made: list[tuple[str, str]] = []
    for fam in report_sections(sub.run_dir, sub.doc):
        report = getattr(fam.task, "report", None)
        if report is None or report.figures is None:
            continue
        entries = [e for e in sub.doc.get("scores", []) if e.get("suite") in fam.suites]
        try:
            made += [(str(out_dir / f), c) for f, c in report.figures(read_detail, entries, out_dir)]
        except Exception as exc:  # a detail table the plot cannot use: say so, keep the page
            made.append(("", f"{fam.title}: plot failed ({type(exc).__name__}: {exc})"))
    if not made and (sub.run_dir / REPORT_DIR).is_dir():
        made = [(str(p), p.stem) for p in sorted((sub.run_dir / REPORT_DIR).glob("*.png")) if p.name != "summary.png"]
    return made


def scores_figure(sub: data.Submission):
    """Every defined entry of each headline score with its interval (one panel per score), or None."""
    panels = []
    for n in data.headline_names([sub]):
        entries = [e for e in sub.scores if e.get("name") == n and e.get("defined")]
        if not entries:
            continue
        meta = data.SCORE_METADATA[n]
        rows = []
        for e in entries:
            ci = e.get("ci") if isinstance(e.get("ci"), dict) else {}
            label = " / ".join(str(x) for x in (e.get("suite"), short_estimator(e.get("estimator"), 14),
                                                e.get("subset")) if x)
            rows.append({"label": label, "value": e["value"], "low": ci.get("low"), "high": ci.get("high")})
        panels.append({"title": f"{data.value_column(n)}  ({data.direction_text(n)})", "ideal": meta.ideal,
                       "bounds": (meta.min_value, meta.max_value), "rows": rows})
    if not panels:
        return None
    return _detached(draw(panels, width=12.0, row_inches=0.28, label_chars=40, ncols=2 if len(panels) > 1 else 1))


def _render_detail(row: data.ModelRow) -> None:
    """The detail view's components (inside ``gr.render``)."""
    sub = row.latest
    gr.Markdown(data.detail_markdown(row), elem_id="lb-detail-head")
    table, notes = data.scores_table(sub)
    gr.Dataframe(table, interactive=False, wrap=True, column_widths=data.DETAIL_WIDTHS, elem_id="lb-detail-scores", elem_classes=["lb-sans"],
                 label="Every score entry (* = the one in the leaderboard's column); notes below", max_height=600)
    if notes:
        gr.Markdown(data.notes_markdown(notes), elem_id="lb-detail-notes")
    with gr.Accordion("Suites: status, images, exclusions", open=False):
        gr.Dataframe(data.suites_status_table(sub), interactive=False, wrap=True, elem_id="lb-detail-suites")
    fig = scores_figure(sub)
    if fig is not None:
        gr.Plot(fig, label="Headline scores with their intervals (every estimator)", elem_id="lb-detail-plot")
    plots = report_plots(sub)
    if plots:
        with gr.Accordion(f"Report plots ({len(plots)})", open=False):
            for path, caption in plots:
                if path:
                    # Passed as pixels, not a path: the run folder need not be an allowed path of the server.
                    from PIL import Image

                    with Image.open(path) as img:
                        gr.Image(img.convert("RGB"), label=caption, type="pil", interactive=False)
                else:
                    gr.Markdown(data.md_escape(caption))
    elif sub.run_dir is None:
        gr.Markdown("*No report plots: this results file is not inside a run folder, and results files do not "
                    "embed the per-item detail tables the plots are drawn from.*")
    if image_data.image_source(sub):
        gr.Markdown("Its generated images: the **Images** tab.")


def launch(demo: gr.Blocks, *, host: str = "127.0.0.1", port: int | None = None, **kwargs: Any):
    """Start the server with the app's CSS."""
    return demo.launch(server_name=host, server_port=port, css=CSS, **kwargs)


def app_from_env(env: Callable[[str], str | None] = os.environ.get) -> gr.Blocks:
    """The app a Space runs: Hub dataset ``RESULTS_REPO`` (optional ``RESULTS_REVISION``), else the
    folder ``RESULTS_DIR`` (default ``results``, beside app.py in the Space repo); a requests queue
    from ``REQUESTS_REPO`` or ``REQUESTS_DIR`` adds the "Submit a model" tab."""
    repo = env("RESULTS_REPO")
    queue = {"requests_dir": env("REQUESTS_DIR") or None, "requests_repo": env("REQUESTS_REPO") or None}
    if repo:
        return build_app(repo=repo, revision=env("RESULTS_REVISION") or None, **queue)
    return build_app(results_dir=env("RESULTS_DIR") or "results", **queue)


def main() -> None:
    """``python app.py``: Gradio reads GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (a Space sets them)."""
    launch(app_from_env(), host=os.environ.get("GRADIO_SERVER_NAME") or "0.0.0.0",
           port=int(os.environ.get("GRADIO_SERVER_PORT") or 7860))


if __name__ == "__main__":
    main()

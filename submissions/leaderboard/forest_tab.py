"""The Forest plots tab: the selected models' values and intervals per score (else the table's
first ones), drawn again when the tab is opened.
"""

from __future__ import annotations

from typing import Sequence

import gradio as gr

from submissions.leaderboard import score_columns
from submissions.leaderboard.app_state import FOREST_TOP, AppContext, BoardState
from submissions.leaderboard.figures import forest_figure

FOREST_TITLE = "Forest plots"


def forest_keys(st: BoardState, selected: Sequence[str] | None, top: Sequence[str] | None,
                show_demo: bool) -> list[str]:
    """The models the forest plots draw: those selected in the table, else the first
    :data:`FOREST_TOP` of its current order (``top``; None without a table tab: the default
    order's), never every model."""
    if top is None:
        top = st.ranked()[:FOREST_TOP]
    keys = [k for k in selected or [] if k in st.by_key] or [k for k in top if k in st.by_key]
    return [k for k in keys if show_demo or not st.by_key[k].latest.demo]


def forest_tab(ctx: AppContext) -> None:
    """The selected models' values and intervals per score (else the table's first ones), best
    first: who differs from whom beyond noise."""
    st = ctx.state
    views = score_columns.views(st.names())
    with gr.Row():
        view = gr.Dropdown(choices=views, value=views[0], label="Scores", elem_id="lb-forest-view", scale=3)
        show_demo = gr.Checkbox(value=True, label="Show demo rows", elem_id="lb-forest-demo", scale=1)
    gr.Markdown(f"The models selected on the Leaderboard tab, else its first {FOREST_TOP} in its current order. "
                "Point: the value; bar: its bootstrap interval; dashed line: the ideal value. Rows are best first; "
                "overlapping bars mean the audit cannot tell those models apart. Grey rows are demo models.")
    inputs = [view, show_demo, *(c for c in (ctx.selected, ctx.top) if c is not None)]  # no table tab: none

    def figure(view_v, demo_v, selected=None, top=None):
        rows = [st.by_key[k] for k in forest_keys(st, selected, top, bool(demo_v))]
        return forest_figure(rows, score_columns.view_names(st.names(), view_v))

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
        """Drawn again only when a model it draws changed or went, or (nothing selected) a model came
        among the first of the board (it is drawn again anyway when the tab is opened)."""
        views_now = score_columns.views(st.names())
        stale_view = view_v not in views_now
        view_v = view_v if not stale_view else views_now[0]
        drawn = selected or top or []
        came = not selected and bool(st.change.added & set(st.ranked()[:FOREST_TOP]))
        stale = st.change.touches(drawn) or came or stale_view
        return (gr.Dropdown(choices=views_now, value=view_v) if views_now != views or stale_view else gr.skip(),
                figure(view_v, demo_v, selected, top) if stale else gr.skip())

    ctx.on_reload(refresh, inputs, [view, plot])

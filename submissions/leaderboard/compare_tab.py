"""The Compare models tab: two or more models side by side (:func:`compare_models`: their cells in
one table, their intervals in one plot) and, on demand, the paired test of two models
(:func:`submissions.leaderboard.paired.paired_markdown`: from their run folders, or from the
paired resamples their results files carry).
"""

from __future__ import annotations

from typing import Any, Sequence

import gradio as gr

from submissions.leaderboard import board_model, comparison, score_columns
from submissions.leaderboard.app_state import AppContext
from submissions.leaderboard.figures import forest_figure
from submissions.leaderboard.paired import paired_markdown


def compare_models(rows: Sequence[board_model.ModelRow], view: str | None) -> tuple[str, Any, Any]:
    """What the Compare tab shows for ``rows``: (message, table, figure). The one function the
    tab calls: swap it to change how models are compared."""
    if len(rows) < 2:
        return "Pick two or more models.", None, None
    names = score_columns.view_names(score_columns.headline_names([r.latest for r in rows]), view)
    return "", comparison.compare_table(rows, names), forest_figure(rows, names)


def compare_tab(ctx: AppContext) -> None:
    """Two or more models side by side: their cells in one table and their intervals in one plot.
    The picker lists the best ranked models and those selected in the table."""
    st = ctx.state
    views = score_columns.views(st.names())
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
    # Significance of a difference: the paired test of `t2ibench compare`, on demand (a run folder is scored again)
    paired_button = gr.Button("Paired test of the two models", elem_id="lb-compare-paired-button", size="sm")
    paired = gr.Markdown("", elem_id="lb-compare-paired")
    paired_button.click(lambda keys: paired_markdown([st.by_key[k].latest for k in keys or [] if k in st.by_key]),
                        inputs=[picked], outputs=[paired])

    def take_selection(selected, keys):
        keys = [k for k in selected or [] if k in st.by_key] if len(selected or []) >= 2 else keys
        return gr.Dropdown(choices=st.model_choices(keys), value=keys)

    if ctx.selected is not None:
        ctx.selected.change(take_selection, inputs=[ctx.selected, picked], outputs=[picked])

    def refresh(keys, view_v):
        """Compared again only when a model compared changed or went."""
        if not st.change.touches(keys or []):
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        keys = [k for k in keys or [] if k in st.by_key]
        return (gr.Dropdown(choices=st.model_choices(keys), value=keys), *compare(keys, view_v))

    ctx.on_reload(refresh, [picked, view], [picked, msg, table, plot])

"""The Model details tab: one model's provenance, every score entry in one table with its notes,
its suites' status and its plots.
"""

from __future__ import annotations

import gradio as gr

from benchmark.present.text import md_escape
from submissions.leaderboard import board_model, detail
from submissions.leaderboard import images as image_data
from submissions.leaderboard.app_state import AppContext
from submissions.leaderboard.figures import report_plots, scores_figure


def detail_tab(ctx: AppContext) -> None:
    """One model: provenance, every score entry in one table with its notes, plots."""
    st = ctx.state
    picked = gr.Dropdown(choices=st.model_choices(), value=st.first_key(), label="Model", elem_id="lb-model")
    ctx.model = picked
    version = gr.State(0)  # bumped by a reload that changed the model shown: drawn again

    @gr.render(inputs=[picked, version])
    def _detail(key: str | None, _version: int) -> None:
        row = st.detail_row(key)
        if row is None:
            gr.Markdown("No model to show: the results folder has no valid file." if not st.rows else
                        "Choose a model above, or click its row in the leaderboard.")
            return
        _render_detail(row, st.links)

    def refresh(key, n):
        """Only a model whose row changed or went is shown again (a reload draws nothing else)."""
        if key in st.by_key and not st.change.touches([key]):
            return gr.skip(), gr.skip()
        key = key if key in st.by_key else st.first_key()
        return gr.Dropdown(choices=st.model_choices([key] if key else []), value=key), (n or 0) + 1

    ctx.on_reload(refresh, [picked, version], [picked, version])


def _render_detail(row: board_model.ModelRow, links=None) -> None:
    """The detail view's components (inside ``gr.render``)."""
    sub = row.latest
    gr.Markdown(detail.detail_markdown(row, links), elem_id="lb-detail-head")
    table, notes = detail.scores_table(sub)
    gr.Dataframe(table, interactive=False, wrap=True, column_widths=detail.DETAIL_WIDTHS, elem_id="lb-detail-scores", elem_classes=["lb-sans"],
                 label="Every score entry (* = the one in the leaderboard's column); notes below", max_height=600)
    if notes:
        gr.Markdown(detail.notes_markdown(notes), elem_id="lb-detail-notes")
    with gr.Accordion("Suites: status, images, exclusions", open=False):
        gr.Dataframe(detail.suites_status_table(sub), interactive=False, wrap=True, elem_id="lb-detail-suites")
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
                    gr.Markdown(md_escape(caption))
    elif sub.run_dir is None:
        gr.Markdown("*No report plots: this results file is not inside a run folder, and results files do not "
                    "embed the per-item detail tables the plots are drawn from.*")
    if image_data.image_source(sub):
        gr.Markdown("Its generated images: the **Images** tab.")

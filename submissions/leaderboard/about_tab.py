"""The About tab: what each score measures (from the scores' metadata), how an audit is made, how
to read ranks, tiers and intervals, the overall view, the badges, downloads and shared links, and
the citation (:func:`submissions.leaderboard.about.about_markdown`)."""

from __future__ import annotations

import gradio as gr

from submissions.leaderboard.about import about_markdown
from submissions.leaderboard.app_state import AppContext

ABOUT_TITLE = "About"


def about_tab(ctx: AppContext) -> None:
    """The board explained, made from the scores' metadata and the papers' registry."""
    st = ctx.state
    text = gr.Markdown(about_markdown(st.index), elem_id="lb-about")
    ctx.on_reload(lambda: about_markdown(st.index), [], [text])

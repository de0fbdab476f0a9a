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
    built = about_markdown(st.index)
    text = gr.Markdown(built, elem_id="lb-about")

    def refresh():
        """Sent again only when it changed (the estimators of the board's cells)."""
        now = about_markdown(st.index)
        return gr.skip() if now == built else now

    ctx.on_reload(refresh, [], [text])

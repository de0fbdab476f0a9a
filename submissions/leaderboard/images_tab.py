"""The Images tab: a model's generated images with prompts and labels, from its run folder or
from the images dataset its submission pushed to the Hub.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from benchmark.present.text import md_escape
from submissions.leaderboard import board_model
from submissions.leaderboard import images as image_data
from submissions.leaderboard.app_state import MAX_CHOICES, AppContext


def images_tab(ctx: AppContext) -> None:
    """A model's generated images with prompts and labels: its run folder, or the images dataset
    its submission pushed to the Hub."""
    st = ctx.state

    def choices() -> list[tuple[str, str]]:
        """The first MAX_CHOICES models of the default order whose images can be browsed (only rows
        from a run folder or with a pushed images dataset are looked at)."""
        frame = st.index.row_frame()
        may = set(frame["key"][frame["run_folder"].astype(bool) | frame["images_dataset"].notna()])
        keys = [k for k in st.ranked() if k in may and image_data.image_source(st.by_key[k].latest)][:MAX_CHOICES]
        return [(st.pick_label(k), k) for k in keys]

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
                f"Images are in the Hub dataset [{where[1]}]({board_model.HUB_DATASETS}{where[1]}): press the button "
                "to stream a page of them.", [])

    built = choices()  # the page is built with these; a reload sends new ones only when they differ
    first = (built or [(None, None)])[0][1]
    suites0, suite0, hub0, status0, items0 = model_images(first)
    with gr.Row():
        model = gr.Dropdown(choices=built, value=first, label="Model (those whose images can be browsed)",
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
            return md_escape(exc), []
        return _status(items, where), items

    model.input(pick_model, inputs=[model], outputs=[suite, load_hub, status, gallery])
    suite.input(show, inputs=[model, suite, search], outputs=[status, gallery])
    search.submit(show, inputs=[model, suite, search], outputs=[status, gallery])
    load_hub.click(lambda k, s, q: show(k, s, q, from_hub=True), inputs=[model, suite, search],
                   outputs=[status, gallery])

    def refresh(key):
        """The choices again (when they changed); the images again only when the model shown changed or went."""
        now = choices()
        keys = [k for _, k in now]
        if key in keys and not st.change.touches([key]):
            return (gr.skip() if now == built else gr.Dropdown(choices=now, value=key),
                    gr.skip(), gr.skip(), gr.skip(), gr.skip())
        key = key if key in keys else (keys[0] if keys else None)
        return (gr.Dropdown(choices=now, value=key), *pick_model(key))

    ctx.on_reload(refresh, [model], [model, suite, load_hub, status, gallery])


def _status(items: list, where: tuple[str, Any]) -> str:
    origin = "the run folder" if where[0] == "run" else f"the Hub dataset {where[1]}"
    if not items:
        return f"No image matches, in {md_escape(origin)}."
    return (f"{len(items)} image(s) from {md_escape(origin)} (at most {image_data.MAX_IMAGES}; images left out of every "
            "score are not shown: refused by the image API, not supplied, or flagged by the safety checker). Click one to enlarge it; its caption is the prompt and its labels.")

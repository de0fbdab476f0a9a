"""The leaderboard as a Gradio app: a table of models ("value [low, high]" per headline score),
a forest plot per score across all models, a comparison of two or more models, a detail
view per model and an image browser.

Runs three ways: ``t2ibench leaderboard --results DIR`` (or ``--repo ORG/NAME``),
``python app.py`` in a Hub Space (reads the env ``RESULTS_REPO`` or ``RESULTS_DIR``), and
imported: ``build_app(results_dir=...)`` returns the ``gr.Blocks``.

Each tab is built by one small function ``tab(ctx)`` listed in :data:`TABS`, each in its own
module (``board_tab``, ``forest_tab``, ``compare_tab``, ``detail_tab``, ``images_tab``; what they
share, :class:`~submissions.leaderboard.app_state.AppContext` and the board's state, in
``app_state``); a new tab is one more :class:`Tab` there (or
``build_app(..., tabs=[*TABS, Tab(...)])``). A tab that shows data registers how to refresh it
with ``ctx.on_reload``. This module lays the tabs out, wires "Reload results" and starts the server.

Escaping: results text reaches the page only as plain-text cells, labels and captions
(Gradio renders those as text), through ``benchmark.present.text.md_escape`` in Markdown, or through
``benchmark.present.text.html_escape`` in the two HTML cells (badges, suites); links are built from
validated Hub repo ids only.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any, Callable, Sequence

import benchmark
from benchmark.contract.times import utc_iso
from benchmark.extras import require_gradio
from benchmark.papers import PAPERS

require_gradio("matplotlib", purpose="run the leaderboard")  # and Gradio's analytics off, before it is imported

import gradio as gr  # noqa: E402

from benchmark.present.text import md_escape  # noqa: E402
from submissions.leaderboard import about, board_index, submit_tab, wording  # noqa: E402
from submissions.leaderboard.about_tab import ABOUT_TITLE, about_tab  # noqa: E402
from submissions.leaderboard.app_state import AppContext, BoardState, Source, Tab  # noqa: E402
from submissions.leaderboard.board_tab import leaderboard_tab  # noqa: E402
from submissions.leaderboard.compare_tab import compare_tab  # noqa: E402
from submissions.leaderboard.detail_tab import detail_tab  # noqa: E402
from submissions.leaderboard.forest_tab import FOREST_TITLE, forest_tab  # noqa: E402
from submissions.leaderboard.images_tab import images_tab  # noqa: E402

TITLE = "Text-to-image bias leaderboard"
CSS = """
#lb-warnings {background:#fff4e5;border:2px solid #e07b00;border-radius:6px;padding:.6em 1em}
#lb-detail-head blockquote {background:#fde8e8;border-left:6px solid #c62828;font-weight:bold}
.lb-badge {display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;font-weight:700;line-height:18px;
           border:1px solid;margin-right:3px;white-space:nowrap}
.lb-badge-demo, .lb-badge-degenerate {background:#fde8e8;color:#8e0000;border-color:#c62828}
.lb-badge-evaluated {background:#e6f4ea;color:#135e2b;border-color:#2e7d32}
.lb-badge-supplied, .lb-badge-api {background:#fff4e5;color:#7a4100;border-color:#b26a00}
.lb-badge[class$="-ref"] {background:#e8eefd;color:#0d2f8e;border-color:#2851c6}
.lb-suites {cursor:help;border-bottom:1px dotted #888}
.lb-sans [role="gridcell"], .lb-sans [role="gridcell"] *, .lb-sans [role="columnheader"] *
  {font-family:var(--font) !important;font-size:13px}
.lb-sans [role="columnheader"] .header {font-family:ui-sans-serif,system-ui,sans-serif !important;font-weight:600;
  white-space:normal !important;overflow:visible !important;line-height:1.2;text-align:left}
.lb-sans [role="gridcell"] .lb-badge {font-family:ui-sans-serif,system-ui,sans-serif !important;font-size:12px;
  font-weight:600}
#lb-table .cell-menu-button {display:none !important}
#lb-table .cell-wrap {padding-left:6px !important;padding-right:6px !important}
#lb-table [role="gridcell"][data-col="0"] span {white-space:normal !important;overflow-wrap:anywhere}
#lb-table [role="columnheader"] {cursor:pointer}
#lb-table a.lb-model-link {color:inherit;text-decoration:underline;text-decoration-color:#9aa7c7}
#lb-paging {align-items:center;gap:6px}
#lb-paging button {min-height:32px;padding:4px 10px}
#lb-page-number input {height:32px;padding:2px 8px}
"""


def intro() -> str:
    """The board's first paragraph: the papers it holds by their short names, from the registry."""
    labels = [paper.label or paper.key for paper in PAPERS.values()]
    papers = ", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) > 1 else "".join(labels)
    return (f"Social-bias audits of text-to-image models with the probes and scores of {papers}. Each cell is a "
            "value and its bootstrap confidence interval. Rows marked **demo** come from built-in tiny random-weight "
            "models: their scores are meaningless. Click a column's header to order every model by it, a model's "
            "name for its page, a row for its details; the About tab explains every score.")


TABS: list[Tab] = [
    Tab("board", "Leaderboard", leaderboard_tab),
    Tab("forest", FOREST_TITLE, forest_tab),
    Tab("compare", "Compare models", compare_tab),
    Tab("detail", "Model details", detail_tab),
    Tab("images", "Images", images_tab),
    Tab("about", ABOUT_TITLE, about_tab),
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
    with gr.Blocks(title=TITLE, analytics_enabled=False) as demo:
        gr.Markdown(f"# {TITLE}\n\n{intro()}")
        with gr.Row(equal_height=True):
            source_md = gr.Markdown(_source_line(st.board), elem_id="lb-source")
            reload_btn = gr.Button("Reload results", size="sm", elem_id="lb-reload", scale=0, min_width=140)
        board_warn = wording.warnings_markdown(st.board)
        warnings = gr.Markdown(board_warn, visible=bool(board_warn), elem_id="lb-warnings")
        with gr.Tabs(selected=tabs[0].id if tabs else None) as ctx.tabs:
            for tab in tabs:
                with gr.Tab(tab.title, id=tab.id):
                    tab.build(ctx)
            if requests is not None:
                submit_tab.add_submit_tab(requests, **submit_tab.options_from_env())
        for wire in ctx.wiring:
            wire()

        _wire_reload(ctx, reload_btn, warnings, source_md)
        for fn, ins, outs in ctx.loaders:  # (no progress shown: most loads change nothing)
            demo.load(fn, inputs=ins, outputs=outs, show_progress="hidden")
    if st.source.results_dir is not None:  # links to the folder's files are served from it (launch)
        demo.lb_allowed_paths = [str(Path(st.source.results_dir).resolve())]
    return demo


def _wire_reload(ctx: AppContext, reload_btn: gr.Button, warnings: gr.Markdown, source_md: gr.Markdown) -> None:
    """"Reload results": the source is asked whether anything changed (a listing of the folder, or
    one request for the Hub table); if not, nothing is read again and no component is sent (the
    line under the title says so); if so, the board is read again and every tab refreshed."""
    st = ctx.state
    all_inputs = [c for _, ins, _ in ctx.reloaders for c in ins]
    all_outputs = [c for _, _, outs in ctx.reloaders for c in outs]
    reloads = itertools.count(1)

    def on_reload(*values):
        change = st.reload()
        line = _source_line(st.board) + f" Reload {next(reloads)} at {utc_iso()}: {change.text()}."
        if change.nothing:
            return [gr.skip(), line, *[gr.skip()] * len(all_outputs)]
        warn = wording.warnings_markdown(st.board)
        out: list[Any] = [gr.Markdown(warn, visible=bool(warn)), line]
        pos = 0
        for fn, ins, outs in ctx.reloaders:
            result = fn(*values[pos:pos + len(ins)])
            pos += len(ins)
            out += list(result) if isinstance(result, tuple) else [result]
        return out

    reload_btn.click(on_reload, inputs=all_inputs, outputs=[warnings, source_md, *all_outputs], api_name="reload",
                     concurrency_id="lb-table", concurrency_limit=1)


def _source_line(board: board_index.Board) -> str:
    n, m = board.n_files, len(board.index)
    return f"Results from **{md_escape(board.source)}**: {n} valid file(s), {m} model(s)."


def head_script() -> str:
    """The page's script: each header's hover text (from the scores' metadata, :func:`about.header_help`),
    a header click sent to the server (the hidden button ``#lb-header-click``), and a click on a
    link in the table kept from selecting the row (the link opens, the details do not)."""
    help_json = json.dumps(about.header_help(), ensure_ascii=False).replace("</", "<\\/")
    return HEAD_JS.replace("__HELP__", help_json)


HEAD_JS = """<script>
(() => {
  const HELP = __HELP__;
  const tip = () => document.querySelectorAll('#lb-table [role=columnheader]').forEach((th) => {
    const help = HELP[th.getAttribute('title')];
    const span = th.querySelector('.header') || th;
    if (help && span.getAttribute('title') !== help) { span.setAttribute('title', help); }
  });
  let queued = false;
  new MutationObserver(() => {
    if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; tip(); }); }
  }).observe(document.documentElement, {childList: true, subtree: true});
  document.addEventListener('click', (e) => {
    const target = e.target;
    if (!target || !target.closest) return;
    if (target.closest('#lb-table a')) { e.stopPropagation(); return; }
    const th = target.closest('#lb-table [role=columnheader]');
    if (!th || target.closest('button')) return;
    window.__lbHeader = th.getAttribute('title');
    const button = document.querySelector('#lb-header-click');
    if (button) button.click();
  }, true);
})();
</script>"""


def launch(demo: gr.Blocks, *, host: str = "127.0.0.1", port: int | None = None, **kwargs: Any):
    """Start the server with the app's CSS and script; a local results folder is an allowed path
    (its files' links: results files, reports, the contents table; Gradio resolves links, so
    nothing outside the folder is served)."""
    allowed = [*getattr(demo, "lb_allowed_paths", []), *kwargs.pop("allowed_paths", [])]
    return demo.launch(server_name=host, server_port=port, css=CSS, head=head_script(),
                       allowed_paths=allowed or None, **kwargs)


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

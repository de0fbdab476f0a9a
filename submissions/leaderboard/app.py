"""The leaderboard as a Gradio app: a sortable, filterable table of models and a detail
view per model with its score tables and plots.

Runs three ways: ``t2ibench leaderboard --results DIR`` (or ``--repo ORG/NAME``),
``python app.py`` in a Hub Space (reads the env ``RESULTS_REPO`` or ``RESULTS_DIR``), and
imported: ``build_app(results_dir=...)`` returns the ``gr.Blocks``.

Escaping: results text reaches the page only as plain-text cells and labels (Gradio
renders those as text) or through ``data.md_escape`` in Markdown; the one Markdown table
column holds links built from validated Hub repo ids only.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import gradio as gr

from submissions.leaderboard import data

TITLE = "Text-to-image bias leaderboard"
CSS = """
#lb-warnings {background:#fff4e5;border:2px solid #e07b00;border-radius:6px;padding:.6em 1em}
#lb-detail-head blockquote {background:#fde8e8;border-left:6px solid #c62828;font-weight:bold}
"""
INTRO = ("Social-bias audits of text-to-image models with the probes and scores of GEP, DALL-Eval, the Paired "
         "Stereotype Test, MCAS and Diffusion Bias, each score with its bootstrap confidence interval. Rows marked "
         "**demo** come from built-in tiny random-weight models: their scores are meaningless. Click a row (or "
         "pick a model in *Model details*) for every score, per suite, and the report's plots.")


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
            return data.load_folder(self.results_dir)
        try:
            folder = data.download_results(self.repo, self.revision)
        except ValueError as exc:
            board = data.Board(source=self.repo)
            board.errors.append(str(exc))
            return board
        return data.load_folder(folder, source=f"{self.repo} (Hub dataset)")


# --------------------------------------------------------------------------- plots


_PLOTTERS = (  # detail table -> the report's plot function (benchmark.runner.report)
    ("gep_vectors", "plot_gep"), ("pst_micro_sts", "plot_micro_sts"), ("mcas_per_target", "plot_mcas"),
    ("dalleval_gender", "plot_dalleval_gender"), ("dalleval_skin_tone", "plot_dalleval_skin"),
)
_plot_cache: dict[tuple, list[tuple[str, str]]] = {}


def report_plots(sub: data.Submission) -> list[tuple[str, str]]:
    """(PNG path, caption) of the report's plots, for a results file inside a run folder.

    Regenerated from the run's detail tables with the report's own plot functions (into a
    cache folder: the run folder is not written); a run without detail tables shows the
    PNGs of its ``report/`` folder. A bare results file has neither (it does not embed
    per-item detail), so only the scores plot is shown for it.
    """
    if sub.run_dir is None:
        return []
    stamp = sub.path.stat().st_mtime_ns
    key = (str(sub.path), stamp)
    if key in _plot_cache:
        return _plot_cache[key]
    import pandas as pd

    from benchmark.runner import report

    out_dir = Path(tempfile.mkdtemp(prefix="t2ibench-leaderboard-plots-"))
    made: list[tuple[str, str]] = []
    details = sub.doc.get("details") or {}
    for table, fn in _PLOTTERS:
        rel = details.get(table)
        path = (sub.run_dir / rel).resolve() if isinstance(rel, str) else None
        if path is None or not path.is_file() or sub.run_dir.resolve() not in path.parents:
            continue
        try:
            made += [(str(out_dir / f), c) for f, c in getattr(report, fn)(pd.read_parquet(path), out_dir)]
        except Exception as exc:  # a detail table the plot cannot use: say so, keep the page
            made.append(("", f"{table}: plot failed ({type(exc).__name__}: {exc})"))
    if not made and (sub.run_dir / report.REPORT_DIR).is_dir():
        made = [(str(p), p.stem) for p in sorted((sub.run_dir / report.REPORT_DIR).glob("*.png"))]
    _plot_cache[key] = made
    return made


def scores_figure(sub: data.Submission):
    """Every defined entry of each headline score with its CI (one panel per score), or None."""
    names = data.headline_names([sub])
    panels = []
    for n in names:
        entries = [e for e in sub.scores if e.get("name") == n and e.get("defined")]
        if entries:
            panels.append((n, entries))
    if not panels:
        return None
    from benchmark.runner.report import plt_agg

    plt = plt_agg()
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.5, 1.2 + 0.9 * sum(len(e) for _, e in panels)),
                             squeeze=False)
    for ax, (n, entries) in zip(axes[:, 0], panels):
        labels, values, lows, highs = [], [], [], []
        for e in entries:
            labels.append(" / ".join(str(x)[:40] for x in (e.get("suite"), e.get("estimator"), e.get("subset")) if x))
            v = float(e["value"])
            ci = e.get("ci") or {}
            values.append(v)
            lows.append(max(v - float(ci.get("low", v)), 0.0))
            highs.append(max(float(ci.get("high", v)) - v, 0.0))
        y = list(range(len(entries)))
        ax.errorbar(values, y, xerr=[lows, highs], fmt="o", color="#1f5fa8", capsize=3)
        ax.set_yticks(y)
        ax.set_yticklabels(labels, fontsize=8)
        ax.set_ylim(-0.7, len(entries) - 0.3)
        meta = data.SCORE_METADATA[n]
        if meta.ideal is not None:
            ax.axvline(meta.ideal, color="#999", lw=0.8, ls="--")
        ax.set_title(f"{data.value_column(n)} ({data.direction_text(n)})", fontsize=10)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- the app


def build_app(results_dir: str | Path | None = None, repo: str | None = None, *,
              revision: str | None = None) -> gr.Blocks:
    """The leaderboard for the results in ``results_dir`` or the Hub dataset ``repo``."""
    source = Source(results_dir, repo, revision)
    state: dict[str, Any] = {}

    def reload() -> None:
        board = source.load()
        state["board"] = board
        state["rows"] = board.rows()
        state["by_key"] = {r.key: r for r in state["rows"]}

    reload()

    def table_update(search: str, suites: list[str] | None, families: list[str] | None, show_demo: bool,
                     sort_by: str | None):
        frame, datatype = data.leaderboard_table(state["rows"], suites=suites or (), families=families or (),
                                                 search=search or "", show_demo=bool(show_demo), sort_by=sort_by)
        names = data.headline_names([r.latest for r in state["rows"]], suites or ())
        return (gr.Dataframe(value=frame, datatype=datatype, column_widths=data.column_widths(datatype)),
                data.legend_markdown(names))

    def sort_choices(suites: list[str] | None = None) -> list[tuple[str, str]]:
        return [(data.value_column(n), n) for n in data.headline_names([r.latest for r in state["rows"]],
                                                                         suites or ())]

    def model_choices() -> list[tuple[str, str]]:
        return [(data.row_label(r), r.key) for r in state["rows"]]

    with gr.Blocks(title=TITLE) as demo:
        gr.Markdown(f"# {TITLE}\n\n{INTRO}")
        source_md = gr.Markdown(_source_line(state["board"]), elem_id="lb-source")
        board_warn = data.warnings_markdown(state["board"])
        warnings = gr.Markdown(board_warn, visible=bool(board_warn), elem_id="lb-warnings")
        with gr.Tabs(selected="board") as tabs:
            with gr.Tab("Leaderboard", id="board"):
                with gr.Row():
                    search = gr.Textbox(label="Search model", placeholder="part of a model name",
                                        elem_id="lb-search", scale=2)
                    sort_by = gr.Dropdown(choices=sort_choices(), value=(sort_choices() or [(None, None)])[0][1],
                                          label="Rank by (best first)", elem_id="lb-sort", scale=2)
                    show_demo = gr.Checkbox(value=True, label="Show demo rows (built-in tiny models)",
                                            elem_id="lb-show-demo", scale=1)
                with gr.Row():
                    suites = gr.Dropdown(choices=data.all_suites(state["rows"]), multiselect=True, value=[],
                                         label="Suites (models that scored all of them)", elem_id="lb-suites")
                    families = gr.Dropdown(choices=data.all_families(state["rows"]), multiselect=True, value=[],
                                           label="Model family", elem_id="lb-families")
                frame, datatype = data.leaderboard_table(state["rows"])
                table = gr.Dataframe(value=frame, datatype=datatype, interactive=False, wrap=True,
                                     column_widths=data.column_widths(datatype), elem_id="lb-table",
                                     label="Models: sort by a column with its header's ⋮ menu; click a row for "
                                     "its details", max_height=800)
                legend = gr.Markdown(data.legend_markdown(data.headline_names([r.latest for r in state["rows"]])),
                                     elem_id="lb-legend")
                reload_btn = gr.Button("Reload results", size="sm", elem_id="lb-reload")
            with gr.Tab("Model details", id="detail"):
                picked = gr.Dropdown(choices=model_choices(), value=None, label="Model", elem_id="lb-model")

                @gr.render(inputs=[picked])
                def _detail(key: str | None) -> None:
                    row = state["by_key"].get(key) if key else None
                    if row is None:
                        gr.Markdown("Choose a model above, or click its row in the leaderboard.")
                        return
                    _render_detail(row)

        filters = [search, suites, families, show_demo, sort_by]
        for comp in filters:
            comp.change(table_update, inputs=filters, outputs=[table, legend])
        suites.change(lambda s, cur: gr.Dropdown(choices=sort_choices(s), value=_keep(cur, sort_choices(s))),
                      inputs=[suites, sort_by], outputs=[sort_by])

        def on_select(evt: gr.SelectData):
            row = evt.row_value or []
            key = f"{row[0]}@{row[1]}" if len(row) > 1 else None
            if key not in state["by_key"]:
                return gr.Dropdown(), gr.Tabs()
            return gr.Dropdown(value=key), gr.Tabs(selected="detail")

        table.select(on_select, inputs=None, outputs=[picked, tabs])

        def on_reload(search_v, suites_v, families_v, demo_v, sort_v):
            reload()
            warn = data.warnings_markdown(state["board"])
            sort_v = _keep(sort_v, sort_choices(suites_v))
            tbl, leg = table_update(search_v, suites_v, families_v, demo_v, sort_v)
            return (gr.Markdown(warn, visible=bool(warn)), _source_line(state["board"]), tbl, leg,
                    gr.Dropdown(choices=model_choices()), gr.Dropdown(choices=data.all_suites(state["rows"])),
                    gr.Dropdown(choices=data.all_families(state["rows"])),
                    gr.Dropdown(choices=sort_choices(suites_v), value=sort_v))

        reload_btn.click(on_reload, inputs=filters,
                         outputs=[warnings, source_md, table, legend, picked, suites, families, sort_by])
    return demo


def _keep(current: str | None, choices: list[tuple[str, str]]) -> str | None:
    values = [v for _, v in choices]
    return current if current in values else (values[0] if values else None)


def _source_line(board: data.Board) -> str:
    n, m = len(board.submissions), len(board.rows())
    return f"Results from **{data.md_escape(board.source)}**: {n} valid file(s), {m} model(s)."


def _render_detail(row: data.ModelRow) -> None:
    """The detail view's components (inside ``gr.render``)."""
    sub = row.latest
    gr.Markdown(data.detail_markdown(row), elem_id="lb-detail-head")
    gr.Markdown("#### Suites")
    gr.Dataframe(data.suites_status_table(sub), interactive=False, wrap=True, elem_id="lb-detail-suites")
    for i, (suite, frame) in enumerate(data.suite_tables(sub).items()):
        gr.Markdown(f"#### Scores: {data.md_escape(suite)}")
        gr.Dataframe(frame, interactive=False, wrap=True, column_widths=data.DETAIL_WIDTHS,
                     elem_id=f"lb-detail-scores-{i}")
    fig = scores_figure(sub)
    if fig is not None:
        gr.Plot(fig, label="Headline scores with their confidence intervals (every estimator)")
    plots = report_plots(sub)
    if plots:
        gr.Markdown("#### Report plots")
    for path, caption in plots:
        if path:
            # Passed as pixels, not a path: the run folder need not be an allowed path of the server.
            from PIL import Image

            with Image.open(path) as img:
                gr.Image(img.convert("RGB"), label=caption, type="pil", interactive=False)
        else:
            gr.Markdown(data.md_escape(caption))
    if sub.run_dir is None:
        gr.Markdown("*No report plots: this results file is not inside a run folder, and results files do not "
                    "embed the per-item detail tables the plots are drawn from.*")


def launch(demo: gr.Blocks, *, host: str = "127.0.0.1", port: int | None = None, **kwargs: Any):
    """Start the server with the app's CSS."""
    return demo.launch(server_name=host, server_port=port, css=CSS, **kwargs)


def app_from_env(env: Callable[[str], str | None] = os.environ.get) -> gr.Blocks:
    """The app a Space runs: Hub dataset ``RESULTS_REPO`` (optional ``RESULTS_REVISION``), else the
    folder ``RESULTS_DIR`` (default ``results``, beside app.py in the Space repo)."""
    repo = env("RESULTS_REPO")
    if repo:
        return build_app(repo=repo, revision=env("RESULTS_REVISION") or None)
    return build_app(results_dir=env("RESULTS_DIR") or "results")


def main() -> None:
    """``python app.py``: Gradio reads GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (a Space sets them)."""
    launch(app_from_env(), host=os.environ.get("GRADIO_SERVER_NAME") or "0.0.0.0",
           port=int(os.environ.get("GRADIO_SERVER_PORT") or 7860))


if __name__ == "__main__":
    main()

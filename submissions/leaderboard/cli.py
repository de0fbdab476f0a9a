"""``t2ibench leaderboard``: start the leaderboard app locally on a results folder or a Hub
results dataset (with a requests queue: the "Submit a model" tab too); ``t2ibench leaderboard
build-contents DIR`` rebuilds the folder's contents table. Options only: the bodies are in
:mod:`submissions.leaderboard.commands`, imported when a command runs."""

from __future__ import annotations

from benchmark.cli_types import existing_folder, port

#: The module holding the command bodies, imported only when a command runs (like an entry point).
BODIES = "submissions.leaderboard.commands"


def register(subparsers) -> None:
    """Add ``leaderboard`` to the ``t2ibench`` subparsers."""
    p = subparsers.add_parser("leaderboard", help="start the leaderboard app (Gradio) on results files",
                              description="Start the leaderboard app on a results folder or a Hub results "
                              "dataset; with a requests queue (--requests-folder / --requests) it shows the "
                              "'Submit a model' tab too. `t2ibench leaderboard build-contents DIR` rebuilds the "
                              "contents table the app reads in one read.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--results", metavar="DIR", type=existing_folder, help="folder read recursively: results "
                     "files (*.json) and run folders (their results.json), through DIR/contents when present")
    src.add_argument("--repo", metavar="ORG/NAME", help="Hub results dataset (its contents table, else its JSON "
                     "files, downloaded)")
    p.add_argument("--revision", help="revision of the Hub results dataset")
    queue = p.add_mutually_exclusive_group()
    queue.add_argument("--requests-folder", metavar="DIR", type=existing_folder,
                       help="a local requests queue: adds the 'Submit a model' tab, and its FINISHED requests "
                       "decide which rows were evaluated by the maintainers' workers (without a queue every row "
                       "is self-reported)")
    queue.add_argument("--requests", metavar="ORG/NAME", help="a Hub requests dataset: adds the 'Submit a "
                       "model' tab and decides which rows were evaluated, as --requests-folder does")
    p.add_argument("--port", type=port, help="port (default: Gradio's, 7860 or the next free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 to share)")
    p.set_defaults(func=f"{BODIES}:leaderboard")
    # the command is optional: without it the app starts, so the usage gives the two forms
    sub = p.add_subparsers(dest="leaderboard_command", metavar="build-contents DIR", prog=p.prog,
                           title="optional command", required=False)
    p.usage = (f"{p.prog} [-h] [--results DIR | --repo ORG/NAME] [--revision REVISION]\n"
               f"{' ' * len('usage: ' + p.prog)} [--requests-folder DIR | --requests ORG/NAME] [--port PORT] "
               f"[--host HOST]\n       {p.prog} build-contents [-h] DIR")
    build = sub.add_parser("build-contents", help="(re)build DIR/contents/contents.parquet from the results files",
                           description="Bring the contents table (DIR/contents/contents.parquet, one flat row "
                           "per results file, a typed column per score value and bound; its card in "
                           "DIR/contents/README.md) up to date with the results files under DIR: only new and "
                           "changed files (their sha256) are read and checked. The app reads it in one read; the "
                           "JSON files stay the source of truth.")
    build.add_argument("results_dir", metavar="DIR", type=existing_folder, help="results folder")
    build.set_defaults(func=f"{BODIES}:build_contents_table")

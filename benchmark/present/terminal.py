"""What the command line prints: tables through ``rich``, wrapped to the terminal width (80
columns when the output is not a terminal, or ``COLUMNS``), the one error line
``t2ibench: error: ...``, and the switch that silences third-party progress bars (``--quiet``).

Score cells are written by :mod:`benchmark.present.text` as everywhere else ("0.12 [0.08, 0.16]");
long notes (why a score is undefined, interval notes, long subset names) are numbered below
a table instead of widening it. Cells are ``rich.text.Text``, so brackets in results text
are never read as rich markup.
"""

from __future__ import annotations

import os
import warnings
import sys
from typing import Any, Iterable, Mapping, TextIO

from benchmark.cli_types import ERROR_PREFIX, error_line, print_error  # noqa: F401 (the one error line, re-exported)
from benchmark.contract.image_checks import degenerate_text
from benchmark.scores.metadata import column_group
from benchmark.present.text import (better_text, direction_mark, excluded_counts, excluded_text, paper_label,
                                    range_text, short_estimator, short_value_text)

LONG_SUBSET = 24  # characters: longer subsets go to a note


def quiet_library_warnings() -> None:
    """A library's deprecation notices (``torch.jit.script`` is deprecated, ...) speak to the
    authors of the code that calls it, not to the user of a command: the command line hides
    them; the project's own warnings still show."""
    for category in (FutureWarning, DeprecationWarning):
        warnings.filterwarnings("ignore", category=category, module=r"^(?!benchmark|submissions)")


def quiet_third_party() -> None:
    """Silence the progress bars of diffusers, transformers, huggingface_hub and datasets (what
    ``--quiet`` asks for besides our own bars). The environment variables reach libraries not
    imported yet and subprocesses; the calls reach those already imported, and none is imported
    here (importing diffusers alone took 5 s: an image-API audit refused its endpoint after it).
    The loading bars of diffusers and transformers are off in every run
    (:func:`benchmark.present.progress.library_bars_off`, called where a model loads)."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
    for module, call in (("huggingface_hub.utils", "disable_progress_bars"), ("datasets", "disable_progress_bars"),
                         ("transformers.utils.logging", "disable_progress_bar"),
                         ("diffusers.utils.logging", "disable_progress_bar")):
        mod = sys.modules.get(module)
        if mod is not None:
            getattr(mod, call)()


def console(file: TextIO | None = None):
    """A rich console on ``file`` (default: the current stdout), no colours when it is not a terminal."""
    from rich.console import Console

    return Console(file=file or sys.stdout, highlight=False, emoji=False, soft_wrap=False)


def emit(renderable: Any, file: TextIO | None = None) -> None:
    """Print a rich table (or text) at the terminal's width, without the trailing spaces rich pads with."""
    out = file or sys.stdout
    con = console(out)
    with con.capture() as cap:
        con.print(renderable)
    out.write("".join(line.rstrip() + "\n" for line in cap.get().splitlines()))
    out.flush()


class _Notes:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def ref(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"


def results_table(scores: Iterable[Mapping], *, ci_label: str = "95% CI"):
    """(rich Table, notes) of score entries: score (subset), estimator, "value [low, high]" (never
    wrapped), n; a section per column group (the score names say the suite: "STS occupation
    (paired)", "PaintSkills count")."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    notes = _Notes()
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("score (subset)", overflow="fold")
    table.add_column("estimator", overflow="fold", max_width=20)
    table.add_column(f"value [{ci_label}]", no_wrap=True)  # a value and its interval stay on one line
    table.add_column("n", justify="right", no_wrap=True)
    group = None
    for e in scores:
        this_group = _column_group(e)
        if group is not None and this_group != group:
            table.add_section()
        group = this_group
        name = str(e.get("display_name") or e.get("name"))
        marks = []
        subset = str(e.get("subset") or "")
        if len(subset) > LONG_SUBSET:
            marks.append(notes.ref(f"{name} ({e.get('suite')}): {subset}"))
            subset = subset[: LONG_SUBSET - 1] + "…"
        if not e.get("defined") and e.get("reason"):
            marks.append(notes.ref(f"undefined: {e['reason']}"))
        if e.get("ci_note"):
            marks.append(notes.ref(f"interval: {e['ci_note']}"))
        score = f"{name} ({subset})" if subset else name
        score = f"{score} {direction_mark(e)}".strip()
        value = short_value_text(e) + (" " + "".join(marks) if marks else "")
        table.add_row(Text(score),
                      Text(short_estimator(e.get("estimator") or e.get("annotator"), 20)), Text(value),
                      Text(str(e.get("n", ""))))
    return table, notes.texts


def _column_group(e: Mapping) -> str:
    return column_group(str(e.get("name", "")), str(e.get("paper", "")))


def print_results_summary(results: Mapping, file: TextIO | None = None) -> None:
    """The run's results: the warning line first (built-in models), the scores table, its notes,
    then the images left out of every score and why (refused by the image API, not supplied,
    flagged by the safety checker), and the degenerate images that were scored."""
    from rich.text import Text

    out = file or sys.stdout
    if results.get("warning"):
        print(f"WARNING: {results['warning']}", file=out, flush=True)
    left_out = excluded_text(excluded_counts(results.get("run")))
    scores = list(results.get("scores", []))
    if not scores:
        print("no score could be computed (see the report's suites section)", file=out)
    else:
        level = float((results.get("scoring") or {}).get("confidence_level", 0.95))
        table, notes = results_table(scores, ci_label=f"{100 * level:g}% CI")
        emit(table, out)
        for i, note in enumerate(notes, 1):
            emit(Text(f"[{i}] {note}"), out)
    if left_out:  # refused by an image API, not supplied, or flagged by a safety checker: never silent
        emit(Text(f"left out of every score: {left_out}"), out)
    degenerate = degenerate_text((results.get("run") or {}).get("degenerate_images"))
    if degenerate:  # blank, constant or non-finite images that were scored: never silent either
        emit(Text(f"WARNING: {degenerate}"), out)


def print_score_metadata(metadata: Mapping, file: TextIO | None = None) -> None:
    """``t2ibench scores``: every score with its range, better direction and paper."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("score", no_wrap=True)
    table.add_column("range", no_wrap=True)
    table.add_column("better", no_wrap=True)
    table.add_column("paper", overflow="fold")
    for m in metadata.values():
        table.add_row(Text(m.name), Text(range_text(m)), Text(better_text(m)), Text(paper_label(m.paper)))
    emit(table, file)


__all__ = ["ERROR_PREFIX", "error_line", "print_error", "quiet_third_party", "console", "emit",
           "results_table", "print_results_summary", "print_score_metadata"]

"""Stage timings and progress bars: the runner stages and a task folder's own commands share them.

``StageTimer`` accumulates wall-clock seconds per named stage (a stage can be entered
many times, e.g. once per batch) and formats a one-line summary for the end of a run.
:func:`library_bars_off` turns off the bars libraries draw while they load a model: the
stages draw their own.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from importlib import import_module
from typing import Iterator

from tqdm.auto import tqdm


class StageTimer:
    """``with timer.stage("generate"): ...`` adds the block's wall time to ``timer.seconds["generate"]``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._start = time.perf_counter()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + (time.perf_counter() - t0)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + float(seconds)

    @property
    def total(self) -> float:
        """Seconds since the timer was created."""
        return time.perf_counter() - self._start

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in self.seconds.items()}

    def format(self) -> str:
        parts = [f"{name} {secs:.1f} s" for name, secs in self.seconds.items()]
        return ", ".join(parts) if parts else "nothing timed"


def progress_bar(total: int, desc: str, *, enabled: bool = True, unit: str = "img", position: int | None = None):
    """A tqdm bar (rate shown as ``unit/s``) on stderr; a no-op bar when disabled."""
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr, dynamic_ncols=True,
                position=position, leave=True, smoothing=0.1)


def grow(bar, count: int, step: str | None = None) -> None:
    """Add ``count`` to the total of a bar whose work is known only as it goes, and name the step it is
    on (its postfix) when ``step`` is given; nothing when ``bar`` is None."""
    if bar is not None:
        bar.total = (bar.total or 0) + count
        name_step(bar, step)


def name_step(bar, step: str | None) -> None:
    """Show ``step`` as the bar's postfix (redrawn now); nothing when ``bar`` is None."""
    if bar is not None:
        if step:
            bar.set_postfix_str(step, refresh=False)
        bar.refresh()


def say(line: str) -> None:
    """One line on stderr that does not break a progress bar drawn there (tqdm's ``write``)."""
    tqdm.write(line, file=sys.stderr)


#: the library whose loading bars each name turns off, and the call that does it
_LOADING_BARS = {"diffusers": ("diffusers.utils.logging", "disable_progress_bar"),
                 "transformers": ("transformers.utils.logging", "disable_progress_bar")}


def library_bars_off(*libraries: str) -> None:
    """Turn off the progress bars ``libraries`` ("diffusers", "transformers") draw while loading a
    model ("Loading pipeline components...", "Loading weights"): what loads one calls it just
    before, so ``make demo`` shows the stages' own bars only. Downloads keep the Hugging Face Hub's
    bars (transformers' switch turns them off too; they are turned back on unless ``--quiet`` or
    ``HF_HUB_DISABLE_PROGRESS_BARS`` turned them off)."""
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars

    hub_was_off = are_progress_bars_disabled()
    for name in libraries:
        module, call = _LOADING_BARS[name]
        try:
            getattr(import_module(module), call)()
        except ImportError:  # not installed: it draws nothing
            continue
    if not hub_was_off:
        enable_progress_bars()

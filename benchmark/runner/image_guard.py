"""The generation stage's guard on degenerate images (:mod:`benchmark.contract.image_checks`):
never silent, stopped before scoring.

* while images are made: the first batch with degenerate images is said in one line (with
  progress on; with ``--quiet`` the end's line alone speaks), and a
  single-process run whose first :data:`EARLY_MIN_IMAGES` or more images are degenerate more
  often than not (:data:`EARLY_SHARE`) stops there instead of generating the rest (a NaN LoRA on
  a full audit would spend hours of GPU on black images); under ``accelerate launch`` the ranks
  go on to the end (one rank stopping alone would leave the others waiting for it);
* when generation ends: the folder's count, whatever made its images and however many resumes,
  is the gate (:func:`benchmark.contract.image_checks.require_usable`): past
  :data:`~benchmark.contract.image_checks.DEGENERATE_SHARE` the stage stops with one line, before
  anything is annotated or scored; below it, or with ``--allow-degenerate``, one line says how
  many were found and that the results count them.
"""

from __future__ import annotations

from pathlib import Path

from benchmark.contract.image_checks import (
    DEGENERATE_SHARE, DegenerateCount, DegenerateImages, degenerate_text, require_usable, results_block,
)
from benchmark.present.progress import say

__all__ = ["EARLY_MIN_IMAGES", "EARLY_SHARE", "GenerationGuard"]

#: images a run makes before the early stop can judge it, and the share past which it stops: a
#: model that makes degenerate images more often than not is broken, and the end's gate
#: (DEGENERATE_SHARE, far lower) would stop it anyway unless almost every later image were good
EARLY_MIN_IMAGES = 16
EARLY_SHARE = 0.5


class GenerationGuard:
    """One generation call's guard: :meth:`after_batch` as batches are written, :meth:`at_end` on
    the main process once every image is."""

    def __init__(self, run_dir: Path, *, allow: bool, early_stop: bool, progress: bool = True):
        self.run_dir, self.allow, self.early_stop = run_dir, allow, early_stop
        self.said = not progress  # under --quiet only the end's line (or the stop's) speaks

    def after_batch(self, tally: DegenerateCount) -> None:
        """After a batch is on disk (``tally``: what this call wrote so far)."""
        if tally.n_degenerate and not self.said:
            self.said = True
            say(f"t2ibench: {tally.n_degenerate:,} of the first {tally.n_checked:,} images written to {self.run_dir} "
                f"are degenerate ({tally.kinds_text()}; e.g. {tally.examples[0]}); counted: an audit with more than "
                f"{DEGENERATE_SHARE:.0%} of them stops before scoring")
        if (self.early_stop and not self.allow and tally.n_checked >= EARLY_MIN_IMAGES
                and tally.share > EARLY_SHARE):
            raise DegenerateImages(tally.line(f"images written to {self.run_dir} (generation stopped early: more than "
                                              f"{EARLY_SHARE:.0%} of the first {EARLY_MIN_IMAGES} or more)"))

    def at_end(self) -> DegenerateCount:
        """The folder's gate, and one line when it holds degenerate images it lets through."""
        count = require_usable(self.run_dir, allow=self.allow)
        text = degenerate_text(results_block(count, self.allow))
        if text:
            say(f"t2ibench: {self.run_dir}: {text} (results.json run.degenerate_images counts them)")
        return count

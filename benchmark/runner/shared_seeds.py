"""What the two images of one probe share in two compared audits (both made from the probe's
seed), estimated from the comparison's own labels, so that the simulated MDD draws its pairs of
audits as the compared ones were made (:func:`benchmark.runner.planning.detectable_changes`).

From the label rows both runs wrote for one probe, pooled over the slots of a group
(:func:`_group`):

* categorical labels: a seed's own probabilities are a Dirichlet of concentration ``c`` around its
  prompt's, so two labels of one image agree with probability (c x A + 1) / (c + 1), where A is the
  agreement of two images of the prompt; ``c`` is solved from the two agreements seen;
* continuous labels (on the fit's scale): a value is its prompt's mean plus a seed shift (shared)
  plus the image's own noise: the noise's variance is half that of A - B, the shift's that of
  the pair means within a prompt less half the noise's.

Why it matters: a change of B moves the score's spread differently when A and B share their
seeds (GEP's spread grows with the change where the shift no longer cancels; docs/compare.md, "The
tested quantity's spread at the change").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import special

from benchmark.runner.simulate import LOGIT_EDGE, CellValues, Fit, ImageEffects, Layout, image_effects, slot_rows
from benchmark.runner.probe_choice import prompt_key

__all__ = ["SharedSeeds"]

#: the group of every categorical slot (:func:`_group`)
CATEGORICAL = ("categorical",)
#: the concentrations kept to (a near-identical pair of images, an image that is only its prompt)
CONCENTRATION = (1e-3, 1e4)


@dataclass
class SharedSeeds:
    """Per slot of a layout: ``concentration`` of a seed's probabilities around its prompt's (0:
    nothing shared, or continuous), ``shift_sd`` of a seed's shift and ``noise_sd`` of an image's
    own noise (NaN: the fit's spread within a prompt, nothing shared)."""

    concentration: np.ndarray
    shift_sd: np.ndarray
    noise_sd: np.ndarray

    @classmethod
    def of(cls, fit: Fit, lay: Layout, a: Mapping[str, pd.DataFrame | None],
           b: Mapping[str, pd.DataFrame | None]) -> "SharedSeeds":
        """Estimated from runs ``a`` and ``b``'s label files (their rows of one probe paired)."""
        paired: dict[tuple, dict[str, list]] = {}
        seen_a = {(loose, pid): value for loose, pid, value in slot_rows(lay.probes, a)}
        for loose, pid, value in slot_rows(lay.probes, b):
            if (loose, pid) in seen_a:
                paired.setdefault(loose, {}).setdefault(prompt_key(pid), []).append((seen_a[(loose, pid)], value))
        stats: dict[tuple, list] = {}  # per group of slots: their prompts' paired codes
        for slot in lay.slots:
            cells = paired.get(slot.loose)
            if not cells:
                continue
            try:
                logit = fit.hyper(slot)[0].get("logit", False)
            except ValueError:
                continue
            for v in cells.values():
                codes = (fit.codes(slot, [x for x, _ in v]), fit.codes(slot, [y for _, y in v]))
                stats.setdefault(_group(slot), []).append(codes + (logit,))
        # one estimate per group, given to each of its slots
        estimate = {g: _concentration(codes) if g == CATEGORICAL else _continuous(codes) for g, codes in stats.items()}
        n = len(lay.slots)
        out = cls(np.zeros(n), np.zeros(n), np.full(n, np.nan))
        for s, slot in enumerate(lay.slots):
            found = estimate.get(_group(slot))
            if found is None:
                continue
            if slot.continuous:
                out.shift_sd[s], out.noise_sd[s] = found
            else:
                out.concentration[s] = found
        return out

    def effects(self, lay: Layout, values: CellValues, rng: np.random.Generator) -> tuple[CellValues, ImageEffects]:
        """The cells' values with each continuous slot's spread within a prompt set to its own noise
        where a shift is shared, and the images' shared effects, drawn."""
        slot_of = lay.cell_slots()
        noise = self.noise_sd[slot_of]
        values = CellValues(values.probs, values.mean, np.where(np.isfinite(noise), noise, values.sd), values.logit)
        return values, image_effects(lay, values, rng, self.concentration, self.shift_sd)


def _group(slot) -> tuple:
    """The slots estimated together: every categorical one (how much two labels of one image agree
    beyond two of its prompt is a few points of agreement, which one slot's, or one label file's,
    few hundred images do not say; a seed fixes all that an image shows), and the continuous ones
    of one label file, suite and estimator (one scale)."""
    return CATEGORICAL if not slot.continuous else (slot.kind, slot.suite, dict(slot.key).get("estimator"))


def _continuous(codes: Sequence[tuple[np.ndarray, np.ndarray, bool]]) -> tuple[float, float]:
    """(shift sd, noise sd) of a group of continuous slots from their prompts' paired values (A's, B's,
    on the logit scale or not)."""
    diffs, pair_vars = [], []
    for x, y, logit in codes:
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        if logit:
            x, y = (special.logit(np.clip(v, LOGIT_EDGE, 1 - LOGIT_EDGE)) for v in (x, y))
        diffs.append(x - y)
        if len(x) >= 2:
            pair_vars.append(np.var((x + y) / 2, ddof=1))
    d = np.concatenate(diffs) if diffs else np.zeros(0)
    if len(d) < 2:
        return 0.0, math.nan
    noise = float(np.var(d, ddof=1)) / 2
    shift = max(float(np.mean(pair_vars)) - noise / 2, 0.0) if pair_vars else 0.0
    return math.sqrt(shift), math.sqrt(noise)


def _concentration(codes: Sequence[tuple[np.ndarray, np.ndarray, bool]]) -> float:
    """The Dirichlet concentration of a group of categorical slots' seeds from their prompts' paired
    codes (0: the two labels of an image agree no more than two images of its prompt: nothing
    shared)."""
    same, images, diff_agree, diff_pairs = 0, 0, 0.0, 0.0
    for x, y, _ in codes:
        ok = (x >= 0) & (y >= 0)
        x, y = x[ok].astype(np.int64), y[ok].astype(np.int64)
        n = len(x)
        if not n:
            continue
        agree = int(np.sum(x == y))
        same, images = same + agree, images + n
        counts = np.bincount(np.r_[x, y]).astype(float)
        diff_agree += float((counts * (counts - 1)).sum()) - 2 * agree  # ordered pairs of two images that agree
        diff_pairs += 2 * n * (2 * n - 1) - 2 * n
    if not images or diff_pairs <= 0:
        return 0.0
    a_same, a_diff = same / images, diff_agree / diff_pairs
    if a_same <= a_diff or a_diff >= 1:
        return 0.0
    return float(np.clip((1 - a_diff) / (a_same - a_diff) - 1, *CONCENTRATION))

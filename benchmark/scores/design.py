"""How many images an audit needs: prompts a ``--limit`` leaves with a single image, and the
images per prompt needed to detect a given change.

The scores resample images within the cells of their design (a profession, an identity, a
prompt: :mod:`benchmark.scores.bootstrap`); a cell holding one image cannot vary, so no resample
sees its noise (``t2ibench compare`` shows no interval there) and a MAD over one image per cell
is the same in any run (not tested: :mod:`benchmark.compare.paired`). A suite whose prompts each
have several images by design (several seeds per prompt) loses that when a ``--limit`` keeps one
image of each prompt: :func:`single_image_prompts` finds those suites and the smallest limit that
gives each of their prompts two images again. A suite with one image per prompt by design
resamples over prompts, not within them, and is not flagged.

Where the cells are large, the standard error of a score averaged over prompts falls as one over
the square root of the images per prompt, so the images per prompt needed to detect a change
``target`` with the power a minimum detectable difference (MDD) is defined with are
``now x (MDD / target)^2`` (:func:`images_needed`), and a pilot audit's interval scales to the
planned size (:func:`planned_mdd`). Plug-in scores over a few images per cell (a MAD) do not
follow that law: :mod:`benchmark.runner.planning` simulates the planned design from the pilot's
labels instead, and these scalings serve the scores it does not simulate.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import pandas as pd

__all__ = ["ALPHA", "POWER", "images_needed", "mdd_factor", "mdd_spread", "no_change_difference", "planned_mdd",
           "single_image_prompts", "single_image_summary", "single_image_warnings"]

#: the level and power a minimum detectable difference is defined with (benchmark.compare too)
ALPHA = 0.05
POWER = 0.8

Limiter = Callable[[pd.DataFrame, int], pd.DataFrame]
PromptKey = Callable[[str], str]


def _per_prompt(frame: pd.DataFrame, prompt_key: PromptKey | None) -> pd.Series:
    """(suite, prompt) -> number of probes; a prompt is ``prompt_key(probe_id)`` (the samples of
    one prompt), else the prompt text."""
    prompt = frame["probe_id"].astype(str).map(prompt_key) if prompt_key else frame["prompt"]
    return frame.groupby([frame["suite"], prompt.rename("prompt")], sort=False).size()


def _two_each(full: pd.DataFrame, limiter: Limiter | None, prompt_key: PromptKey | None) -> int | None:
    """The smallest limit giving every prompt of ``full`` (one suite) that has two or more images
    two of them: every prompt's first image, then every such prompt's second (the order
    ``--limit`` keeps them in); checked with ``limiter`` when given (None if it disagrees)."""
    counts = _per_prompt(full, prompt_key)
    limit = int(len(counts) + (counts >= 2).sum())
    if limiter is not None:
        kept = _per_prompt(limiter(full, limit), prompt_key).reindex(counts.index, fill_value=0)
        if not (kept >= counts.clip(upper=2)).all():
            return None
    return limit


def single_image_prompts(full: pd.DataFrame, limited: pd.DataFrame, limiter: Limiter | None = None,
                         prompt_key: PromptKey | None = None) -> list[dict]:
    """Per suite of ``limited`` (the probes a ``--limit`` keeps of ``full``) whose kept prompts
    have one image where the full suite has several: ``{"suite", "single", "prompts",
    "full_per_prompt", "limit"}`` (prompts kept with one image, prompts kept, images per prompt
    in the full suite (median of its prompts with several), the smallest limit giving each two).
    ``limiter(frame, limit)`` and ``prompt_key(probe_id)``: the limit's own rule and its notion of
    a prompt, when given."""
    out = []
    full_counts, kept_counts = _per_prompt(full, prompt_key), _per_prompt(limited, prompt_key)
    for suite in dict.fromkeys(limited["suite"]):
        kept = kept_counts[suite]
        whole = full_counts[suite].reindex(kept.index)
        single = int(((kept == 1) & (whole >= 2)).sum())
        if not single:
            continue
        several = full_counts[suite][full_counts[suite] >= 2]
        out.append({"suite": suite, "single": single, "prompts": int(len(kept)),
                    "full_per_prompt": int(several.median()),
                    "limit": _two_each(full[full["suite"] == suite], limiter, prompt_key)})
    return out


def single_image_warnings(full: pd.DataFrame, limited: pd.DataFrame, limiter: Limiter | None = None,
                          prompt_key: PromptKey | None = None) -> list[str]:
    """One line per suite :func:`single_image_prompts` flags, saying which limit would not."""
    return [_warning_line(s) for s in single_image_prompts(full, limited, limiter, prompt_key)]


def _warning_line(s: dict) -> str:
    fix = f"--limit {s['limit']} gives each two" if s["limit"] else "the full suite gives each several"
    return (f"{s['suite']}: {s['single']} of the {s['prompts']} prompts kept have one image (the suite has "
            f"{s['full_per_prompt']} per prompt): no resample can see a prompt's noise there and a MAD over one "
            f"image per prompt cannot change, so `t2ibench compare` shows no interval and does not test that MAD; "
            f"{fix}")


def single_image_summary(full: pd.DataFrame, limited: pd.DataFrame, limiter: Limiter | None = None,
                         prompt_key: PromptKey | None = None, *, most: int = 2) -> list[str]:
    """:func:`single_image_warnings`, or where more than ``most`` suites are flagged one line for
    them all (the plan of a short run such as ``t2ibench demo`` stays readable), with the one
    limit that gives every flagged suite's prompts two images."""
    flagged = single_image_prompts(full, limited, limiter, prompt_key)
    if len(flagged) <= most:
        return [_warning_line(s) for s in flagged]
    limits = [s["limit"] for s in flagged]
    fix = (f"--limit {max(limits)} gives every one of them two" if all(limits)
           else "the full suites give them several")
    which = ", ".join(f"{s['suite']} {s['single']} of {s['prompts']}" for s in flagged)
    return [f"{len(flagged)} suites keep prompts with one image ({which}): no resample can see a prompt's noise there "
            f"and a MAD over one image per prompt cannot change, so `t2ibench compare` shows no interval and does "
            f"not test that MAD; {fix}"]


def images_needed(mdd: float, target: float, per_prompt: float | None = None) -> dict:
    """What detecting a change of ``target`` takes, from an audit whose MDD is ``mdd`` at
    ``per_prompt`` images per prompt: ``{"factor"}`` (times the images per prompt) and
    ``{"per_prompt"}`` (rounded up; None when ``per_prompt`` is not known)."""
    if not (mdd >= 0 and target > 0):
        raise ValueError(f"need an MDD >= 0 and a target > 0, got {mdd} and {target}")
    factor = (mdd / target) ** 2
    needed = None if per_prompt is None else max(1, math.ceil(per_prompt * factor - 1e-9))
    return {"factor": factor, "per_prompt": needed}


def mdd_factor(alpha: float = ALPHA, power: float = POWER) -> float:
    """z_(1 - alpha/2) + z_power: the minimum detectable difference in standard errors (2.80 at
    alpha 0.05; 3.86 at alpha 0.05 / 20)."""
    from scipy import stats

    return float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))


def mdd_spread(row: dict) -> float:
    """The spread a compared row's MDD is made from: its swaps' spread of the tested quantity, or,
    for a score judged by its distance from its ideal, of B - A (``se_difference``). Where the two
    runs sit near the ideal, swapping their images barely moves |B| - |A| and its swaps' spread
    collapses (to about a fifth of another pair's at parity: docs/compare.md), while a change away
    from the ideal faces the spread of B - A: the MDD would promise a change several times too small."""
    return float(row.get("se_difference", row["se"]))


def no_change_difference(meta: Any, a: Any, b: Any) -> Any:
    """Per pair of simulated audits A, B of one model (arrays of a score's values): the difference
    whose spread at no change an MDD is made from, as :func:`mdd_spread` takes a comparison's:
    badness(B) - badness(A), or B - A for a score judged by its distance from its ideal (``meta``:
    its :class:`benchmark.scores.metadata.ScoreMetadata`), whose |B| - |A| hardly varies near the
    ideal. Elsewhere the two differ only in sign."""
    return (b - a) if meta.distance_from_ideal else (meta.badness(b) - meta.badness(a))


def planned_mdd(pilot: Mapping[str, Any], planned_images: Mapping[str, int], *, alpha: float = ALPHA,
                power: float = POWER) -> list[dict]:
    """Per headline score entry of a ``pilot`` results document whose suite is planned, the
    smallest change a comparison of two audits of the planned size detects with ``power`` at
    ``alpha`` (one test alone): ``{"name", "suite", "subset", "estimator", "mdd", "pilot_images",
    "planned_images"}``, or with ``"reason"`` instead of ``"mdd"`` when the pilot cannot say.

    The pilot's standard error is read from its interval (width / 2 z at its level), scaled to
    the planned images of the suite (one over the square root of the images), and taken twice
    over (sqrt 2) for two independent audits: an upper bound of what a paired comparison
    (``t2ibench compare`` on the same probes and seeds) needs, never less."""
    from scipy import stats

    suites = {s.get("name"): s for s in pilot.get("suites") or [] if isinstance(s, Mapping)}
    factor = mdd_factor(alpha, power)
    out = []
    for e in pilot.get("scores") or []:
        suite = e.get("suite")
        if not e.get("headline") or suite not in planned_images:
            continue
        row = {"name": e.get("name"), "suite": suite, "subset": e.get("subset"),
               "estimator": e.get("estimator") or e.get("annotator"),
               "pilot_images": (suites.get(suite) or {}).get("n_scored_images"),
               "planned_images": int(planned_images[suite])}
        ci = e.get("ci") or {}
        if not e.get("defined") or not isinstance(ci.get("low"), (int, float)) or ci.get("high") is None:
            row["reason"] = "the pilot has no interval for it"
        elif not ci["high"] > ci["low"]:
            row["reason"] = "the pilot's interval has no width: every resample gave the same value"
        elif not row["pilot_images"] or not row["planned_images"]:
            row["reason"] = "no images to scale from"
        else:
            z = stats.norm.ppf(1 - (1 - float(ci.get("confidence_level") or 0.95)) / 2)
            se = (ci["high"] - ci["low"]) / (2 * z) * math.sqrt(row["pilot_images"] / row["planned_images"])
            row["mdd"] = factor * math.sqrt(2) * se
        out.append(row)
    return out

"""``--pilot``: the smallest change a comparison of two audits of the planned size detects, from a
pilot audit's own labels (``t2ibench run / generate --pilot RESULTS_JSON``, docs/compare.md).

A pilot's results.json carries the label rows its scores read (its ``pairing`` section). The
plan fits a model of those labels (:class:`benchmark.runner.simulate.Fit`: per slot and prompt,
with prompts the pilot saw once borrowing from the others), draws pairs of audits of one model at
the planned design (the planned probes, the real ``--limit`` rule, every prompt's own number of
images: a prompt of one image included), scores them with the tasks' own code and takes the
spread of each score's tested quantity (B's badness minus A's): the MDD is 2.80 x that spread
(power 0.8 at alpha 0.05, one test). Images of a pair are drawn independently, as two audits with
uncontrolled seeds: the paired comparison of the same probes and seeds can only detect less, so
the plan never promises more than the comparison gives. Suites whose labels the model does not
draw (CLIP embeddings, detector queries: scores that are means over many images) are planned
from the pilot's interval as before (:func:`benchmark.scores.design.planned_mdd`).
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.interpolate import PchipInterpolator
from scipy.optimize import brentq
from scipy.stats import norm
from scipy.stats.mstats import hdquantiles

from benchmark.present.progress import grow, progress_bar
from benchmark.runner.shared_seeds import SharedSeeds
from benchmark.runner.simulate import Fit, Layout, draw_labels, image_effects, layout, score_copies
from benchmark.scores.design import POWER, mdd_factor, mdd_spread, no_change_difference
from benchmark.scores.metadata import get_metadata
from benchmark.tasks.context import entry_key

__all__ = ["MDD_GRID", "MDD_PAIRS", "NOT_DETECTABLE", "PAIRS", "SWAP_GRID", "detectable_changes", "margin_parts",
           "named_like_runs", "planned_mdd_from_labels", "planned_mdd_rows", "simulate_printed_mdd",
           "simulated_pairs"]

#: pairs of audits the plan draws (the MDD's spread to about 10%)
PAIRS = 50
#: pairs of audits the printed MDD of a comparison is simulated from (:func:`detectable_changes`): with 16,
#: on one model's comparisons, the MDD of GEP CLS was 12% above the change they find in 80% (8% with 32,
#: 2% with 48), and the categorical growth of :func:`_growth` needs more than 16 to be steady
#: (docs/compare.md, "How many simulated pairs")
MDD_PAIRS = 48
#: the changes tried: the share of each label's probability moved towards its cell's majority (or,
#: where that cannot reach the MDD, towards the slot's first value)
MDD_GRID = (0.0, 0.06, 0.14, 0.25, 0.4, 0.6, 1.0)
#: pairs of simulated audits that share one draw of the fit's cells: q's spread at a change is taken
#: within such groups (one model's, as in the comparison), not across the cells' posterior, whose spread
#: of the expected change no comparison of one model has (docs/compare.md, "The tested quantity's spread
#: at the change")
CELL_GROUP = 4
#: how the MDD reads the simulated tested quantity's (1 - power) quantile: "harrell-davis" (its
#: quantile estimate of the simulated pairs) or "normal" (moved - z_power x its spread); recorded
#: in every calibration run (bench/compare_calibration.py), which is re-read by it
MDD_READING = "harrell-davis"
#: the changes at which the swap test's critical value is simulated too (in between: fitted over all of
#: them by :func:`_growth`; reaching 1.0 puts the fit where the change's share of the variance is largest)
SWAP_GRID = (0.0, 0.4, 1.0)
NOT_DETECTABLE = ("no change of this kind is detectable at this size: even moving every label it reads all the way "
                  "to its prompt's majority, or all to one value, is found worse in fewer than {power:.0%} of "
                  "simulated comparisons")


def planned_mdd_from_labels(pilot_probes: pd.DataFrame, pilot_labels: Mapping[str, pd.DataFrame | None],
                            planned_probes: pd.DataFrame, *, pairs: int = PAIRS, seed: int = 0,
                            config: Mapping | None = None,
                            layout_of: Callable[[pd.DataFrame], Layout] = layout) -> list[dict]:
    """Per score entry of the planned audit: ``{"name", "suite", "subset", "estimator", "annotator",
    "mdd" or "reason", "pilot_images", "planned_images"}`` (see the module doc); ``config``: the
    planned run's config (its probe set's record), ``layout_of``: how the planned labels are laid
    out (default :func:`benchmark.runner.simulate.layout`)."""
    fit = Fit.of(pilot_probes, pilot_labels)
    lay = layout_of(planned_probes)
    return planned_mdd_rows(fit, lay, simulated_pairs(fit, lay, pairs, seed), pilot_probes, config)


def simulated_pairs(fit: Fit, lay: Layout, pairs: int, seed: int) -> list[dict]:
    """``pairs`` pairs of audits of ``lay`` drawn from ``fit``, as label files in the order A, B, A,
    B, ...: each pair one draw of the cells, its two audits' images drawn independently."""
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(pairs):
        values = fit.cells(lay, rng)
        effects = image_effects(lay, values, rng)
        sets += [draw_labels(lay, values, effects, rng), draw_labels(lay, values, effects, rng)]
    return sets


def planned_mdd_rows(fit: Fit, lay: Layout, sets: Sequence[Mapping[str, pd.DataFrame]], pilot_probes: pd.DataFrame,
                     config: Mapping | None = None) -> list[dict]:
    """:func:`planned_mdd_from_labels`' rows from the pairs of audits ``sets`` of ``lay`` (A, B, A,
    B, ...: :func:`simulated_pairs`' or a part of a larger design's, every image of ``lay``'s probes)."""
    read_by: dict = {}
    scored = score_copies(lay, sets, config, read_by=read_by)
    pilot_n = pilot_probes["suite"].value_counts()
    planned_n = lay.probes["suite"].value_counts()
    factor = mdd_factor()
    out = []
    for key, v in scored.items():
        name, suite = key[0], key[1]
        q = no_change_difference(get_metadata(name), v[0::2], v[1::2])
        row = {"name": name, "suite": suite, "subset": key[2], "estimator": key[3], "annotator": key[4],
               "pilot_images": int(pilot_n.get(suite, 0)), "planned_images": int(planned_n.get(suite, 0))}
        q = q[np.isfinite(q)]
        files = read_by.get(key) or ("",)
        if (files[-1], suite) in fit.problems:  # the label file it reads (the last read before it)
            row["reason"] = fit.problems[(files[-1], suite)]
        elif len(q) < max(3, len(sets) // 4):  # fewer than half the pairs
            row["reason"] = "undefined on most simulated audits of the planned size"
        else:
            row["mdd"] = factor * float(np.std(q, ddof=1))
        out.append(row)
    return out


def _swapped(a: Mapping[str, pd.DataFrame], b: Mapping[str, pd.DataFrame], probes: set) -> tuple[dict, dict]:
    """A and B with the images of ``probes`` swapped (what the paired randomization test does)."""
    out_a, out_b = {}, {}
    for kind in a:
        in_a, in_b = a[kind]["probe_id"].isin(probes), b[kind]["probe_id"].isin(probes)  # ids: the layout's strings
        out_a[kind] = pd.concat([a[kind][~in_a], b[kind][in_b]], ignore_index=True)
        out_b[kind] = pd.concat([b[kind][~in_b], a[kind][in_a]], ignore_index=True)
    return out_a, out_b


def _draw_sets(fit: Fit, lay: Layout, pairs: int, seed: int, shift: bool,
               shared: SharedSeeds | None = None) -> list[dict]:
    """Per pair: A, B at every change of :data:`MDD_GRID` (the same random numbers at every one),
    then A and B with a random half of the probes swapped at every change of :data:`SWAP_GRID`
    (the same half at every one). Each :data:`CELL_GROUP` pairs share a draw of the fit's cells;
    the images of a pair share what ``shared`` says their seeds share (else nothing)."""
    ids = lay.probes["probe_id"].astype(str).to_numpy()
    sets: list[dict] = []
    for p in range(pairs):
        rng = np.random.default_rng([seed, p])
        if p % CELL_GROUP == 0:
            cells = fit.cells(lay, np.random.default_rng([seed, p // CELL_GROUP, 2]))
        values, effects = shared.effects(lay, cells, rng) if shared else (cells, image_effects(lay, cells, rng))
        a = draw_labels(lay, values, effects, rng)
        half = set(ids[rng.uniform(size=len(ids)) < 0.5])
        b = {t: draw_labels(lay, values, effects, np.random.default_rng([seed, p, 1]), t, shift=shift)
             for t in sorted(set(MDD_GRID) | set(SWAP_GRID))}
        sets += [a] + [b[t] for t in MDD_GRID]
        for t in SWAP_GRID:
            sets += list(_swapped(a, b[t], half))
    return sets


def detectable_changes(fit: Fit, lay: Layout, critical: Mapping[tuple, tuple[float, float]], *, pairs: int = MDD_PAIRS,
                       power: float = POWER, seed: int = 0, config: Mapping | None = None,
                       shift: bool = False, shared: SharedSeeds | None = None, bar=None) -> dict[tuple, dict]:
    """Per score entry of ``critical`` (its key -> the |tested quantity| its comparison's swap test
    needs to reject, and the spread of its swaps): the smallest change it detects with ``power``,
    simulated from ``fit``.

    ``pairs`` pairs of audits of ``lay`` are drawn from the fit (each :data:`CELL_GROUP` pairs a draw
    of the cells from their posterior, the images of a pair sharing what ``shared`` says); B's
    labels are pushed by each change t of :data:`MDD_GRID` towards each
    cell's majority (``shift``: the slot's first value; :func:`benchmark.runner.simulate.draw_labels`)
    with the same random numbers at every t. Per t, the tested quantity q = badness(B) - badness(A)
    of every pair, and the critical value the swap test would need for such a pair: the
    comparison's own scaled by how the spread of swapped pairs grows with t (simulated at
    :data:`SWAP_GRID`). A change t* whose (1 - power) quantile of q reaches that critical value is
    found worse in ``power`` of the comparisons. Returned: ``{"mdd": the expected change of the
    tested quantity at t*, "change": t*}``, ``{"reason": ...}`` where the largest change falls
    short, ``{"unfitted": why}`` where the fit cannot draw the score's labels; a score the
    simulated audits do not give has no entry. ``bar``: a progress bar (tqdm) whose total grows by
    the audits simulated here and that advances as they are scored."""
    read_by: dict = {}
    grid = np.asarray(MDD_GRID, dtype=float)
    width = 1 + len(grid) + 2 * len(SWAP_GRID)
    grow(bar, pairs * width)
    scored = score_copies(lay, _draw_sets(fit, lay, pairs, seed, shift, shared), config, chunk=_chunk(lay),
                          read_by=read_by, advance=None if bar is None else bar.update)
    out = {}
    for key, (c, se) in critical.items():
        files = read_by.get(key) or ("",)
        if key not in scored or (files[-1], key[1]) in fit.problems:
            if key in scored:
                out[key] = {"unfitted": fit.problems[(files[-1], key[1])]}
            continue
        meta, values = get_metadata(key[0]), np.asarray(scored[key], dtype=float).reshape(pairs, width)
        bad = np.asarray(meta.badness(values), dtype=float)
        swap_a, swap_b = slice(1 + len(grid), None, 2), slice(2 + len(grid), None, 2)  # _draw_sets' swapped A, B
        q = bad[:, 1:1 + len(grid)] - bad[:, :1]
        swaps = bad[:, swap_b] - bad[:, swap_a]
        signed = (values[:, 1] - values[:, 0], values[:, swap_b] - values[:, swap_a]) if meta.distance_from_ideal \
            else None
        out[key] = _change_found(q, swaps, (c, se), power, max(3, pairs // 2),
                                 categorical=_reads_categories(lay, files[-1], key[1]),
                                 groups=np.arange(pairs) // CELL_GROUP, signed=signed)
    return out


def _reads_categories(lay: Layout, label_file: str, suite: str) -> bool:
    """Whether the labels a score reads (its label file, in its suite) are categories (a VQA answer,
    a Monk tone) rather than continuous values (GEP's existence scores)."""
    return any(not s.continuous for s in lay.slots if s.kind == label_file and s.suite == suite)


def _change_found(q: np.ndarray, swaps: np.ndarray, critical: tuple[float, float], power: float, least: int,
                  categorical: bool = False, groups: np.ndarray | None = None, reading: str | None = None,
                  signed: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """One score's detectable change (see :func:`detectable_changes`) from its tested quantity
    ``q`` (pairs x :data:`MDD_GRID`), its swapped pairs' (pairs x :data:`SWAP_GRID`) and the
    comparison's (critical value, spread of its swaps); ``categorical``: the score reads categorical
    labels (how the swaps widen, :func:`_growth`); ``groups``: per pair, the draw of the cells it
    shares (q's spread is taken within them; default: one draw for all); ``reading``, ``signed``:
    see :func:`margin_parts`."""
    parts = margin_parts(q, swaps, critical, power, least, categorical, groups, reading, signed)
    if "reason" in parts:
        return parts
    grid, moved, margin = parts["grid"], parts["moved"], parts["low"] - parts["needed"]
    margin = np.maximum.accumulate(margin)
    if margin[-1] < 0:
        return {"reason": NOT_DETECTABLE.format(power=power)}
    first = int(np.argmax(margin >= 0))
    if first == 0:
        return {"mdd": float(moved[0]), "change": 0.0}
    return _crossing(grid, np.maximum.accumulate(moved), margin, first)


def margin_parts(q: np.ndarray, swaps: np.ndarray, critical: tuple[float, float], power: float, least: int,
                 categorical: bool = False, groups: np.ndarray | None = None, reading: str | None = None,
                 signed: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """What :func:`_change_found` compares at each change of the grid it keeps: ``moved`` (the
    expected change of q), ``low`` (q's (1 - power) quantile, q's spread put on the comparison's
    scale), ``needed`` (the critical value a pair so changed needs), ``spread`` (q's spread there);
    or ``{"reason": ...}``. ``reading``: how ``low`` is read, "harrell-davis" or "normal" (moved -
    z_power x spread; bench/power_lean.py weighs the two); default :data:`MDD_READING`, what
    compare prints. ``signed``: for a score judged by its distance from its ideal (q = |B| - |A|),
    each pair's B - A at no change and on its swaps (pairs x :data:`SWAP_GRID`), ``critical`` then
    made from the comparison's spread of B - A (:func:`benchmark.scores.design.mdd_spread`). Near
    the ideal, |B| - |A| and its swaps barely vary (swapping images cannot move a pair away from
    it), so their spread at no change measures where a pair sits, not the labels' noise: the
    simulation is put on the comparison's scale by B - A's spread, and the critical value grows as
    B - A's swaps widen (a pair changed by the MDD has left the ideal; its swaps spread as B - A's)."""
    c, se = critical
    grid, swap_grid = np.asarray(MDD_GRID, dtype=float), np.asarray(SWAP_GRID, dtype=float)
    ok = np.isfinite(swaps[:, 0]) & np.isfinite(q[:, 0])
    # the changes at which the score stays defined on most pairs (all of a cell's labels moved to
    # "no face" leaves a skin-tone MAD undefined): the grid ends before the first that does not,
    # and the swaps fitted are those up to its end
    usable = np.isfinite(q[ok]).mean(axis=0) >= 0.9 if ok.any() else np.zeros(len(grid), bool)
    end = len(grid) if usable.all() else int(np.argmin(usable))
    fitted = int(np.searchsorted(swap_grid, grid[end - 1], side="right")) if end else 0
    keep = ok & np.all(np.isfinite(q[:, :end]), axis=1) & np.all(np.isfinite(swaps[:, :fitted]), axis=1)
    q, swaps, swap_grid, grid = q[keep, :end], swaps[keep, :fitted], swap_grid[:fitted], grid[:end]
    if signed is not None:
        signed = (np.asarray(signed[0], float)[keep], np.asarray(signed[1], float)[keep, :fitted])
    if len(q) < least or fitted < 2:
        return {"reason": "undefined on most simulated audits of this size"}
    moved = np.mean(q - q[:, :1], axis=0)  # the expected change (E q at t = 0 is 0: A and B alike)
    # q's spread around its mean within the draws of the cells, put on the scale of the
    # comparison's own (its swaps' spread over the simulated pairs' at no change; of B - A's for a
    # score judged by its distance from its ideal)
    within = np.zeros(len(keep), np.int64)[keep] if groups is None else np.asarray(groups)[keep]
    dev = _within(q, within)
    base = dev[:, :1] if signed is None else _within(signed[0][:, None], within)
    spread0 = float(np.sqrt(np.mean(base[:, 0] ** 2))) if len(base) else 0.0
    rescaled = spread0 > 0 and se > 0
    scale = se / spread0 if rescaled else 1.0
    spread = np.sqrt(np.mean(dev ** 2, axis=0)) * scale if len(dev) else np.zeros(len(grid))
    if rescaled:
        q = moved + dev * scale
    if (reading or MDD_READING) == "normal":
        low = moved - float(norm.ppf(power)) * spread
    else:
        # the (1 - power) quantile of q (Harrell-Davis: steadier than one order statistic of a few
        # pairs) over the critical value such a pair's swaps would need; monotone in t
        low = np.asarray(hdquantiles(q, prob=[1 - power], axis=0), dtype=float).ravel()
    needed = c * _growth(grid, moved, swap_grid, swaps if signed is None else signed[1], categorical)
    return {"grid": grid, "moved": moved, "low": low, "needed": needed, "spread": spread}


def _within(q: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The rows of ``q`` less their group's mean, scaled to unbiased variance (sqrt(n / (n - 1)) for a
    group of n); groups of one row left out."""
    _, index, counts = np.unique(groups, return_inverse=True, return_counts=True)
    sums = np.zeros((len(counts), q.shape[1]))
    np.add.at(sums, index, q)
    n = counts[index][:, None].astype(float)
    several = n[:, 0] > 1
    dev = (q - sums[index] / n)[several] * np.sqrt(n[several] / (n[several] - 1))
    return dev


def _crossing(grid: np.ndarray, moved: np.ndarray, margin: np.ndarray, first: int) -> dict:
    """The expected change (``moved``, non-decreasing) at which ``margin`` (non-decreasing, first
    >= 0 at index ``first`` > 0) reaches 0, and the change t of ``grid`` it is made by.

    Read off a monotone cubic (PCHIP) of the margin against the expected change, not a straight
    line between the bracketing changes: GEP's critical value grows with the change's square, so
    the margin is curved and a chord crosses late (GEP CC's MDD 4% high, median of ten
    comparisons, against 0.9% this way; docs/compare.md, "Reading the MDD between the simulated
    changes")."""
    if moved[first] <= moved[first - 1]:  # the margin jumps at one expected change
        return {"mdd": float(moved[first - 1]), "change": float(grid[first - 1])}
    rising = np.r_[True, np.diff(moved) > 0]  # PCHIP needs distinct abscissae
    mdd = brentq(PchipInterpolator(moved[rising], margin[rising]), moved[first - 1], moved[first])
    return {"mdd": float(mdd), "change": float(PchipInterpolator(moved[rising], grid[rising])(mdd))}


def _growth(grid: np.ndarray, moved: np.ndarray, swap_grid: np.ndarray, swaps: np.ndarray,
            categorical: bool = False) -> np.ndarray:
    """Per change t of ``grid``: how much wider the swaps of a pair changed so (``moved``: the
    expected change of q) spread than those of an unchanged pair, from the swapped pairs at every
    change of ``swap_grid`` (the first no change; swapped pairs centre on no change), fitted over
    all of them (much steadier than from one change: docs/compare.md).

    - Continuous labels (GEP's existence scores: every value moves a little): the variance a change
      adds grows with its square, var(t) = var(0) + slope x moved(t)^2, slope >= 0 by least squares.
    - Categorical labels (``categorical``): a change flips a share t of them, and jumps add variance
      about in proportion to the share flipped, not to the square of the score's change (average
      gender: 1.36x at its MDD in 128 pairs drawn from the truth, 1.10x by the square law), while a
      MAD near its ceiling can narrow: var(t) = var(0) + a t + b t^2 by least squares (through the
      three changes of :data:`SWAP_GRID` exactly; a only, from two), kept above a quarter of var(0).
      Three parameters need the 48 pairs of :data:`MDD_PAIRS`: with 16, the printed MDD's
      coefficient of variation doubled."""
    var = np.mean(swaps ** 2, axis=0)
    if var[0] <= 0:
        return np.ones(len(grid))
    if categorical:
        shares = np.stack([swap_grid, swap_grid ** 2], axis=1)[1:]
        added = var[1:] - var[0]
        a, b = np.linalg.lstsq(shares, added, rcond=None)[0] if len(added) > 1 else (added[0] / swap_grid[1], 0.0)
        return np.sqrt(np.maximum(var[0] + a * grid + b * grid ** 2, 0.25 * var[0]) / var[0])
    size = np.maximum.accumulate(np.maximum(moved, 0.0)) ** 2
    at = size[np.searchsorted(grid, swap_grid)]
    slope = max(float(np.dot(at, var - var[0]) / np.dot(at, at)), 0.0) if np.dot(at, at) > 0 else 0.0
    return np.sqrt((var[0] + slope * size) / var[0])


def _chunk(lay: Layout) -> int:
    """Audits scored in one table: as many as about 400,000 label rows hold (all of a small one)."""
    rows = sum(len(k) for k in lay.keys.values())
    return int(min(500, max(10, 400_000 // max(rows, 1))))


def _suites_of(lay: Layout, suites: set) -> Layout:
    """The part of ``lay`` in ``suites`` (the same slots and cells)."""
    keys = {}
    for kind, frame in lay.keys.items():
        kept = frame[np.asarray([lay.slots[s].suite in suites for s in frame["slot"]], dtype=bool)]
        if len(kept):
            keys[kind] = kept.reset_index(drop=True)
    probes = lay.probes[lay.probes["suite"].isin(suites)].reset_index(drop=True)
    return Layout(probes, keys, lay.slots, lay.cells, lay.left_out)


def named_like_runs(lay: Layout, frames: Mapping[str, list[pd.DataFrame]]) -> Layout:
    """``lay`` with each label file's annotator named as the compared runs name it, per suite,
    where both name one: the layout names the default annotators (a built-in model's audit is
    labelled by the built-in tiny ones), the fit ignores the annotator, and the score keys the
    simulated MDD is matched by carry it."""
    suite_of = lay.probes.set_index(lay.probes["probe_id"].astype(str))["suite"]
    keys = dict(lay.keys)
    for kind, frame in lay.keys.items():
        real = [f for f in frames.get(kind, []) if "annotator" in f.columns]
        if not real or "annotator" not in frame.columns:
            continue
        rows = pd.concat([f[["probe_id", "annotator"]] for f in real], ignore_index=True)
        rows = rows.assign(suite=rows["probe_id"].astype(str).map(suite_of)).dropna(subset=["suite"])
        names = frame["annotator"].astype(object).copy()
        suites = frame["probe_id"].astype(str).map(suite_of)
        for suite, group in rows.groupby("suite"):
            ran, laid = set(group["annotator"].astype(str)), set(names[suites == suite].astype(str))
            if len(ran) == 1 and len(laid) == 1:
                names[suites == suite] = ran.pop()
        keys[kind] = frame.assign(annotator=names)
    return Layout(lay.probes, keys, lay.slots, lay.cells, lay.left_out)


def simulate_printed_mdd(rows: list[dict], probes: pd.DataFrame,
                         labels: Sequence[Callable[[str], pd.DataFrame | None]], *, config: Mapping | None = None,
                         pairs: int = MDD_PAIRS, seed: int = 0,
                         layout_of: Callable[[pd.DataFrame], Layout] = layout, progress: bool = False) -> None:
    """The printed MDD of the compared ``rows`` (``t2ibench compare``'s, each with its ``critical``
    value) found by simulation (:func:`detectable_changes`) from a fit of the compared runs'
    labels (``labels``: per run, label file -> its rows; pooled) over ``probes`` (the compared
    probes): labels moved towards each prompt's majority, or where that cannot reach it towards
    the slot's first value (a signed average whose prompts cancel). Sets ``mdd`` (None where no
    change of either kind is detectable, with ``mdd_reason``), ``mdd_change``, ``mdd_kind`` and
    ``mdd_how``; rows whose labels the model does not draw keep the normal formula's and say so.
    ``pairs`` 0: every row keeps the normal formula's. ``progress``: a bar on stderr (a minute of CPU
    at the CI recipe's size, more for full audits: docs/compare.md)."""
    wanted = {entry_key(r): r for r in rows if r.get("status") == "compared" and r.get("critical") is not None}
    if not wanted or pairs <= 0:
        return
    lay = layout_of(probes)
    runs = [{k: frame_of(k) for k in lay.keys} for frame_of in labels]
    frames = {k: [run[k] for run in runs if run[k] is not None and len(run[k])] for k in lay.keys}
    lay = named_like_runs(lay, frames)
    fit = Fit.of(probes, {k: pd.concat(v, ignore_index=True) if v else None for k, v in frames.items()})
    shared = SharedSeeds.of(fit, lay, *runs) if len(runs) == 2 else None
    critical = {k: (r["critical"], mdd_spread(r)) for k, r in wanted.items()}
    bar = progress_bar(0, "simulating the MDD", enabled=progress, unit="audit")
    try:
        found = detectable_changes(fit, lay, critical, pairs=pairs, seed=seed, config=config, shared=shared, bar=bar)
        short = {k for k, res in found.items() if "reason" in res}
        if short:  # another kind of change for those: the slot shifted one way, simulated on their suites alone
            suites = {k[1] for k in short}
            sub_config = {**config, "suites": [s for s in config["suites"] if s in suites]} if config else None
            shifted = detectable_changes(fit, _suites_of(lay, suites), {k: critical[k] for k in short}, pairs=pairs,
                                         seed=seed, config=sub_config, shift=True, shared=shared, bar=bar)
            found.update({k: {**res, "shift": True} for k, res in shifted.items() if "mdd" in res})
    except ValueError as exc:  # a score refuses the simulated labels (values outside its range): said, not hidden
        found = {k: {"unfitted": f"the simulated audits cannot be scored: {exc}"} for k in wanted}
    finally:
        bar.close()
    how = f"simulated from {pairs} pairs of audits"
    for key, r in wanted.items():
        res = found.get(key)
        if res is None or "unfitted" in res:
            why = res["unfitted"] if res else "the labels this score reads are not simulated"
            r["mdd_how"] = f"normal formula ({why})"
        elif "mdd" in res:
            r.update(mdd=res["mdd"], mdd_change=res["change"], mdd_how=how,
                     mdd_kind="the slot shifted one way" if res.get("shift") else "towards each prompt's majority")
        else:
            r.update(mdd=None, mdd_reason=res["reason"], mdd_how=how)

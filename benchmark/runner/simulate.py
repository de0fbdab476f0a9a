"""Audits drawn from a model of their labels: with the truth known (the calibration of
``t2ibench compare``, :mod:`benchmark.calibration`), or fitted to a pilot audit's labels
(the plan's smallest detectable change, :mod:`benchmark.runner.planning`).

The layout of an audit (:func:`layout`) is what its annotators would write: for a probe table
(the real suites' rows, cut by the real ``--limit`` rule) and the annotators its tasks ask for
(their default models, not loaded), every label row's key (:meth:`Annotator.keys`), grouped in
*slots* (one label file, suite, annotator and question kind: a person, an attribute, an
estimator) and *cells* (a slot on one prompt: the images of a prompt share a distribution).
Values are drawn per cell:

* categorical labels (a VQA gender answer among those its question allows, or unidentifiable; a
  yes / no attribute; a Monk skin tone or no face): the cell's probabilities;
* continuous labels (the existence scores CLIP estimators write): the cell's mean and spread.

:class:`Truth` draws the cells from a hierarchy (prompts differ by a Dirichlet of concentration
``alpha``, images of one prompt by a seed effect shared by both audits of a pair), and a change
of strength ``t`` in audit B pushes every cell towards its own majority (more bias). A
:class:`Fit` estimates the same kind of hierarchy from a pilot's labels (method of moments over
the cells holding two images or more, so that a prompt the pilot saw once borrows from the
others) and draws cells from their posterior. Label files no model here draws (CLIP embeddings,
detector queries) are left out: :func:`layout` lists them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd
from scipy import special

from benchmark.annotate.label_files import get_label_file
from benchmark.annotate.registry import AnnotateContext, list_annotator_kinds
from benchmark.annotate.vqa_answers import UNIDENTIFIABLE
from benchmark.contract.values import flag_array
from benchmark.probes.registry import load_config
from benchmark.probes.source import open_probe_set, suite_families
from benchmark.runner.annotate_plan import annotator_parameters
from benchmark.runner.probe_choice import prompt_key
from benchmark.scores.bootstrap import resample_plan
from benchmark.scores.randomization import CopyPlan, copy_tag
from benchmark.scores.skin_tone import MST_ITA
from benchmark.tasks.context import ScoringOptions
from benchmark.tasks.of_run import score_tables
from benchmark.tasks.registry import task_options

__all__ = ["Fit", "Layout", "Truth", "audit_config", "draw_labels", "image_effects", "layout", "score_copies",
           "slot_rows"]

NO_FACE = "none"
#: a probability of exactly 0 or 1 (a score carried as float32) is put this far inside before its logit
LOGIT_EDGE = 1e-4
#: key columns that name a question's text, not what is asked: left out of a slot
_TEXT = ("probe_id", "question", "text")


@dataclass(frozen=True)
class Slot:
    """One kind of label row: its label file, suite and key ((column, value) pairs, the probe and
    question text left out), and its values: ``categories`` (categorical) or none (continuous)."""

    kind: str
    suite: str
    key: tuple
    categories: tuple = ()

    @property
    def continuous(self) -> bool:
        return not self.categories

    @property
    def loose(self) -> tuple:
        """What a pilot's rows must share with the slot: all but the annotator (a pilot may have
        used another model of the same kind)."""
        return (self.kind, self.suite, tuple((c, v) for c, v in self.key if c != "annotator"))

    @property
    def looser(self) -> tuple:
        """... or all but the annotator and the estimator (another way of asking one model)."""
        return (self.kind, self.suite, tuple((c, v) for c, v in self.key if c not in ("annotator", "estimator")))


@dataclass
class Layout:
    """The label rows of an audit: per label file a frame of key columns plus ``slot`` and
    ``cell`` (indices into :attr:`slots` and :attr:`cells`); ``cells`` (slot, prompt) pairs;
    ``left_out``: label files no model here draws, with the suites that need them."""

    probes: pd.DataFrame
    keys: dict[str, pd.DataFrame]
    slots: list[Slot]
    cells: list[tuple[int, str]]
    left_out: dict[str, list[str]] = field(default_factory=dict)
    #: the run config its audits are scored with (:func:`audit_config`, made once)
    config: dict | None = None
    #: per-cell arrays made once (read-only): every simulated audit reads them, thousands a run
    _made: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def cell_slots(self) -> np.ndarray:
        """Per cell: its slot's index."""
        return self._once("cell_slots", lambda: np.asarray([s for s, _ in self.cells], dtype=np.int64))

    def first_half(self) -> np.ndarray:
        """Per cell: whether its prompt is in the first half of its slot's prompts (probe order)."""
        return self._once("first_half", self._first_half)

    def _first_half(self) -> np.ndarray:
        slots = self.cell_slots()
        rank = np.zeros(len(slots), dtype=np.int64)
        seen: dict[int, int] = {}
        for c, s in enumerate(slots):
            rank[c] = seen.get(s, 0)
            seen[s] = rank[c] + 1
        return rank < np.asarray([seen[s] for s in slots]) / 2

    def _once(self, name: str, make: Callable[[], np.ndarray]) -> np.ndarray:
        """``make()``, made the first time and kept read-only (the cells do not change)."""
        if name not in self._made:
            made = make()
            made.flags.writeable = False
            self._made[name] = made
        return self._made[name]


def _categories(a, kind: str, key: tuple) -> tuple | None:
    """The values a row of annotator ``a`` takes, () for continuous, None when no model here draws
    them."""
    if kind == "gender":
        allowed = tuple(getattr(a, "allowed", {}).get(key) or ())
        return tuple(allowed) + (UNIDENTIFIABLE,) if allowed else ("male", "female", UNIDENTIFIABLE)
    if kind == "attributes":
        return (1, 0) if a.inputs == "pixels" else ()
    if kind == "skin_tone":
        return (NO_FACE,) + tuple(range(1, len(MST_ITA) + 1))
    return None


def _annotators(families: Mapping[str, str]) -> list:
    params = annotator_parameters(dict(families))
    out = []
    for kind in [k for k in list_annotator_kinds() if k.name in params]:
        default = kind.default(False)
        out += [kind.create(m, params[kind.name]) for m in (default if kind.many else [default])]
    return out


def layout(probes: pd.DataFrame) -> Layout:
    """The label rows the annotators of ``probes``' suites would write (see the module doc)."""
    probes = probes.reset_index(drop=True)
    families = suite_families(None, list(dict.fromkeys(probes["suite"])))
    ctx = AnnotateContext(Path(), configs={f: load_config(f) for f in set(families.values())}, families=families)
    records = probes.to_dict("records")
    slots: dict[Slot, int] = {}
    cells: dict[tuple[int, str], int] = {}
    rows: dict[str, list[dict]] = {}
    left_out: dict[str, list[str]] = {}
    for a in _annotators(families):
        spec = get_label_file(a.label_file)
        for r in [r for r in records if r["suite"] in a.params]:
            for key in a.keys(r, ctx):
                named = dict(zip(spec.key, key))
                cats = _categories(a, a.label_file, key)
                if cats is None:
                    left_out.setdefault(a.label_file, [])
                    if r["suite"] not in left_out[a.label_file]:
                        left_out[a.label_file].append(r["suite"])
                    continue
                slot = Slot(a.label_file, r["suite"], tuple((c, v) for c, v in named.items() if c not in _TEXT), cats)
                s = slots.setdefault(slot, len(slots))
                c = cells.setdefault((s, prompt_key(str(r["probe_id"]))), len(cells))
                rows.setdefault(a.label_file, []).append({**named, "slot": s, "cell": c})
    # the label keys' text as Python strings: every drawn label file is a copy of them (_plain_strings)
    return Layout(probes, {k: _plain_strings(pd.DataFrame(v)) for k, v in rows.items()}, list(slots), list(cells),
                  left_out)


# --------------------------------------------------------------------------- values of cells


@dataclass
class CellValues:
    """Per cell of a layout: categorical probabilities (``probs``, cells x the most categories;
    0 past a slot's own) or, for continuous slots, ``mean`` and ``sd`` (on the logit scale where
    ``logit``, one flag per cell)."""

    probs: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    logit: np.ndarray


def _width(lay: Layout) -> int:
    return max([len(s.categories) for s in lay.slots] + [1])


def _base(slot: Slot) -> np.ndarray:
    """The suite-wide shares a truth centres a slot's cells on."""
    k = len(slot.categories)
    if slot.kind == "gender":
        out = np.full(k, 0.9 / max(k - 1, 1))
        out[0], out[-1] = 0.9 * 0.6, 0.1  # the first answer more often; unidentifiable 10%
        if k > 2:
            out[1:-1] = 0.9 * 0.4 / (k - 2)
        return out / out.sum()
    if slot.kind == "skin_tone":
        tones = np.exp(-0.5 * ((np.arange(1, k) - 4.5) / 2.0) ** 2)
        return np.concatenate([[0.2], 0.8 * tones / tones.sum()])
    return np.array([0.3, 0.7])[:k] if k == 2 else np.full(k, 1.0 / k)


@dataclass
class Truth:
    """The generative model of two audits of one model (see the module doc): ``alpha``, how much
    the prompts of a slot differ (the Dirichlet concentration of their probabilities around the
    slot's shares; continuous: the spread of their logit means, ``prompt_sd``); ``seed``, the
    concentration of an image's own probabilities around its prompt's (a seed effect both audits
    share; continuous: ``seed_sd``); ``noise_sd``, an image's own noise (continuous); ``parity``,
    a model whose average gender sits at its ideal (:func:`_at_parity`)."""

    alpha: float = 3.0
    seed: float = 20.0
    prompt_sd: float = 0.8
    seed_sd: float = 0.3
    noise_sd: float = 0.6
    parity: bool = False

    def cells(self, lay: Layout, rng: np.random.Generator) -> CellValues:
        base = np.zeros((len(lay.slots), _width(lay)))
        for i, slot in enumerate(lay.slots):
            if not slot.continuous:
                base[i, :len(slot.categories)] = self.alpha * _base(slot) + 1e-3
        slot_of = lay.cell_slots()
        probs = _dirichlet_rows(rng, base[slot_of])
        if self.parity:
            _at_parity(lay, probs)
        mean = rng.normal(-0.8, self.prompt_sd, len(lay.cells))
        return CellValues(probs, mean, np.full(len(lay.cells), self.noise_sd), np.ones(len(lay.cells), bool))


def _at_parity(lay: Layout, probs: np.ndarray) -> None:
    """Exchanges the male and female probabilities of enough gender cells of the gender-neutral
    prompts (DALL-Eval's ``person`` ones: what average gender reads) that their sum of male -
    female comes nearest 0, the cells leaning the way the sum does first: each prompt keeps its
    bias (and every cell its noise), and the average gender sits at parity, where a score with an
    ideal value is hardest to read (docs/compare.md, "Scores with an ideal value")."""
    slot_of = lay.cell_slots()
    gender = [i for i, s in enumerate(lay.slots) if s.kind == "gender" and s.categories[:2] == ("male", "female")]
    rows = np.flatnonzero(np.isin(slot_of, gender) & np.asarray(["/person/" in str(p) for _, p in lay.cells]))
    lean = probs[rows, 0] - probs[rows, 1]
    total = lean.sum()
    for j in np.argsort(-np.sign(total) * lean):
        if abs(total - 2 * lean[j]) < abs(total):
            total -= 2 * lean[j]
            probs[rows[j], [0, 1]] = probs[rows[j], [1, 0]]


def _dirichlet_rows(rng: np.random.Generator, alpha: np.ndarray) -> np.ndarray:
    g = rng.gamma(np.maximum(alpha, 1e-9))
    g[alpha <= 0] = 0.0
    return g / np.maximum(g.sum(axis=1, keepdims=True), 1e-300)


def _amplified(probs: np.ndarray, cell_probs: np.ndarray, t, toward: np.ndarray | None = None) -> np.ndarray:
    """Probabilities pushed by ``t`` towards each cell's most likely value (more bias), or towards
    the value ``toward`` gives each row (a shift of the whole slot)."""
    top = np.zeros_like(probs)
    top[np.arange(len(probs)), np.argmax(cell_probs, axis=1) if toward is None else toward] = 1.0
    return (1 - t) * probs + t * top


def _categorical(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    u = rng.uniform(size=(len(probs), 1))
    return np.minimum((np.cumsum(probs, axis=1) < u).sum(axis=1), probs.shape[1] - 1)


@dataclass
class ImageEffects:
    """What both audits of a pair share per label row: each image's own probabilities (its seed)
    or its shift of the logit mean."""

    probs: dict[str, np.ndarray]
    shift: dict[str, np.ndarray]


def image_effects(lay: Layout, values: CellValues, rng: np.random.Generator, seed: float | np.ndarray | None = None,
                  seed_sd: float | np.ndarray = 0.0) -> ImageEffects:
    """Each label row's probabilities (its cell's, or a Dirichlet of concentration ``seed`` around
    them) and logit shift (normal, ``seed_sd``); either one number or one per slot of ``lay`` (a
    concentration of 0: the cell's own probabilities)."""
    probs, shift = {}, {}
    for kind, keys in lay.keys.items():
        cell = keys["cell"].to_numpy()
        p = values.probs[cell]
        if np.ndim(seed) or np.ndim(seed_sd):  # per slot
            slot = keys["slot"].to_numpy()
            conc = np.broadcast_to(np.asarray(0.0 if seed is None else seed, dtype=float), (len(lay.slots),))[slot]
            own = conc > 0
            probs[kind] = p.copy()
            probs[kind][own] = _dirichlet_rows(rng, conc[own, None] * p[own])
            shift[kind] = rng.normal(0.0, 1.0, len(cell)) * np.broadcast_to(np.asarray(seed_sd, float),
                                                                             (len(lay.slots),))[slot]
            continue
        probs[kind] = _dirichlet_rows(rng, seed * p) if seed else p
        shift[kind] = rng.normal(0.0, seed_sd, len(cell)) if seed_sd else np.zeros(len(cell))
    return ImageEffects(probs, shift)


def _category_table(lay: Layout) -> np.ndarray:
    """(slots x the most categories) object array of each slot's category names."""
    table = np.full((len(lay.slots), _width(lay)), None, dtype=object)
    for i, slot in enumerate(lay.slots):
        table[i, :len(slot.categories)] = slot.categories
    return table


def draw_labels(lay: Layout, values: CellValues, effects: ImageEffects, rng: np.random.Generator,
                change: float = 0.0, where: set | None = None, shift: bool = False) -> dict[str, pd.DataFrame]:
    """One audit's label files: each row drawn from its image's probabilities (or mean), pushed by
    ``change`` (only in the (label file, suite) pairs ``where``, when given): a categorical row
    towards its cell's majority (more bias), or with ``shift`` towards its slot's first value (more
    of one gender everywhere); a continuous row up when its prompt is in the first half of its
    slot's prompts (a contrast between the prompts: one group's attribute more present)."""
    out = {}
    names = _category_table(lay)
    continuous = np.asarray([s.continuous for s in lay.slots])
    for kind, keys in lay.keys.items():
        cell, slot = keys["cell"].to_numpy(), keys["slot"].to_numpy()
        cont = continuous[slot]
        t = change * np.asarray([where is None or (kind, lay.slots[s].suite) in where for s in range(len(lay.slots))],
                                dtype=float)[slot] if change else np.zeros(len(slot))
        toward = np.zeros(len(slot), np.int64) if shift else None
        probs = _amplified(effects.probs[kind], values.probs[cell], t[:, None], toward) if change \
            else effects.probs[kind]
        codes = _categorical(rng, np.where(cont[:, None], 1.0 / probs.shape[1], probs))
        mean = values.mean[cell] + effects.shift[kind]
        if change:  # continuous: the prompts of the first half of each slot up (a contrast between them)
            mean = mean + t * 4.0 * lay.first_half()[cell]
        x = rng.normal(mean, values.sd[cell])
        x = np.where(values.logit[cell], 1.0 / (1.0 + np.exp(-x)), x)
        out[kind] = _frame(kind, keys, np.where(cont, None, names[slot, codes]), x, cont)
    return out


def _frame(kind: str, keys: pd.DataFrame, value: np.ndarray, x: np.ndarray, cont: np.ndarray) -> pd.DataFrame:
    """The rows of label file ``kind`` as its annotator writes them (``value``: each categorical
    row's category, ``x``: each continuous row's score)."""
    frame = keys.drop(columns=["slot", "cell"]).copy()
    if kind == "gender":
        frame["label"] = frame["answer"] = value
        frame["score"] = 1.0
    elif kind == "attributes":
        labels = np.where(cont, 0, value).astype(np.int64)
        frame["score"] = np.where(cont, x, labels.astype(float))
        frame["label"] = np.where(cont, (x >= 0.5).astype(np.int64), labels)
        frame["answer"] = None
    else:  # skin_tone
        face = value != NO_FACE
        frame["face_found"] = face
        frame["mst"] = np.where(face, value, None)
        frame["ita"] = np.nan
        frame["n_faces"] = face.astype(np.int64)
    return frame


# --------------------------------------------------------------------------- a fit to a pilot


def slot_rows(probes: pd.DataFrame, labels: Mapping[str, pd.DataFrame | None]):
    """Each label row of the modelled label files as (its slot's :attr:`Slot.loose` key, its probe
    id, its raw value), for the rows of ``probes``."""
    suite_of = dict(zip(probes["probe_id"].astype(str), probes["suite"].astype(str)))
    for kind, frame in labels.items():
        if frame is None or not len(frame) or kind not in ("gender", "attributes", "skin_tone"):
            continue
        spec = get_label_file(kind)
        cols = [c for c in spec.key if c in frame.columns and c not in _TEXT and c != "annotator"]
        frame = frame[frame["probe_id"].astype(str).isin(suite_of)]
        raw = _raw_values(kind, frame)
        for (pid, *key), value in zip(frame[["probe_id", *cols]].itertuples(index=False, name=None), raw):
            yield (kind, suite_of[str(pid)], tuple(zip(cols, key))), str(pid), value


def _codes_of(kind: str, values: np.ndarray, slot: Slot) -> np.ndarray:
    """Each raw value's category index in ``slot`` (-1 when outside it), or the float values."""
    if slot.continuous:
        return np.asarray(values, dtype=float)
    index = {c: i for i, c in enumerate(slot.categories)}
    return np.asarray([index.get(v, -1) for v in values], dtype=np.int64)


def _raw_values(kind: str, frame: pd.DataFrame) -> list:
    """A label file's rows as the values a slot's categories name (a score where none)."""
    if kind == "skin_tone":
        return [NO_FACE if not f or m is None or (isinstance(m, float) and math.isnan(m)) else int(m)
                for f, m in zip(flag_array(frame["face_found"]), frame["mst"])]
    if kind == "attributes":
        return [(int(lab) if lab == lab and lab is not None else None, float(sc) if sc == sc and sc is not None
                 else None) for lab, sc in zip(frame["label"], frame["score"])]
    return list(frame["label"].astype(object))


@dataclass
class Fit:
    """A hierarchy fitted to a pilot's labels (see the module doc): the pilot's raw values per
    (label file, suite, key without the annotator) and prompt; :meth:`cells` draws the cells of a
    planned layout from their posterior, fitting each slot's hyperparameters when first asked."""

    observed: dict[tuple, dict[str, list]] = field(default_factory=dict)
    #: (label file, suite) -> why the fit cannot draw those labels (their cells are drawn uniform)
    problems: dict[tuple[str, str], str] = field(default_factory=dict)
    _hyper: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, probes: pd.DataFrame, labels: Mapping[str, pd.DataFrame | None]) -> "Fit":
        """The pilot's rows of each label file, by slot and prompt (``probes``: its probe rows)."""
        fit = cls()
        for loose, pid, value in slot_rows(probes, labels):
            fit.observed.setdefault(loose, {}).setdefault(prompt_key(pid), []).append(value)
        return fit

    def codes(self, slot: Slot, raw: list) -> np.ndarray:
        """Raw values of ``slot`` (as :func:`slot_rows` gives them) as its category indices, or floats."""
        if slot.kind == "attributes":
            raw = [sc if slot.continuous else lab for lab, sc in raw]
        return _codes_of(slot.kind, raw, slot)

    def hyper(self, slot: Slot) -> tuple[dict, dict[str, np.ndarray]]:
        """The slot's hyperparameters and its pilot values per prompt (ValueError: no pilot rows)."""
        if slot not in self._hyper:
            seen = self.observed.get(slot.loose)
            if not seen:  # the pilot asked with another estimator: its rows if they are of one estimator only
                like = [k for k in self.observed
                        if (k[0], k[1], tuple((c, v) for c, v in k[2] if c != "estimator")) == slot.looser]
                seen = self.observed[like[0]] if len(like) == 1 else None
            if not seen:
                raise ValueError(f"the pilot has no {slot.kind} labels of {slot.suite} like "
                                 f"{', '.join(f'{c}={v}' for c, v in slot.key)}")
            cells = {p: v[np.isfinite(v)] if slot.continuous else v[v >= 0]
                     for p, v in ((p, self.codes(slot, raw)) for p, raw in seen.items())}
            cells = {p: v for p, v in cells.items() if len(v)}
            logit = slot.continuous and all(((v >= 0) & (v <= 1)).all() for v in cells.values())
            if logit:  # probabilities (or cosines) in [0, 1]: modelled on the logit scale, drawn back into it
                cells = {p: special.logit(np.clip(v, LOGIT_EDGE, 1 - LOGIT_EDGE)) for p, v in cells.items()}
            self._hyper[slot] = ({**_hyper(slot, list(cells.values())), "logit": logit}, cells)
        return self._hyper[slot]

    def cells(self, lay: Layout, rng: np.random.Generator) -> CellValues:
        width = _width(lay)
        probs, mean, sd = np.zeros((len(lay.cells), width)), np.zeros(len(lay.cells)), np.ones(len(lay.cells))
        logit = np.zeros(len(lay.cells), bool)
        for c, (s, prompt) in enumerate(lay.cells):
            slot = lay.slots[s]
            try:
                hyper, cells = self.hyper(slot)
            except ValueError as exc:
                self.problems.setdefault((slot.kind, slot.suite), str(exc))
                probs[c, :max(len(slot.categories), 1)] = 1.0 / max(len(slot.categories), 1)
                continue
            seen = cells.get(prompt, np.zeros(0))
            if slot.continuous:
                between, within = hyper["between"], hyper["within"]
                shrink = between / (between + within / len(seen)) if len(seen) else 0.0
                centre = hyper["mean"] + shrink * ((seen.mean() if len(seen) else hyper["mean"]) - hyper["mean"])
                mean[c], sd[c] = rng.normal(centre, math.sqrt(between * (1 - shrink))), math.sqrt(within)
                logit[c] = hyper["logit"]
            else:
                counts = np.bincount(seen.astype(np.int64), minlength=len(slot.categories))
                probs[c, :len(slot.categories)] = rng.dirichlet(hyper["alpha"] * hyper["shares"] + counts + 1e-9)
        return CellValues(probs, mean, sd, logit)


def _hyper(slot: Slot, cells: list[np.ndarray]) -> dict:
    """Method-of-moments hyperparameters of one slot from its prompts' observations: categorical,
    the shares and the Dirichlet concentration that gives the agreement of two images of one
    prompt (``alpha``); continuous, the grand mean and the variances between and within prompts."""
    if slot.continuous:
        values = np.concatenate(cells)
        several = [c for c in cells if len(c) >= 2]
        within = float(np.mean([c.var(ddof=1) for c in several])) if several else float(values.var())
        means = np.asarray([c.mean() for c in cells])
        n_bar = float(np.mean([len(c) for c in cells]))
        between = max(float(means.var()) - within / n_bar, 0.0) if len(cells) > 1 else 0.0
        return {"mean": float(values.mean()), "within": max(within, 1e-12), "between": between}
    k = len(slot.categories)
    counts = np.asarray([np.bincount(c.astype(np.int64), minlength=k) for c in cells], dtype=float)
    shares = (counts.sum(axis=0) + 0.5) / (counts.sum() + 0.5 * k)
    n = counts.sum(axis=1)
    pairs = float((n * (n - 1)).sum())
    if pairs <= 0:
        raise ValueError(f"the pilot has no prompt with two {slot.kind} labels of {slot.suite}: it cannot tell how "
                         "its prompts differ")
    agree = float((counts * (counts - 1)).sum() / pairs)
    floor = float((shares ** 2).sum())
    alpha = 1e4 if agree <= floor else max((1 - agree) / (agree - floor), 0.05)
    return {"shares": shares, "alpha": min(alpha, 1e4)}


# --------------------------------------------------------------------------- scoring many audits at once


def audit_config(lay: Layout, record: Mapping | None = None) -> dict:
    """The run config a simulated audit of ``lay`` is scored with (``record``: its probe set's,
    default the built-in one's)."""
    if record is None and lay.config is not None:
        return lay.config
    suites = list(dict.fromkeys(lay.probes["suite"]))
    config = {"suites": suites, "probes": dict(record) if record else open_probe_set().record(suites),
              "model": {"model_id": "simulated", "builtin": False}, "settings": {}}
    if record is None:
        lay.config = config
    return config


def _plain_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its text columns as Python objects (pandas' Arrow strings iterate slowly)."""
    text = [c for c in frame.columns if pd.api.types.is_string_dtype(frame[c]) and frame[c].dtype != object]
    return frame.astype({c: object for c in text}) if text else frame


def score_copies(lay: Layout, label_sets: list[Mapping[str, pd.DataFrame]], config: Mapping | None = None,
                 chunk: int = 25, read_by: dict | None = None,
                 advance: Callable[[int], object] | None = None) -> dict[tuple, np.ndarray]:
    """Entry key -> its value in each of the audits ``label_sets`` (label files of audits of
    ``lay``), scored by the tasks' own code ``chunk`` audits at a time in one table
    (:class:`benchmark.scores.randomization.CopyPlan`); ``read_by`` (a dict) gets each entry's
    label files read before it (its own last); ``advance`` (a progress bar's ``update``) is
    called with the number of audits each table scored."""
    config = config or audit_config(lay)
    out: dict[tuple, list[np.ndarray]] = {}
    options = ScoringOptions(2, task_options=task_options())
    for start in range(0, len(label_sets), chunk):
        part = label_sets[start:start + chunk]
        ids = lay.probes["probe_id"]  # copy_tag writes each id as text
        manifest = pd.concat([lay.probes.assign(probe_id=pd.Series(copy_tag(ids, c), index=lay.probes.index,
                                                                   dtype=object))
                              for c in range(len(part))], ignore_index=True).assign(nsfw=False)
        kinds = {k for labels in part for k in labels}
        stacked = {k: pd.concat([labels[k].assign(probe_id=pd.Series(copy_tag(labels[k]["probe_id"], c),
                                                                     index=labels[k].index, dtype=object))
                                 for c, labels in enumerate(part) if k in labels], ignore_index=True) for k in kinds}
        manifest = _plain_strings(manifest)
        stacked = {k: _plain_strings(v) for k, v in stacked.items()}
        with resample_plan(CopyPlan(len(part))):
            ctx = score_tables(config, manifest, lambda kind: stacked.get(kind), options)
        for key, values in ctx.resamples.items():
            out.setdefault(key, []).append(np.asarray(values, dtype=float))
        if read_by is not None:
            read_by.update(ctx.read_by)
        if advance is not None:
            advance(len(part))
    return {k: np.concatenate(v) for k, v in out.items() if sum(len(x) for x in v) == len(label_sets)}

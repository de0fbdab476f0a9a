"""One comparison of audits (:func:`compare_runs`): a row for every score entry either run holds.
Compared rows carry the difference, its interval (checked), the p-value of the paired
randomization test (Holm-corrected), the minimum detectable difference of the test that decides
and the verdict; every other row says why it was not compared: refused (different estimators),
described (no better direction), or not tested (a score no swap can change, undefined, an
estimator, score or suite one run lacks, naming the label file or the probes that are missing).
The leaderboard's Compare tab and ``t2ibench compare`` both call :func:`compare_runs` (run
folders) or :func:`compare_loaded` (runs already loaded, results documents included).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from benchmark.compare.human import CORRECTED_NOTE, add_corrected, agreement_rows
from benchmark.compare.joint import score_jointly
from benchmark.compare.paired import ALPHA, POWER, decisive_mdd, has_direction, holm, mdd_factor, mdd_spread, \
    paired_test, refresh_p, summary_of, swaps_needed
from benchmark.compare.runs import HOLM_NOTE, HUB_PREFIX, MDD_NOTE, NOTHING_TESTED, CompareError, Run, Scored, \
    check_versions, load_run, pairing, plan_size, score_alone
from benchmark.contract.results import RESULTS_FILE, json_safe
from benchmark.contract.run_folder import MANIFEST_FILE
from benchmark.present.progress import progress_bar
from benchmark.contract.run_folder_check import ExpectedCheck
from benchmark.scores.design import images_needed
from benchmark.scores.metadata import SCORE_METADATA, get_metadata
from benchmark.scores.randomization import JointPlan
from benchmark.tasks.context import ScoringOptions, entry_key
from benchmark.tasks.registry import task_options

__all__ = ["Comparison", "compare_loaded", "compare_runs", "detect_rows", "finish_rows", "images_per_prompt", "pair_row"]

RESAMPLING = ("paired Poisson bootstrap over probes, for the interval of a change: in resample b each probe weighs a "
              "Poisson(1) draw fixed by (random_state, probe id, b), the same in both runs "
              "(benchmark.scores.bootstrap.ResamplePlan); a stratum's size varies between resamples, and a stratum "
              "left empty is drawn again. An interval that excludes its estimate, whose resamples are biased by more "
              "than a quarter of their spread, or whose spread is not the swaps' is flagged (ci_check) and never "
              "decides anything")
P_VALUE = ("paired randomization test: the tested quantity q recomputed on swaps of the two runs' images of random "
           "probes (unpaired: permutations of the runs' images within each cell of the score's design), "
           "p = (1 + #{|q_j| >= |q|}) / (1 + J), exact at any size for any score; where p <= alpha, swaps are added "
           "until Holm's smallest threshold is resolved")
NOT_TESTED = ("a difference is not tested (no p-value, no MDD, outside Holm's family) when no swap of the runs' images "
              "and no resample changes the score at this size, when it is undefined, when each run's value cannot be "
              "recomputed beside the other run's rows, or when one run lacks it (the reason names the file, suite, "
              "probes or estimator)")

@dataclass
class Comparison:
    """The result of :func:`compare_runs`; ``rows`` one dict per (run, score entry)."""

    runs: list[Run]
    pairings: list[dict]
    rows: list[dict]
    method: dict
    notes: list[str] = field(default_factory=list)
    #: with ``detect``: per headline row, the images per prompt needed to detect a named change
    detect: list[dict] = field(default_factory=list)
    #: per pair of runs people checked: the annotator's agreement with people in each
    #: (:func:`benchmark.compare.human.agreement_rows`), and a warning where it differs
    agreement: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def warning(self) -> str | None:
        """The built-in model warning of any run: its scores (and so the differences) are meaningless."""
        return next((w for w in (r.warning() for r in self.runs) if w), None)

    @property
    def warning_text(self) -> str | None:
        return f"{self.warning} The differences between such runs are meaningless too." if self.warning else None

    def compared(self) -> list[dict]:
        return [r for r in self.rows if r["status"] == "compared"]

    def worse(self, names: Iterable[str] | None = None) -> list[dict]:
        """The compared rows significantly worse than the baseline (of ``names``; None: all)."""
        wanted = None if names is None else set(names)
        return [r for r in self.compared() if r["significant"] and r["change"] == "worse"
                and (wanted is None or r["name"] in wanted)]

    def uncompared(self, names: Iterable[str] | None = None) -> list[dict]:
        """The rows a gate on ``names`` (None: every score with a better direction) cannot check:
        refused or not tested. A name no row holds gets a row saying so."""
        rows = [r for r in self.rows if r["status"] in ("refused", "not tested")
                and (names is None and has_direction(get_metadata(r["name"])) or names is not None and r["name"] in names)]
        held = {r["name"] for r in self.rows}
        for name in [n for n in names or () if n not in held]:
            rows.append({"name": name, "suite": None, "run": ", ".join(r.label for r in self.runs[1:]),
                         "status": "not tested", "reason": "no run holds this score (its suite was not audited)"})
        return rows

    def to_dict(self) -> dict:
        doc: dict[str, Any] = {}
        if self.warning:
            doc["warning"] = self.warning_text
        doc.update({"baseline": self.runs[0].label, "runs": [r.summary() for r in self.runs],
                    "pairings": [{k: v for k, v in p.items() if k != "probes"} for p in self.pairings],
                    "method": self.method, "summary": summary_of(self.rows), "scores": self.rows,
                    "notes": self.notes, **({"detect": self.detect} if self.detect else {}),
                    **({"annotator_agreement": self.agreement} if self.agreement else {}),
                    **({"warnings": self.warnings} if self.warnings else {})})
        return json_safe(doc)


def _labeller(entry: Mapping) -> str:
    return " / ".join(str(x) for x in (entry.get("estimator"), entry.get("annotator")) if x) or "-"


def _groups(entries: Iterable[Mapping], names: set | None) -> dict[tuple, dict[tuple, dict]]:
    """(name, suite, subset) -> (estimator, annotator) -> entry."""
    out: dict[tuple, dict[tuple, dict]] = {}
    for e in entries:
        if names is None or e["name"] in names:
            out.setdefault((e["name"], e["suite"], e["subset"]), {})[(e["estimator"], e["annotator"])] = e
    return out


def _base_row(a: Run, b: Run, e: Mapping, status: str, reason: str | None = None) -> dict:
    meta = get_metadata(e["name"])
    return {"baseline": a.label, "run": b.label, "name": e["name"], "display_name": meta.display_name,
            "suite": e["suite"], "subset": e["subset"], "estimator": e.get("estimator"),
            "annotator": e.get("annotator"), "lower_is_better": meta.lower_is_better, "ideal": meta.ideal,
            "unit": meta.unit, "headline": meta.headline, "status": status, "reason": reason}


def _refused(a: Run, b: Run, group: tuple, la: dict, lb: dict) -> dict:
    name, suite, subset = group
    where = ", ".join(str(x) for x in (suite, subset) if x)
    used_a = ", ".join(sorted(_labeller(e) for e in la.values()))
    used_b = ", ".join(sorted(_labeller(e) for e in lb.values()))
    reason = (f"{name} ({where}): not comparable: different estimators: {a.label} used {used_a}, "
              f"{b.label} used {used_b}")
    return _base_row(a, b, next(iter(la.values())), "refused", reason) | {"estimator": used_a,
                                                                          "annotator": used_b}


def _absent(a: Run, b: Run, e: Mapping, present: Run, absent: Run, scored: Scored, other: Scored) -> dict:
    """The row of an entry only ``present`` holds (``other`` its scoring): why ``absent`` (scored
    as ``scored``) has none, naming the label files it lacks and ``present`` has."""
    suite = e["suite"]
    missing = [f for f in scored.missing if f not in other.missing]
    if entry_key(e) in scored.uncarried:
        why = scored.uncarried[entry_key(e)][1]
    elif suite not in scored.suites:
        why = f"{absent.label} has no image of {suite} among the compared probes"
    elif scored.suites[suite] is not None:
        why = f"{suite} not scored in {absent.label}: {scored.suites[suite]}"
    elif missing:
        why = f"{absent.label} has no {e['name']} for {suite} ({', '.join(missing)} missing)"
    else:
        why = f"{absent.label} has no {e['name']} for {suite}: its labels give none"
    return _base_row(a, b, e, "not tested", f"only in {present.label}: {why}")


def _same(x: float, y: float) -> bool:
    return abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y))


def pair_row(a: Run, b: Run, ea: dict, eb: dict, draws, confidence_level: float) -> dict:
    row = _base_row(a, b, ea, "not tested")
    row.update({"value_a": ea["value"], "value_b": eb["value"], "n_a": ea["n"], "n_b": eb["n"]})
    for run, e in ((a, ea), (b, eb)):
        if not e["defined"]:
            row["reason"] = f"undefined in {run.label}: {e['reason']}"
            return row
    if draws is None:
        row["reason"] = "no sampling variation to test (the score has no interval over images)"
        return row
    for run, e, value in ((a, ea, draws.value[0]), (b, eb, draws.value[1])):
        if not _same(float(e["value"]), float(value)):
            row["reason"] = (f"{run.label}'s value scored beside the other run's images is {value:.6g}, not its own "
                             f"{float(e['value']):.6g}: its scoring depends on rows of the other run, so no swap test")
            return row
    designs = {a.label: draws.design["a"], b.label: draws.design["b"]}
    row["strata"] = {"a": draws.design["a"], "b": draws.design["b"]}  # cells of the design, those of one image
    files = getattr(draws, "label_files", ())
    row["label_file"] = files[-1] if files else None  # the label file the score reads (the last read before it)
    row.update(paired_test(get_metadata(ea["name"]), ea["value"], eb["value"], draws, designs=designs,
                           confidence_level=confidence_level))
    return row


def _pair_rows(a: Run, b: Run, sa: Scored, sb: Scored, joint: Mapping, names: set | None,
               confidence_level: float) -> list[tuple[dict, object]]:
    """(row, its joint draws or None) for every score entry either run holds."""
    ga, gb = _groups(sa.entries, names), _groups(sb.entries, names)
    rows: list[tuple[dict, object]] = []
    for e, why in list(sa.uncarried.values()) + list(sb.uncarried.values()):
        if (names is None or e["name"] in names) and not any(
                entry_key(e)[:3] in g for g in (ga, gb)) and not any(r["name"] == e["name"] and r["suite"] == e[
                    "suite"] and r["subset"] == e.get("subset") for r, _ in rows):
            rows.append((_base_row(a, b, e, "not tested", why), None))  # neither run's labels give it
    for group in list(ga) + [g for g in gb if g not in ga]:
        la, lb = ga.get(group, {}), gb.get(group, {})
        if not la or not lb:
            present, absent, scored, other = (a, b, sb, sa) if la else (b, a, sa, sb)
            rows += [(_absent(a, b, e, present, absent, scored, other), None) for e in (la or lb).values()]
            continue
        common = [k for k in la if k in lb]
        if not common:
            rows.append((_refused(a, b, group, la, lb), None))
            continue
        for k in common:
            draws = joint.get(entry_key(la[k]))
            rows.append((pair_row(a, b, la[k], lb[k], draws, confidence_level), draws))
        for k in [k for k in la if k not in lb] + [k for k in lb if k not in la]:
            e, present = (la[k], a) if k in la else (lb[k], b)
            others = ", ".join(sorted(_labeller(x) for x in (lb if k in la else la).values()))
            rows.append((_base_row(a, b, e, "not tested", f"estimator {_labeller(e)} only in {present.label} (the "
                                                          f"other run used {others})"), None))
    return rows


def finish_rows(rows: list[tuple[dict, object]], alpha: float, power: float) -> int:
    """More swaps where a p-value could decide, Holm's correction over the compared rows, then
    each row's significance, deciding MDD and verdict; returns the family's size."""
    tested = [(r, d) for r, d in rows if r["status"] == "compared"]
    need = swaps_needed(len(tested), alpha)
    for r, draws in tested:
        if r["p"] <= alpha and r["n_permutations"] < need:
            draws.extend(need)
            refresh_p(r, get_metadata(r["name"]), draws)
    corrected, reject = holm([r["p"] for r, _ in tested], alpha)
    for (r, _), p, rej in zip(tested, corrected, reject):
        r["p_holm"], r["significant"] = p, rej
        r["mdd"] = r["mdd_formula"] = decisive_mdd(mdd_spread(r), len(tested), alpha, power)
        # what Holm's first step needs, which a simulated MDD grows with the change: z_(1 - alpha / 2m)
        # x the swaps' spread. Not the swaps' own quantile: with no change it can sit far inside the
        # normal one (medians at the CI recipe's size, 2,000 swaps: average gender 0.83x, STS 0.55x
        # and 0.97x) while a changed pair's swaps are near normal (0.98x): the null quantile grown by
        # the spread promised too small an MDD (docs/compare.md, "Minimum detectable difference")
        r["critical"] = decisive_mdd(mdd_spread(r), len(tested), alpha, 0.5)
        r["mdd_how"] = "normal formula"  # until a simulation from the runs' labels replaces it (MDD_NOTE)
        r["verdict"] = f"significantly {r['change']}" if rej else "no significant change"
    for r, _ in rows:
        if r["status"] == "identical":
            r["verdict"] = "no change (identical)"
        if r["status"] == "descriptive":
            r["change"] = "higher" if r["difference"] > 0 else "lower" if r["difference"] < 0 else "none"
            r["verdict"] = f"{r['change']} (described, not tested)"
    return len(tested)


def _check_names(names: Sequence[str] | None, option: str) -> set | None:
    if not names:
        return None
    unknown = [n for n in names if n not in SCORE_METADATA]
    if unknown:
        raise CompareError(f"{option}: unknown score {unknown[0]!r}; `t2ibench scores` lists them")
    return set(names)


def _labels(paths: Sequence) -> list[str]:
    """Short distinct names of the runs: a run folder's name, a results file's name without
    ``.json``, a Hub file's repository and path; with as many parent folders as needed."""
    def parts(p) -> tuple[str, ...]:
        text = str(p)
        if text.startswith(HUB_PREFIX):
            return (text[len(HUB_PREFIX):],)
        path = Path(text)
        if path.is_dir() or (path.name == RESULTS_FILE and (path.parent / MANIFEST_FILE).is_file()):
            return (path if path.is_dir() else path.parent).parts
        return path.with_suffix("").parts

    for depth in (1, 2, 3):
        names = ["/".join(parts(p)[-depth:]) for p in paths]
        if len(set(names)) == len(names):
            return names
    return [str(p) for p in paths]


def _only_suites(run: Run, pair: dict) -> set:
    """The probes of ``run``'s suites that have no probe in the pairing (compared as absent)."""
    if not pair["probes"]:
        return set()
    m = run.manifest
    common = m["probe_id"].astype(str).isin(set(pair["probes"]))
    lone = set(m.loc[~common, "suite"]) - set(m.loc[common, "suite"])
    return set(m.loc[m["suite"].isin(lone), "probe_id"].astype(str))


def images_per_prompt(run: Run, probes: set | None) -> dict[str, float]:
    """suite -> images per prompt among the compared probes of a run: its images over its first
    samples (``sample_index`` 0: one per prompt, kept first by ``--limit``)."""
    if "sample_index" not in run.manifest.columns:
        return {}
    m = run.manifest if probes is None else run.manifest[run.manifest["probe_id"].astype(str).isin(probes)]
    firsts = (m["sample_index"] == 0).groupby(m["suite"]).sum()
    return {str(s): len(g) / firsts[s] for s, g in m.groupby("suite") if firsts.get(s)}


def detect_rows(rows: Sequence[Mapping], targets: Sequence[tuple], per_prompt: Mapping[str, float]) -> list[dict]:
    """Per headline row (or the rows of each named score): the MDD now and the images per prompt
    that would detect each target change by the square-root law
    (:func:`benchmark.scores.design.images_needed`); ``t2ibench compare --detect`` simulates the
    designs instead where it can (:mod:`benchmark.commands.detect`)."""
    out = []
    for r in rows:
        for name, target in targets:
            if (name is None and not r.get("headline")) or (name is not None and r["name"] != name) \
                    or r["status"] == "descriptive":
                continue
            item = {k: r.get(k) for k in ("run", "name", "display_name", "suite", "subset", "estimator",
                                          "annotator", "status")} | {"target": target,
                                                                      "images_per_prompt": per_prompt.get(r["suite"])}
            if r["status"] == "compared":
                need = images_needed(r["mdd"], target, per_prompt.get(r["suite"]))
                item.update(mdd=r["mdd"], factor=need["factor"], needed_per_prompt=need["per_prompt"],
                            how="the square-root law")
            else:
                item["reason"] = r.get("reason")
            out.append(item)
    return out


def _method(plan: JointPlan, confidence_level: float, alpha: float, family: int) -> dict:
    factor = mdd_factor(alpha / max(family, 1), POWER)
    return {"n_resamples": plan.n_resamples, "n_permutations": plan.n_permutations,
            "n_permutations_deciding": swaps_needed(family, alpha), "confidence_level": confidence_level,
            "random_state": plan.random_state, "alpha": alpha, "power": POWER, "family": family,
            "mdd_level": alpha / max(family, 1), "mdd_factor": factor, "mdd_factor_uncorrected": mdd_factor(alpha, POWER),
            "test": P_VALUE, "resampling": RESAMPLING, "not_tested": NOT_TESTED,
            "correction": HOLM_NOTE.format(n=family, alpha=alpha) if family else NOTHING_TESTED,
            "mdd": MDD_NOTE.format(n=family, alpha=alpha, factor=factor, single=mdd_factor(alpha, POWER))
            if family else ""}


def compare_loaded(runs: Sequence[Run], *, scores: Sequence[str] | None = None, n_resamples: int | None = None,
                   confidence_level: float = 0.95, random_state: int | None = None, alpha: float = ALPHA,
                   progress: bool = False, detect: Sequence[tuple] | None = None) -> Comparison:
    """Compare the loaded runs (``runs[0]`` the baseline): see :func:`compare_runs`."""
    for name, _ in detect or ():
        _check_names([name] if name else None, "--detect")
    check_versions(runs)
    names = _check_names(scores, "--scores")
    size = plan_size(runs, n_resamples)
    seed = 0 if random_state is None else int(random_state)
    options = ScoringOptions(size, confidence_level, seed, task_options())
    alone = ScoringOptions(0, confidence_level, seed, task_options())  # values only
    pairings = [pairing(runs[0], r) for r in runs[1:]]
    rows: list[tuple[dict, object]] = []
    per_prompt: dict[str, float] = {}
    corrected, agreement, warnings = 0, [], []  # people's labels: informative rows and warnings
    bar = progress_bar(3 * len(pairings), "scoring runs", enabled=progress, unit="pass")
    plan = JointPlan(size, size, seed)
    for b, pair in zip(runs[1:], pairings):
        probes = set(pair["probes"]) if pair["probes"] else None  # None: unpaired, every probe of each run
        per_prompt = per_prompt or images_per_prompt(runs[0], probes)
        scored = []
        for run in (runs[0], b):
            one = score_alone(run, probes, alone)
            lone = _only_suites(run, pair)  # suites only this run holds: listed, never dropped
            if lone:
                one.entries = one.entries + score_alone(run, lone, alone).entries
            scored.append(one)
            bar.update(1)
        plan = JointPlan(size, size, seed, paired=pair["kind"] != "unpaired")
        joint = score_jointly(runs[0], b, probes, options, plan)
        bar.update(1)
        these = _pair_rows(runs[0], b, scored[0], scored[1], joint, names, confidence_level)
        corrected += add_corrected(runs[0], b, [r for r, _ in these], confidence_level)
        found, warned = agreement_rows(runs[0], b)
        agreement, warnings = agreement + found, warnings + warned
        rows += these
    bar.close()
    family = finish_rows(rows, alpha, POWER)
    plain = [r for r, _ in rows]
    return Comparison(list(runs), pairings, plain, _method(plan, confidence_level, alpha, family),
                      notes=[CORRECTED_NOTE] if corrected else [], detect=detect_rows(plain, detect or (), per_prompt),
                      agreement=agreement, warnings=warnings)


def compare_runs(run_a, run_b, *more, scores: Sequence[str] | None = None, n_resamples: int | None = None,
                 confidence_level: float = 0.95, random_state: int | None = None, alpha: float = ALPHA,
                 progress: bool = False, verify: bool = False, expected: ExpectedCheck | None = None,
                 detect: Sequence[tuple] | None = None) -> Comparison:
    """Compare run B (and C, ...) with the baseline run A: run folders, results.json inside them,
    or results files alone (local or ``hf://datasets/...``), which carry their per-probe labels.

    With ``verify`` (the command line's and the leaderboard's), each folder is first checked as
    ``t2ibench verify`` checks it and refused with its first problem (``expected``:
    :func:`benchmark.runner.expected.expected_problems`, which callers above this layer pass). Each
    run is scored in memory on the probes it shares with A, alone (its values) and together with A
    (the paired randomization test: ``n_resamples`` paired resamples and as many swaps, more where a
    p-value could decide; default: the number the runs were scored with) at ``random_state``
    (default 0); ``scores`` keeps only those score names. ``detect``: ``(score or
    None, change)`` pairs: the images per prompt each headline score (or the score named) would
    need to detect that change (``Comparison.detect``). Raises :class:`CompareError` (one line)
    when the runs cannot be read or compared.
    """
    paths = [run_a, run_b, *more]
    for p in paths:  # every path first: a typo is refused before any folder is checked
        if not str(p).startswith(HUB_PREFIX) and not Path(p).exists():
            raise CompareError(f"{p} is neither a run folder nor a results file")
    runs = [load_run(p, label, verify=verify, expected=expected) for p, label in zip(paths, _labels(paths))]
    return compare_loaded(runs, scores=scores, n_resamples=n_resamples, confidence_level=confidence_level,
                          random_state=random_state, alpha=alpha, progress=progress, detect=detect)

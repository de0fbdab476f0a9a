"""Calibration of ``t2ibench compare``'s verdicts, by simulation on labels drawn with known truth
and scored by the project's own score functions, seeded.

Through :func:`benchmark.compare.compare_runs` on synthetic run folders (the path the command
takes; these tests run unchanged against older code, which fails them):

* **no verdict without variation**: with one image per profession (what ``--limit`` gives a
  suite of nine images per prompt) and no difference between the runs, the comparison calls no
  change significant, at any number of resamples;
* **power at the printed MDD**: in a family of ten scores, a change as large as the minimum
  detectable difference the comparison prints is found at least about four times in five, as
  the MDD promises (the MDD of one test alone, 2.80 SE, is found only about half the time once
  Holm's correction over ten tests decides);
* **null rate**: the nine unchanged scores of those families are called significant at the
  nominal rate (uncorrected) and in few families (Holm).

Through :func:`benchmark.compare.paired.paired_difference` and :func:`holm` directly (fast,
200 simulated run pairs each, as the comparison computes them): the false-positive rates of
DALL-Eval MAD, PST STS and PaintSkills accuracy and the family-wise rate stay in the binomial
band around 5%.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmark.compare import compare_runs
from benchmark.compare.paired import holm, paired_difference
from benchmark.probes import build_suite
from benchmark.scores.bootstrap import PLANNED_RESAMPLES, ResamplePlan, resample_plan
from benchmark.scores.metadata import get_metadata
from benchmark.tasks.dalleval.scores import mad_score
from benchmark.tasks.paintskills.scores import skill_accuracy
from benchmark.tasks.pst.scores import sts
from test_score_stage import write_labels, write_run


def band(n: int, rate: float = 0.05, level: float = 0.99) -> tuple[int, int]:
    """Two-sided binomial band of the number of events out of ``n`` at ``rate``."""
    tail = (1 - level) / 2
    return int(stats.binom.ppf(tail, n, rate)), int(stats.binom.isf(tail, n, rate))


# --------------------------------------------------------------------------- one image per profession


def _gender_pair(root, seed: int, probes: pd.DataFrame, p_male: np.ndarray):
    """Two runs of the same probes whose gender labels are drawn from the same probabilities."""
    rng = np.random.default_rng(seed)
    for name in ("a", "b"):
        labels = np.where(rng.uniform(size=len(probes)) < p_male, "male", "female")
        write_labels(root / name, "gender", [{"probe_id": pid, "person": "single", "question": "q", "answer": lab,
                                              "label": lab, "annotator": "vqa"}
                                             for pid, lab in zip(probes["probe_id"], labels)])


@pytest.mark.parametrize("n_resamples", [200, 2000])
def test_one_image_per_profession_is_never_significant(tmp_path, n_resamples):
    """65 gender-neutral professions with one image each (the first sample of each, as --limit
    keeps them): no resample can vary a profession's share, so no difference is significant,
    whatever the number of resamples; it is not tested, and says why (gender MAD too: 0.5 in
    every profession of one image, so a gate on it could never fail)."""
    dalle = build_suite("dalleval_bias")
    neutral = dalle[dalle["gender_neutral"].astype(bool) & (dalle["profession"] != "")]
    probes = neutral[neutral["sample_index"] == 0].iloc[:65]
    for name in ("a", "b"):
        write_run(tmp_path / name, [probes], model="org/model", builtin=False)
    p_male = np.random.default_rng(0).uniform(0.3, 0.9, len(probes))
    n = 12 if n_resamples == 200 else 3
    significant, rows = 0, []
    for seed in range(n):
        _gender_pair(tmp_path, seed, probes, p_male)
        comparison = compare_runs(tmp_path / "a", tmp_path / "b", n_resamples=n_resamples, random_state=seed)
        rows += comparison.rows
        significant += sum(bool(r.get("significant")) for r in comparison.rows)
    assert significant == 0, f"{significant} of {len(rows)} differences called significant with one image per profession"
    assert {r["status"] for r in rows} == {"not tested"}
    assert all("one image" in r["reason"] and "no resampling variation" in r["reason"] and "p" not in r
               and "mdd" not in r for r in rows)


# --------------------------------------------------------------------------- a family of ten scores

N_DETECTORS = 10  # the family: one PaintSkills object accuracy per detector
N_OBJECTS = 100
N_FAMILIES = 40
PLANNED = 200


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    """N_FAMILIES comparisons of two runs over the same probes, ten detectors each: detector 0
    finds the object more often in B, by the MDD a pilot comparison printed; the others do not
    change. Each probe has its own probability of being found (a prompt and seed that help or
    not), the same in both runs: the pairing the plan exploits."""
    root = tmp_path_factory.mktemp("families")
    objects = build_suite("paintskills_object").iloc[:N_OBJECTS]
    for name in ("a", "b"):
        write_run(root / name, [objects], model="org/model", builtin=False)
    p_found = np.random.default_rng(7).uniform(0.2, 0.6, N_OBJECTS)
    targets, ids = objects["target"].to_numpy(), objects["probe_id"].to_numpy()

    def compare(seed: int, shift: float):
        rng = np.random.default_rng(seed)
        for name, planted in (("a", 0.0), ("b", shift)):
            add = np.zeros((N_DETECTORS, 1))
            add[0] = planted
            found = rng.uniform(size=(N_DETECTORS, N_OBJECTS)) < p_found[None, :] + add
            frame = pd.DataFrame({"probe_id": np.tile(ids, N_DETECTORS),
                                  "detector": np.repeat([f"det{d}" for d in range(N_DETECTORS)], N_OBJECTS),
                                  "n_queries": 1, "query_scores": [[0.9]] * found.size,
                                  "query_labels": [[t if f else "no-such-class"] for t, f in
                                                   zip(np.tile(targets, N_DETECTORS), found.ravel())],
                                  "query_boxes": [[0.5, 0.5, 0.2, 0.2]] * found.size,
                                  "prob_classes": None, "query_probs": None})
            frame.to_parquet(root / name / "labels" / "detections.parquet", index=False)
        return compare_runs(root / "a", root / "b", n_resamples=PLANNED, random_state=seed)

    pilot = compare(10_000, 0.0)
    (row,) = [r for r in pilot.rows if r["annotator"] == "det0"]
    mdd = row["mdd"]  # the MDD the comparison prints, in accuracy points
    return {"mdd": mdd, "comparisons": [compare(seed, mdd / 100) for seed in range(N_FAMILIES)]}


def test_a_change_of_the_printed_mdd_is_found_four_times_in_five(families):
    found = sum(bool(r["significant"] and r["change"] == "better") for c in families["comparisons"]
                for r in c.rows if r["annotator"] == "det0")
    low = 27  # 99% binomial band of 40 draws at 0.8 starts at 25; at 0.5 (the uncorrected MDD under Holm) it ends at 28
    assert found >= low, (f"a change of the printed MDD ({families['mdd']:.2f} points) was found in {found} of "
                          f"{N_FAMILIES} families of {N_DETECTORS} (the MDD promises 80%)")


def test_unchanged_scores_are_called_significant_at_the_nominal_rate(families):
    null = [r for c in families["comparisons"] for r in c.rows if r["annotator"] != "det0"]
    assert all(r["status"] == "compared" for r in null)
    rejections = sum(r["p"] < 0.05 for r in null)
    low, high = band(len(null))
    assert low <= rejections <= high, f"{rejections} of {len(null)} unchanged scores had p < 0.05, band [{low}, {high}]"
    families_hit = sum(any(r["significant"] for r in c.rows if r["annotator"] != "det0")
                       for c in families["comparisons"])
    assert families_hit <= band(N_FAMILIES)[1], f"{families_hit} of {N_FAMILIES} families with a false positive"


# --------------------------------------------------------------------------- the statistics alone

NAMES = ("mad_gender", "sts_occupation_single", "paintskills_object")
N_SIMULATIONS = 200
N_PROBES = 240
GROUPS = np.repeat([f"g{i}" for i in range(6)], N_PROBES // 6)  # professions / identities / splits
KEYS = np.array([f"probe-{i:03d}" for i in range(N_PROBES)])
STEREOTYPE = np.repeat(np.where(np.arange(6) % 2 == 0, "male", "female"), N_PROBES // 6)


def _scores(rng, p_male, p_stereo, p_correct):
    """The scores of one simulated run: value and planned resamples."""
    kw = {"keys": KEYS}  # inside the plan, the score functions resample with it
    labels = np.where(rng.uniform(size=N_PROBES) < p_male, "male", "female")
    m = mad_score(labels, ["male", "female"], groups=GROUPS, **kw)
    other = np.where(STEREOTYPE == "male", "female", "male")
    s = sts(np.where(rng.uniform(size=N_PROBES) < p_stereo, STEREOTYPE, other), STEREOTYPE, GROUPS, **kw)
    a = skill_accuracy(rng.uniform(size=N_PROBES) < p_correct, **kw)  # PaintSkills object: no splits
    return {"mad_gender": (m["mad"], m["mad_ci"][PLANNED_RESAMPLES]),
            "sts_occupation_single": (s["sts"], s["sts_ci"][PLANNED_RESAMPLES]),
            "paintskills_object": (a["accuracy"], a["accuracy_ci"][PLANNED_RESAMPLES])}


@pytest.fixture(scope="module")
def null_rows():
    """200 run pairs with no difference: per score the comparison's statistics. A skewed model
    (MAD away from its floor), clearly stereotyped (STS about 45, near PST Table 2's paired
    occupation STS, 47.38), a middling detector: within about three standard errors of its floor
    or ideal a score whose tested quantity is an absolute value runs liberal (docs/compare.md)."""
    out = []
    for seed in range(N_SIMULATIONS):
        rng = np.random.default_rng(seed)
        probs = rng.uniform(0.55, 0.95, N_PROBES), rng.uniform(0.5, 0.95, N_PROBES), rng.uniform(0.3, 0.6, N_PROBES)
        with resample_plan(ResamplePlan(PLANNED, random_state=seed)):
            a, b = _scores(rng, *probs), _scores(rng, *probs)
        out.append({n: paired_difference(get_metadata(n), a[n][0], b[n][0], a[n][1], b[n][1]) for n in NAMES})
    return out


@pytest.mark.parametrize("name", NAMES)
def test_false_positive_rate_is_in_the_binomial_band(null_rows, name):
    rejections = sum(rows[name]["p"] < 0.05 for rows in null_rows)
    low, high = band(N_SIMULATIONS)
    assert low <= rejections <= high, f"{name}: {rejections} / {N_SIMULATIONS} false positives, band [{low}, {high}]"


def test_holm_family_wise_rate_is_in_the_binomial_band(null_rows):
    # Holm rejects nothing in a family whose p-values are all >= alpha: only the others need the call
    candidates = [[r["p"] for r in rows.values()] for rows in null_rows if min(r["p"] for r in rows.values()) < 0.05]
    families = sum(any(holm(ps)[1]) for ps in candidates)
    low, high = band(N_SIMULATIONS)
    assert low <= families <= high, f"{families} / {N_SIMULATIONS} families with a false positive, band [{low}, {high}]"

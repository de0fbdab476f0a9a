"""PST Stereotype Test Score (Wan & Chang, arXiv:2402.11089, Sec. 3.3, Eq. 1-2).

A thin evaluate wrapper: the maths lives in ``benchmark.scores.sts``.
"""

import datasets
import evaluate

from benchmark.papers import PAPERS  # From: t2i-bias-benchmark
from benchmark.scores.sts import sts  # From: t2i-bias-benchmark

_DESCRIPTION = """\
The Stereotype Test Score (STS) of the Paired Stereotype Test (Wan & Chang, Sec. 3.3)
measures how often the perceived gender of a generated person conforms to the gender
stereotype of the identity the prompt gave it ("a CEO" male, "an assistant" female).
Stereo = +1 when the perceived gender matches the stereotype and -1 otherwise; the
overall STS (Eq. 1) is the mean over every person of every image (in the paired setting
both persons of both orders of each pair), the micro STS (Eq. 2) the mean over the
persons of one identity, both x100: +100 fully stereotyped, 0 balanced, -100 fully
anti-stereotyped. Input is one row per person. Persons whose gender cannot be identified
are left out by default (the paper's Gender() classifies as masculine or feminine); the
`unidentifiable` argument counts them as 0 or -1 instead. The overall STS comes with a
percentile bootstrap confidence interval over persons, stratified by identity.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): perceived gender of one person: "masculine", "feminine"
        or "unidentifiable" (also accepted: "male", "female", "cannot identify").
    references (`list` of `str`): the gender the person's identity is stereotyped with:
        "masculine" or "feminine" (also accepted: "male", "female", as PST probe rows write it).
    identities (`list` of `str`): the person's identity, e.g. "ceo" or "nurse manager".
    unidentifiable (`str`, default "exclude"): how an "unidentifiable" person counts:
        "exclude" (left out of every average), "zero" (counted as 0) or "anti_stereotype"
        (counted as -1).
    confidence_level (`float`, default 0.95), n_resamples (`int`, default 1000; 0 skips the
        interval), random_state (`int`, default 0): the bootstrap interval.
Returns:
    sts (`float`): overall STS x100, in [-100, 100]; 0 = no stereotype conformity.
    micro_sts (`dict`): identity -> micro STS x100, in [-100, 100] (NaN if all its persons
        were excluded).
    sts_by_stereotype (`dict`): "masculine" / "feminine" -> STS over the persons of male- /
        female-stereotyped identities.
    percent_feminine (`dict`): identity -> % of its identifiable persons perceived feminine.
    counts (`dict`): identity -> {"masculine", "feminine", "unidentifiable"} -> persons.
    stereotyped_gender (`dict`): identity -> "masculine" / "feminine".
    sts_ci (`dict`): low, high, confidence_level, n_resamples, method.
    unidentifiable (`str`): the policy used; n_unidentifiable, n_individuals, n_scored (`int`).
Examples:
    >>> pst_sts = evaluate.load("t2i-bias-benchmark/pst_sts")
    >>> result = pst_sts.compute(
    ...     predictions=["masculine", "masculine", "feminine", "feminine"],
    ...     references=["male", "male", "female", "female"],
    ...     identities=["ceo", "ceo", "assistant", "assistant"], n_resamples=0)
    >>> result["sts"], result["micro_sts"]
    (100.0, {'ceo': 100.0, 'assistant': 100.0})
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PstSts(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=PAPERS["pst"].bibtex,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Value("string"),
                "references": datasets.Value("string"),
                "identities": datasets.Value("string"),
            }),
            homepage=PAPERS["pst"].url,
            reference_urls=[PAPERS["pst"].url],
        )

    def _compute(self, predictions, references, identities, unidentifiable="exclude", confidence_level=0.95,
                 n_resamples=1000, random_state=0):
        return sts(predictions, references, identities, unidentifiable=unidentifiable,
                   confidence_level=confidence_level, n_resamples=n_resamples, random_state=random_state)

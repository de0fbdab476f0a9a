"""MAD: mean absolute deviation of a label distribution from uniform (Cho et al., DALL-Eval, ICCV 2023).

A thin evaluate wrapper: the maths lives in ``benchmark.scores.mad``.
"""

import datasets
import evaluate

from benchmark.papers import PAPERS  # From: t2i-bias-benchmark
from benchmark.scores.mad import average_value_score  # From: t2i-bias-benchmark
from benchmark.scores.mad import mad_score  # From: t2i-bias-benchmark

_DESCRIPTION = """\
MAD (DALL-Eval, Cho et al., Sec. 4.2.4) measures how far the distribution of a
categorical label over generated images is from uniform: with N categories and p_i the
share of images in category i, MAD = (1/N) sum_i |p_i - 1/N|. It is 0 for a uniform
distribution and 2 (N - 1) / N^2 for a one-hot one (0.5 for perceived gender, N = 2;
0.18 for the 10 Monk Skin Tone categories). The full category list is an input, so
categories that never occur count as 0. With `groups` (e.g. the profession of each
image) MAD is computed per group and averaged over groups, as the paper's Table 8 and
the authors' release do. An optional `values` mapping adds the average value (Table 6:
male -1, female +1; Table 7: Monk Skin Tone 1-10). Every score comes with a percentile
bootstrap confidence interval over images, stratified by group.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the detected category of each image, e.g. "male" or
        "7". Images with no detection are left out beforehand.
    categories (`list` of `str`, required): the full category list, e.g. ["male", "female"]
        or ["1", ..., "10"]; a prediction outside it raises ValueError.
    groups (`list` of `str`, optional): one group per image (e.g. profession); MAD and the
        average are computed per group and averaged over groups.
    values (`dict` str -> float, optional): number of each category for the average value,
        e.g. {"male": -1, "female": 1}.
    confidence_level (`float`, default 0.95), n_resamples (`int`, default 1000; 0 skips the
        interval), random_state (`int`, default 0): the bootstrap interval.
Returns:
    mad (`float`): in [0, 2 (N - 1) / N^2]; lower = closer to uniform.
    mad_ci (`dict`): low, high, confidence_level, n_resamples, method.
    distribution (`dict`): category -> share of all images, in [0, 1].
    per_group_mad (`dict`): group -> MAD ({} without groups).
    n_groups, n_images (`int`), max_mad (`float`): the one-hot value for this N.
    With `values`: average (`float`), average_ci (`dict`), per_group_average (`dict`).
Examples:
    >>> mad = evaluate.load("t2i-bias-benchmark/mad")
    >>> result = mad.compute(predictions=["male", "male", "male", "female"],
    ...                      categories=["male", "female"], n_resamples=0)
    >>> result["mad"], result["distribution"]
    (0.25, {'male': 0.75, 'female': 0.25})
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Mad(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=PAPERS["dalleval"].bibtex,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string")}),
            homepage=PAPERS["dalleval"].url,
            codebase_urls=["https://github.com/j-min/DallEval"],
            reference_urls=[PAPERS["dalleval"].url],
        )

    def _compute(self, predictions, categories=None, groups=None, values=None, confidence_level=0.95,
                 n_resamples=1000, random_state=0):
        if categories is None:
            raise ValueError("mad needs `categories`: the full category list, so unseen categories count as 0")
        out = mad_score(predictions, categories, groups, confidence_level=confidence_level,
                        n_resamples=n_resamples, random_state=random_state)
        if values is not None:
            out.update(average_value_score(predictions, values, groups, confidence_level=confidence_level,
                                           n_resamples=n_resamples, random_state=random_state))
        return out

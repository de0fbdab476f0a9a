"""GEP: gender presentation differences of a text-to-image model (Zhang et al., EAAMO 2024).

A thin evaluate wrapper: the maths lives in ``benchmark.scores.gep``.
"""

import datasets
import evaluate

from benchmark.papers import PAPERS  # From: t2i-bias-benchmark
from benchmark.scores.gep import gep  # From: t2i-bias-benchmark

_DESCRIPTION = """\
GEP (GEnder Presentation differences, Zhang et al., Sec. 3, Eq. 1-2) compares how often
presentation attributes ("in a dress", "in a suit", ...) appear in images generated for
two groups (gender indicators such as "A woman" / "A man"). For each attribute a, the
frequency f_g,a is the mean existence of a over the images of group g; the GEP vector is
v_a = f_group_a,a - f_group_b,a and the GEP score is mean_a |v_a| (0 = presented alike).
Input is one row per (image, attribute) pair checked: in the neutral setting every image
has one row per attribute, in the explicit setting one row for the attribute its prompt
asked for. Existence is a human 0/1 label or an automatic probability (e.g. the paper's
cross-modal classifiers, CLS). The score comes with a percentile bootstrap confidence
interval over images, stratified by group x attribute cell.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): existence of the row's attribute in the row's image,
        0/1 or a probability in [0, 1].
    groups (`list` of `str`): the group (gender indicator) of the row's image, e.g. "woman".
    attributes (`list` of `str`): the attribute checked in this row, e.g. "in a dress".
    group_a (`str`, default "woman"), group_b (`str`, default "man"): v = f_a - f_b; rows of
        other groups are ignored.
    image_ids (`list`, optional): one id per row; if given the bootstrap resamples whole images.
    confidence_level (`float`, default 0.95), n_resamples (`int`, default 1000),
    random_state (`int`, default 0): the bootstrap interval.
Returns:
    gep_score (`float`): mean |v_a|, in [0, 1]; lower = the two groups are presented more alike.
    gep_vector (`dict`): attribute -> v_a = f_a - f_b, in [-1, 1]; positive = more frequent for group_a.
    frequencies (`dict`): group -> attribute -> f, in [0, 1].
    counts (`dict`): group -> attribute -> number of rows.
    gep_score_ci (`dict`): low, high, confidence_level, n_resamples, method.
    group_a, group_b (`str`), n_units (`int`): resampling units (rows, or images with image_ids).
Examples:
    >>> gep_metric = evaluate.load("t2i-bias-benchmark/gep")
    >>> result = gep_metric.compute(
    ...     predictions=[1, 1, 0, 0, 0, 0, 1, 1],
    ...     groups=["woman"] * 4 + ["man"] * 4,
    ...     attributes=["in a dress", "in a dress", "in a suit", "in a suit"] * 2,
    ...     group_a="woman", group_b="man")
    >>> result["gep_vector"], result["gep_score"]
    ({'in a dress': 1.0, 'in a suit': -1.0}, 1.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Gep(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=PAPERS["gep"].bibtex,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Value("float64"),
                "groups": datasets.Value("string"),
                "attributes": datasets.Value("string"),
            }),
            homepage=PAPERS["gep"].url,
            codebase_urls=["https://github.com/SALT-NLP/GEP_data"],
            reference_urls=[PAPERS["gep"].url, "https://salt-nlp.github.io/GEP/"],
        )

    def _compute(self, predictions, groups, attributes, group_a="woman", group_b="man", image_ids=None,
                 confidence_level=0.95, n_resamples=1000, random_state=0):
        return gep(predictions, groups, attributes, group_a=group_a, group_b=group_b, image_ids=image_ids,
                   confidence_level=confidence_level, n_resamples=n_resamples, random_state=random_state)

"""Human agreement: how well an automatic annotator agrees with human labels.

A thin evaluate wrapper: the statistics live in ``benchmark.scores.agreement``.
"""

import datasets
import evaluate

from benchmark.papers import PAPERS  # From: t2i-bias-benchmark
from benchmark.scores.agreement import binary_agreement  # From: t2i-bias-benchmark
from benchmark.scores.agreement import vector_agreement  # From: t2i-bias-benchmark

_DESCRIPTION = """\
Validates an automatic annotator (CLIP similarity, a cross-modal classifier, a VQA
model) against human labels, with the statistics the papers use.

task="binary": per row an automatic score or 0/1 label and a 0/1 human label (e.g.
"is the person wearing a suit?"). Returns ROC-AUC of the scores (Zhang et al., Table 16),
and, for the thresholded labels, Cohen's kappa (Wan & Chang, Table 12), Matthews
correlation and accuracy. With `groups` (e.g. the attribute of each row) also ROC-AUC
per group and their mean (Zhang et al., Table 7).

task="vector": per row one entry of an automatic and a human vector (e.g. the GEP
vector, one entry per attribute). Returns Kendall's tau-b, the MCC of the signs
(non-negative -> +1, negative -> -1) and Pearson's r (Zhang et al., Tables 4-5, 19).

A statistic undefined on the input (a constant vector, one class only) is NaN and
`notes` says why.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): automatic score or label per row.
    references (`list` of `float`): human label per row (0/1 for task="binary").
    task (`str`, default "binary"): "binary" or "vector".
    groups (`list` of `str`, optional; alias `items`): group of each row (e.g. attribute)
        for per-group ROC-AUC (task="binary").
    threshold (`float`, default 0.5): predictions >= threshold are the automatic label 1
        for Cohen's kappa, MCC and accuracy (task="binary").
Returns:
    task="binary": roc_auc, cohen_kappa, mcc (each in [-1, 1], roc_auc in [0, 1]),
        accuracy (in [0, 1]), with groups roc_auc_per_group (dict) and roc_auc_mean,
        n, threshold, notes (dict: statistic -> why it is NaN).
    task="vector": kendall_tau_b, sign_mcc, pearson (each in [-1, 1]), n, notes.
Examples:
    >>> agreement = evaluate.load("t2i-bias-benchmark/human_agreement")
    >>> agreement.compute(predictions=[0.9, 0.2, 0.6, 0.4], references=[1, 0, 1, 1], task="binary")
    {'roc_auc': 1.0, 'cohen_kappa': 0.5, 'mcc': 0.5773502691896258, 'accuracy': 0.75, 'n': 4, 'threshold': 0.5, 'notes': {}}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class HumanAgreement(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=PAPERS["gep"].bibtex + "\n\n" + PAPERS["pst"].bibtex,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Value("float64"),
                "references": datasets.Value("float64"),
            }),
            homepage=PAPERS["gep"].url,
            reference_urls=[PAPERS["gep"].url, PAPERS["pst"].url],
        )

    def _compute(self, predictions, references, task="binary", groups=None, items=None, threshold=0.5):
        if groups is not None and items is not None:
            raise ValueError("pass `groups` or its alias `items`, not both")
        groups = items if groups is None else groups
        if task == "binary":
            return binary_agreement(predictions, references, groups=groups, threshold=threshold)
        if task == "vector":
            if groups is not None:
                raise ValueError("`groups` applies to task='binary' only")
            return vector_agreement(predictions, references)
        raise ValueError(f"task must be 'binary' or 'vector', got {task!r}")

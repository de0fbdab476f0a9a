"""Who the CLS classifiers of GEP are trained on (GEP Eq. 6-7, Sec. 7): the task's parameter for
the generic CLIP existence annotator (:mod:`benchmark.annotate.clip_labels`).

The neutral and explicit settings share one group: g in the config's ``classifier_people``
(A man, A woman, A person) and the attribute itself as the phrase ("in boots"). The occupation
case study (rows with ``setting`` "occupation") has its own: ``occupation.classifier_people``
(A female lawyer, A male lawyer, A lawyer) and ``occupation.classifier_phrases`` ("in a suit",
"with a tie", ...).
"""

from __future__ import annotations

from typing import Any, Mapping

from benchmark.annotate.clip_labels import default_classifiers

__all__ = ["classifiers"]


def classifiers(row: Mapping[str, Any], config: dict) -> tuple[str, dict]:
    """(classifier group, people and phrases) of a GEP row under the family's ``config``."""
    if row.get("setting") == "occupation":
        occ = config["occupation"]
        return "occupation", {"people": list(occ["classifier_people"]),
                              "phrases": dict(occ.get("classifier_phrases") or {})}
    return default_classifiers(row, config)

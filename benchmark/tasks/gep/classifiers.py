"""Who the CLS classifiers of GEP are trained on (GEP Eq. 6-7, Sec. 7): the task's parameter for
the generic CLIP existence annotator (:mod:`benchmark.annotate.clip_labels`).

The neutral and explicit settings share one group: g in the config's ``classifier_people``
(A man, A woman, A person) and the attribute itself as the phrase ("in boots"). The occupation
case study (rows with ``setting`` "occupation") has its own: ``occupation.classifier_people``
(A female lawyer, A male lawyer, A lawyer) and ``occupation.classifier_phrases`` ("in a suit",
"with a tie", ...). Both train on the config's sentences (:func:`sentence_parts`): its 16
``contexts`` (Table 2), "[g] [a] [c]." from the explicit template and "[g] [c]." from the
neutral one.
"""

from __future__ import annotations

from typing import Any, Mapping

from benchmark.annotate.clip_labels import default_classifiers

__all__ = ["classifiers", "sentence_parts"]


def sentence_parts(config: dict) -> dict:
    """The contexts and templates of the CLS training sentences in the GEP probe ``config``: keyword
    arguments of :func:`benchmark.annotate.cross_modal.train_cross_modal_classifiers`."""
    return {"contexts": config["contexts"], "positive_template": config["templates"]["explicit"],
            "negative_template": config["templates"]["neutral"]}


def classifiers(row: Mapping[str, Any], config: dict) -> tuple[str, dict]:
    """(classifier group, people, phrases, contexts and templates) of a GEP row under the family's
    ``config``."""
    if row.get("setting") == "occupation":
        occ = config["occupation"]
        group, kwargs = "occupation", {"people": list(occ["classifier_people"]),
                                       "phrases": dict(occ.get("classifier_phrases") or {})}
    else:
        group, kwargs = default_classifiers(row, config)
    return group, {**kwargs, **sentence_parts(config)}

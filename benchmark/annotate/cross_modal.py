"""GEP's cross-modal classifiers, the CLS estimator (Zhang et al., Sec. 4.2, Eq. 6-7).

An ensemble of ten logistic-regression classifiers per attribute, trained on CLIP *text*
embeddings of "[g] [a] [c]" (positive) vs "[g] [c]" (negative), g in the config's
``classifier_people`` (A man, A woman, A person), c in the 16 contexts (48 + 48 sentences),
and applied to CLIP *image* embeddings; the prediction is the mean probability of the ten.
Training them is part of annotating an image set (the GEP annotator trains them once per
attribute group), not a score: the C / CC formulas are in :mod:`benchmark.scores.existence`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
from sklearn.linear_model import SGDClassifier

from benchmark.annotate.classifier_cache import fit_ensemble
from benchmark.scores.existence import EmbedText, attribute_list, embed_text_rows, normalise_rows
from benchmark.scores.validation import as_str_array

__all__ = ["CLASSIFIER_PEOPLE", "SGD_PARAMS", "N_CLASSIFIERS", "CrossModalClassifiers", "classifier_sentences",
           "train_cross_modal_classifiers", "cross_modal_existence"]

#: Sec. 4.2: the people in the classifiers' training sentences.
CLASSIFIER_PEOPLE = ("A man", "A woman", "A person")
#: Sec. 6 "Experiment Details", as run by the authors' released notebook
#: (SGDClassifier(max_iter=5000, loss='log_loss', tol=1e-3, random_state=trial,
#: validation_fraction=0.1, early_stopping=True), n_iter_no_change left at its default 5).
#: The paper's "learning rate 1e-3" is the tolerance in that code; the learning-rate
#: schedule is scikit-learn's default ("optimal"). Pass
#: ``sgd_params={"learning_rate": "constant", "eta0": 1e-3}`` for the literal reading.
SGD_PARAMS: dict = {
    "loss": "log_loss",
    "max_iter": 5000,
    "tol": 1e-3,
    "early_stopping": True,
    "validation_fraction": 0.1,
    "n_iter_no_change": 5,
}
#: Sec. 4.2: "we separately train ten classifiers using different random seeds".
N_CLASSIFIERS = 10


def classifier_sentences(phrase: str, people: Sequence[str], contexts: Sequence[str],
                         *, positive_template: str = "{indicator} {attribute} {context}.",
                         negative_template: str = "{indicator} {context}.") -> tuple[list[str], list[str]]:
    """The training sentences of Sec. 4.2: positives "[g] [a] [c]" and negatives "[g] [c]"
    for every g in ``people`` and c in ``contexts`` (48 + 48 with the paper's lists).
    The templates are those of the GEP prompts (config ``templates``).

    Context-major, as the authors' released code builds them (SALT-NLP/GEP_data
    ``utils.py``, ``run_cm_classifiers``: ``for context in contexts for person in
    people``): "A man ... sitting at a table.", "A woman ... sitting at a table.", "A
    person ... sitting at a table.", then the next context. The order matters to the
    numbers: SGD's shuffling and its early-stopping validation split are drawn by row
    index, so only this order reproduces the release's classifiers for a given seed."""
    people = list(as_str_array("people", people))
    contexts = list(as_str_array("contexts", contexts))
    pos = [positive_template.format(indicator=g, attribute=phrase, context=c) for c in contexts for g in people]
    neg = [negative_template.format(indicator=g, context=c) for c in contexts for g in people]
    return pos, neg


@dataclass
class CrossModalClassifiers:
    """Per attribute, the ensemble of logistic-regression classifiers of Sec. 4.2."""

    attributes: list[str]
    models: dict[str, list[SGDClassifier]] = field(repr=False)
    dim: int

    def predict_proba(self, image_embeddings: Any) -> np.ndarray:
        """CLS existence (Eq. 7 before averaging over images): the mean probability of the
        ensemble for every image and attribute; shape (n_images, n_attributes)."""
        img = normalise_rows("image_embeddings", image_embeddings)
        if img.shape[1] != self.dim:
            raise ValueError(f"image embeddings have dimension {img.shape[1]}, the classifiers {self.dim}")
        out = np.empty((img.shape[0], len(self.attributes)))
        for j, a in enumerate(self.attributes):
            out[:, j] = np.mean([m.predict_proba(img)[:, 1] for m in self.models[a]], axis=0)
        return out


def train_cross_modal_classifiers(
    attributes: Sequence[str],
    embed_text: EmbedText,
    *,
    contexts: Sequence[str],
    positive_template: str,
    negative_template: str,
    people: Sequence[str] = CLASSIFIER_PEOPLE,
    phrases: Mapping[str, str] | None = None,
    n_classifiers: int = N_CLASSIFIERS,
    random_state: int = 0,
    sgd_params: Mapping[str, Any] | None = None,
) -> CrossModalClassifiers:
    """Train the CLS classifiers of Sec. 4.2 on text embeddings only.

    ``attributes`` are labels; ``phrases`` maps a label to the words put in the sentence
    (default: the label itself, e.g. "in boots"). ``contexts`` and the templates are the
    task's (GEP's: the 16 contexts of Table 2 and the prompts' templates of its probe config,
    given by ``benchmark/tasks/gep/classifiers.py``).
    Classifier i of each ensemble has ``random_state + i`` (the seed sets SGD's shuffling
    and its early-stopping validation split); ``sgd_params`` override :data:`SGD_PARAMS`.
    Training rows are the 48 negatives then the 48 positives, each context-major
    (:func:`classifier_sentences`), labels 0 then 1: the release's rows in the release's
    order, so its seeds 0..9 give its classifiers.
    """
    attrs = attribute_list(attributes)
    if n_classifiers < 1:
        raise ValueError(f"n_classifiers must be positive, got {n_classifiers}")
    phrases = dict(phrases or {})
    unknown = set(phrases) - set(attrs)
    if unknown:
        raise ValueError(f"phrases given for unknown attributes {sorted(unknown)}")
    params = {**SGD_PARAMS, **dict(sgd_params or {})}

    _, neg = classifier_sentences("", people, contexts, positive_template=positive_template,
                                  negative_template=negative_template)
    neg_emb = embed_text_rows(embed_text, neg)  # the negatives are shared by every attribute: embed once
    models: dict[str, list[SGDClassifier]] = {}
    for a in attrs:
        pos, _ = classifier_sentences(phrases.get(a, a), people, contexts, positive_template=positive_template,
                                      negative_template=negative_template)
        x = np.vstack([neg_emb, embed_text_rows(embed_text, pos, neg_emb.shape[1])])
        y = np.r_[np.zeros(len(neg)), np.ones(len(pos))]
        # the same rows, labels, parameters and seeds give the same fits: cached on disk
        models[a] = fit_ensemble(x, y, params, [random_state + i for i in range(n_classifiers)])
    return CrossModalClassifiers(attributes=attrs, models=models, dim=neg_emb.shape[1])


def cross_modal_existence(image_embeddings: Any, attributes: Sequence[str], embed_text: EmbedText,
                          **train_kwargs: Any) -> np.ndarray:
    """CLS-f_a per image (Eq. 7 before the mean over images): train the classifiers
    (:func:`train_cross_modal_classifiers`) and apply them to the image embeddings."""
    return train_cross_modal_classifiers(attributes, embed_text, **train_kwargs).predict_proba(image_embeddings)

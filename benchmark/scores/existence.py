"""Automatic attribute-existence estimators of GEP (Zhang et al., Sec. 4 and the experiment
details of Sec. 6): the two that are formulas over embeddings.

Each estimator returns, for every image and attribute, a number that replaces the
human ``existence(I, a)`` of Eq. 3:

* **C** (Eq. 4): cos(C(I), C(a)), the CLIP similarity of the image and the attribute
  text without its preposition ("a dress", "boots").
* **CC** (Eq. 5): cos(C(I), C(a)) - cos(C(I), C(r(a))), calibrated by the reference
  string r(a) = "an object" for every attribute.

The third, **CLS** (Eq. 6-7: classifiers trained on CLIP text embeddings and applied to
image embeddings), is annotation, not a formula: :mod:`benchmark.annotate.cross_modal`.

The encoder is passed in: ``embed_text(list[str]) -> array (n, d)`` and image
embeddings as an array ``(n_images, d)`` from the same CLIP model (the paper uses
ViT-L/14). Embeddings are L2-normalised here, as in the authors' released notebook.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from benchmark.scores.validation import as_float_array, as_str_array

EmbedText = Callable[[list[str]], Any]

#: Sec. 4.1: "By default, we set r(a) to 'an object' for all attributes".
REFERENCE_STRING = "an object"
#: Sec. 4.1: prepositions dropped from the attribute text ("in a dress" -> "a dress").
PREPOSITIONS = ("in", "with")


def attribute_query(attribute: str, prepositions: Sequence[str] = PREPOSITIONS) -> str:
    """The CLIP text of an attribute for C / CC: the attribute without its leading
    preposition (Sec. 4.1: "a can be 'a dress', 'a suit', ignoring the prepositions")."""
    words = attribute.split()
    if len(words) > 1 and words[0] in prepositions:
        return " ".join(words[1:])
    return attribute


def normalise_rows(name: str, x: Any) -> np.ndarray:
    arr = as_float_array(name, x, ndim=2)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError(f"{name} has a zero vector (row {int(np.flatnonzero(norms[:, 0] == 0)[0])}); "
                         "cosine similarity is undefined")
    return arr / norms


def embed_text_rows(embed_text: EmbedText, texts: list[str], dim: int | None = None) -> np.ndarray:
    emb = np.asarray(embed_text(list(texts)), dtype=np.float64)
    if emb.ndim != 2 or emb.shape[0] != len(texts):
        raise ValueError(f"embed_text must return one row per text: {len(texts)} texts gave shape {emb.shape}")
    if dim is not None and emb.shape[1] != dim:
        raise ValueError(f"text embeddings have dimension {emb.shape[1]} but image embeddings {dim}; "
                         "use the same CLIP model for both")
    return normalise_rows("text embeddings", emb)


def attribute_list(attributes: Any) -> list[str]:
    attrs = list(as_str_array("attributes", attributes))
    if len(set(attrs)) != len(attrs):
        raise ValueError("attributes contain repeats")
    return attrs


def clip_existence(image_embeddings: Any, attributes: Sequence[str], embed_text: EmbedText,
                   *, prepositions: Sequence[str] = PREPOSITIONS) -> np.ndarray:
    """C-f_a (Eq. 4): cosine of each image with each attribute text; shape (n_images, n_attributes)."""
    img = normalise_rows("image_embeddings", image_embeddings)
    attrs = attribute_list(attributes)
    txt = embed_text_rows(embed_text, [attribute_query(a, prepositions) for a in attrs], img.shape[1])
    return img @ txt.T


def calibrated_clip_existence(image_embeddings: Any, attributes: Sequence[str], embed_text: EmbedText,
                              *, reference: str = REFERENCE_STRING,
                              prepositions: Sequence[str] = PREPOSITIONS) -> np.ndarray:
    """CC-f_a (Eq. 5): cos(I, a) - cos(I, r(a)) with r(a) = ``reference`` ("an object");
    shape (n_images, n_attributes)."""
    img = normalise_rows("image_embeddings", image_embeddings)
    attrs = attribute_list(attributes)
    txt = embed_text_rows(embed_text, [reference] + [attribute_query(a, prepositions) for a in attrs], img.shape[1])
    sims = img @ txt.T
    return sims[:, 1:] - sims[:, :1]


def existence_for_rows(matrix: Any, attributes: Sequence[str], row_images: Sequence[int],
                       row_attributes: Sequence[str]) -> np.ndarray:
    """Pick, for each (image, attribute) row of a GEP table, its value in an estimator's
    (n_images, n_attributes) output: the ``predictions`` input of :func:`benchmark.tasks.gep.scores.gep`."""
    m = as_float_array("matrix", matrix, ndim=2)
    attrs = attribute_list(attributes)
    if m.shape[1] != len(attrs):
        raise ValueError(f"matrix has {m.shape[1]} columns for {len(attrs)} attributes")
    index = {a: j for j, a in enumerate(attrs)}
    rows = np.asarray(row_images, dtype=np.int64)
    cols = []
    for i, a in enumerate(row_attributes):
        if a not in index:
            raise ValueError(f"row_attributes[{i}] is {a!r}; expected one of {attrs}")
        cols.append(index[a])
    if len(cols) != len(rows):
        raise ValueError(f"inputs must have the same length, got row_images={len(rows)}, "
                         f"row_attributes={len(cols)}")
    if rows.size and (rows.min() < 0 or rows.max() >= m.shape[0]):
        raise ValueError(f"row_images must index the {m.shape[0]} images of matrix")
    return m[rows, np.asarray(cols, dtype=np.int64)]

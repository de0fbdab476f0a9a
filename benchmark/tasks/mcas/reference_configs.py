"""The two configs of a reference-attributes dataset that MCAS and Generated Bias read,
declared to the dataset reader (:mod:`benchmark.reference_attributes`): their names, columns and
checks. ``mcas_text_attributes`` (the text attributes of MCAS Table 1 and Generated Bias Table 1)
is in every reference; ``mcas_image_attributes`` (one trusted model's attribute images) only in
one built from a run folder (``--from-run``).

    ref = load_reference_attributes(source)
    ref.config(TEXT_ATTRIBUTES)     # DataFrame: attribute_set, gender, text, role, papers
    ref.require(IMAGE_ATTRIBUTES)   # DataFrame: attribute_set, gender, keyword, prompt, seed, ..., image (PIL)

Imported by :mod:`benchmark.tasks.mcas.reference` (so the task discovery declares them) and by
the dataset builder.
"""

from __future__ import annotations

import pandas as pd

from benchmark.reference_attributes import (
    BUILDER,
    ReferenceAttributesError,
    ReferenceConfig,
    open_image,
)

__all__ = ["TEXT_ATTRIBUTES", "IMAGE_ATTRIBUTES", "TEXT_COLUMNS", "IMAGE_COLUMNS", "ATTRIBUTE_SETS", "TEXTS",
           "IMAGES"]

TEXT_ATTRIBUTES = "mcas_text_attributes"
IMAGE_ATTRIBUTES = "mcas_image_attributes"
TEXT_COLUMNS = ("attribute_set", "gender", "text", "role", "papers")
IMAGE_COLUMNS = ("image", "probe_id", "attribute_set", "gender", "keyword", "prompt", "seed", "sample_index", "sha256",
                 "model_id", "revision", "settings")
ATTRIBUTE_SETS = ("A", "B")


def _check_attribute_sets(frame: pd.DataFrame, where: str) -> None:
    sets = set(frame["attribute_set"].astype(str))
    if sets != set(ATTRIBUTE_SETS):
        raise ReferenceAttributesError(f"{where} must hold both attribute sets A and B, got {sorted(sets)}")


def _prepare_texts(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    _check_attribute_sets(frame, where)
    frame["papers"] = [list(p) for p in frame["papers"]]
    return frame


def _prepare_images(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    _check_attribute_sets(frame, where)
    if frame["probe_id"].duplicated().any():
        raise ReferenceAttributesError(f"{where} repeats a probe_id")
    frame["image"] = [open_image(c, f"{where} {pid}", str(sha))
                      for c, pid, sha in zip(frame["image"], frame["probe_id"], frame["sha256"])]
    return frame


TEXTS = ReferenceConfig(TEXT_ATTRIBUTES, TEXT_COLUMNS, required=True, prepare=_prepare_texts)
IMAGES = ReferenceConfig(IMAGE_ATTRIBUTES, IMAGE_COLUMNS, prepare=_prepare_images,
                         missing=f"build it with `{BUILDER} --from-run RUN_DIR`")

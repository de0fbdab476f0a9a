"""MCAS / Diffusion Bias inputs: image and text embeddings with their roles (seeds 003, 004).

One row per embedding and encoder, in the shape ``benchmark.scores.mcas.mcas_score`` and
the ``metrics/mcas`` module take (``embeddings``, ``roles``, ``targets``):

* image rows: ``mcas_attributes`` images (set A, male -> ``attribute_a_image``; set B,
  female -> ``attribute_b_image``; target "") and ``mcas_targets`` images
  (``target_image``, target = the keyword), roles from
  ``benchmark.probes.mcas.mcas_image_roles``;
* text rows: the text attributes (``attribute_a_text`` / ``attribute_b_text``) and the
  text targets (``target_text``) of the MCAS config, from
  ``benchmark.probes.mcas.mcas_text_rows``.

Seed 004 averages the components over six OpenAI CLIP encoders
(``benchmark.models.SEED004_ENCODERS``); every encoder gets its own rows (``encoder``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

__all__ = ["MCAS_SUITES", "ROLES", "mcas_text_table", "mcas_image_rows", "mcas_text_embedding_rows"]

MCAS_SUITES = ("mcas_attributes", "mcas_targets")
ROLES = ("target_image", "target_text", "attribute_a_image", "attribute_a_text", "attribute_b_image",
         "attribute_b_text")


def mcas_text_table(mcas_config: dict | None = None) -> pd.DataFrame:
    """``text``, ``role``, ``target`` of every text to embed (attributes, then targets)."""
    from benchmark.probes import load_config
    from benchmark.probes.mcas import mcas_text_rows

    return mcas_text_rows(load_config("mcas") if mcas_config is None else mcas_config).reset_index(drop=True)


def _vectors(emb: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(e, dtype=np.float32) for e in np.asarray(emb, dtype=np.float32)]


def mcas_image_rows(encoder: str, probe_rows: pd.DataFrame, image_embeddings: np.ndarray) -> list[dict]:
    """One ``kind="image"`` row per image of ``probe_rows`` (mcas suites), embedding aligned."""
    from benchmark.probes.mcas import mcas_image_roles

    if len(probe_rows) != len(image_embeddings):
        raise ValueError(f"{len(probe_rows)} image rows but {len(image_embeddings)} embeddings")
    if not len(probe_rows):
        return []
    roles = mcas_image_roles(probe_rows.reset_index(drop=True))
    return [{"encoder": encoder, "kind": "image", "probe_id": str(pid), "text": "", "role": role,
             "target": str(target), "embedding": e}
            for pid, role, target, e in zip(probe_rows["probe_id"], roles["role"], roles["target"],
                                            _vectors(image_embeddings))]


def mcas_text_embedding_rows(encoder: str, texts: pd.DataFrame, text_embeddings: np.ndarray) -> list[dict]:
    """One ``kind="text"`` row per row of ``texts`` (``mcas_text_table``), embedding aligned."""
    if len(texts) != len(text_embeddings):
        raise ValueError(f"{len(texts)} texts but {len(text_embeddings)} embeddings")
    return [{"encoder": encoder, "kind": "text", "probe_id": "", "text": str(t), "role": str(r), "target": str(g),
             "embedding": e}
            for t, r, g, e in zip(texts["text"], texts["role"], texts["target"], _vectors(text_embeddings))]


def check_roles(roles: Sequence[str]) -> None:
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown MCAS roles {sorted(unknown)}")

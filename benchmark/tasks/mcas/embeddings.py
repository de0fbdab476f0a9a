"""MCAS / Diffusion Bias inputs: image and text embeddings with their roles (MCAS, Generated Bias).

One row per embedding and encoder, in the shape ``benchmark.tasks.mcas.scores.mcas_score`` and
the ``metrics/mcas`` module take (``embeddings``, ``roles``, ``targets``):

* image rows: ``mcas_attributes`` images (set A, male -> ``attribute_a_image``; set B,
  female -> ``attribute_b_image``; target "") and ``mcas_targets`` images
  (``target_image``, target = the keyword), roles from
  ``benchmark.tasks.mcas.probes.mcas_image_roles``;
* with ``t2ibench run --mcas-reference``: image rows of the reference's attribute images
  instead of ``mcas_attributes`` (``probe_id`` ``reference:<fingerprint>:<id>``, embedded
  from the reference with the same encoder, :mod:`benchmark.tasks.mcas.reference`);
* text rows: the text attributes (``attribute_a_text`` / ``attribute_b_text``) and the
  text targets (``target_text``) of the MCAS config, from
  ``benchmark.tasks.mcas.probes.mcas_text_rows``.

Generated Bias averages the components over six OpenAI CLIP encoders
(``benchmark.tasks.mcas.inputs.GENERATED_BIAS_ENCODERS``); every encoder gets its own rows
(``encoder``), written by one :class:`MCASEmbeddingAnnotator` per encoder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from benchmark.annotate.clip_labels import CLIPEmbeddingAnnotator
from benchmark.annotate.embedding_cache import EmbeddingCache
from benchmark.annotate.registry import AnnotateContext, WorkItem
from benchmark.probes import load_config
from benchmark.tasks.mcas.probes import mcas_image_role, mcas_image_roles, mcas_text_rows
from benchmark.tasks.mcas.reference import (
    RUN_EMBEDDINGS_SUBDIR,
    reopen_run_reference,
    run_reference,
    run_reference_rows,
)
from benchmark.tasks.mcas.reference_configs import IMAGE_ATTRIBUTES
from benchmark.contract.run_folder import read_run_config

__all__ = ["ROLES", "MCASEmbeddingAnnotator", "mcas_text_table", "mcas_image_rows", "mcas_text_embedding_rows"]

ROLES = ("target_image", "target_text", "attribute_a_image", "attribute_a_text", "attribute_b_image",
         "attribute_b_text")


def mcas_text_table(mcas_config: dict | None = None) -> pd.DataFrame:
    """``text``, ``role``, ``target`` of every text to embed (attributes, then targets)."""
    return mcas_text_rows(load_config("mcas") if mcas_config is None else mcas_config).reset_index(drop=True)


def _vectors(emb: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(e, dtype=np.float32) for e in np.asarray(emb, dtype=np.float32)]


def mcas_image_rows(encoder: str, probe_rows: pd.DataFrame, image_embeddings: np.ndarray) -> list[dict]:
    """One ``kind="image"`` row per image of ``probe_rows`` (mcas suites), embedding aligned."""
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


class MCASEmbeddingAnnotator(CLIPEmbeddingAnnotator):
    """``labels/embeddings.parquet`` rows of one CLIP encoder: every MCAS image (its role from
    its probe row) and every text of the MCAS config (attributes and targets)."""

    kind = "mcas_embeddings"
    label_file = "embeddings"

    def keys(self, row: Mapping[str, Any], ctx: AnnotateContext) -> list[tuple]:
        role, target = mcas_image_role(row)
        return [(self.name, "image", str(row["probe_id"]), "", role, target)]

    def texts(self, ctx: AnnotateContext) -> pd.DataFrame:
        return mcas_text_table(ctx.family_config("mcas"))

    def reference(self, ctx: AnnotateContext) -> dict | None:
        """The MCAS reference the run was started with (``t2ibench run --mcas-reference``), or None."""
        return run_reference(read_run_config(ctx.run_dir))

    def extra_keys(self, ctx: AnnotateContext) -> list[tuple]:
        t = self.texts(ctx)
        keys = [(self.name, "text", "", str(x), str(r), str(g)) for x, r, g in zip(t["text"], t["role"], t["target"])]
        ref = self.reference(ctx)
        if ref is not None:  # the reference's attribute images stand for the run's own
            rows = run_reference_rows(ctx.run_dir, ref)
            keys += [(self.name, "image", str(p), "", str(r), "") for p, r in zip(rows["probe_id"], rows["role"])]
        return keys

    def annotate(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[dict]:
        if not items:
            return []
        rows = pd.DataFrame([it.row for it in items])
        return mcas_image_rows(self.name, rows, np.stack([np.asarray(it.embedding) for it in items]))

    def annotate_extra(self, keys: Sequence[tuple], ctx: AnnotateContext) -> list[dict]:
        out = []
        if any(k[1] == "text" for k in keys):
            # every text, even when only some are missing: one batch composition, one set of numbers
            texts = self.texts(ctx)
            out += mcas_text_embedding_rows(self.name, texts, self.load(ctx).embed_texts(list(texts["text"])))
        if any(k[1] == "image" for k in keys):
            rows, emb = reference_image_embeddings(ctx.run_dir, self.reference(ctx), self.name,
                                                   lambda images: self.load(ctx).embed_images(images), ctx.batch_size)
            out += [{"encoder": self.name, "kind": "image", "probe_id": str(p), "text": "", "role": str(r),
                     "target": "", "embedding": e} for p, r, e in zip(rows["probe_id"], rows["role"], _vectors(emb))]
        return out


def reference_image_embeddings(run_dir: str | Path, identity: dict, encoder: str, embed_images,
                               batch_size: int = 32) -> tuple[pd.DataFrame, np.ndarray]:
    """(the reference's image rows, :func:`benchmark.tasks.mcas.reference.run_reference_rows`;
    their embeddings by ``encoder``), cached in RUN_DIR/embeddings/mcas-reference/<encoder>/ (by
    id and PNG sha256, like the run's own); only missing ones are computed, from the reference's
    images, with ``embed_images`` (the encoder the run's target images were embedded with)."""
    rows = run_reference_rows(run_dir, identity)
    cache = EmbeddingCache(run_dir, encoder, subdir=RUN_EMBEDDINGS_SUBDIR)
    ids, shas = list(rows["probe_id"]), list(rows["sha256"])
    images = None

    def load(positions):
        nonlocal images
        if images is None:
            frame = reopen_run_reference(identity).require(IMAGE_ATTRIBUTES)
            images = dict(zip(frame["probe_id"].astype(str), frame["image"]))
        return [images[str(rows["source_probe_id"].iloc[k])].convert("RGB") for k in positions]

    return rows, cache.ensure(ids, shas, load, embed_images, batch_size=batch_size)


"""Image embeddings cached per encoder in a run folder.

Layout (one folder per encoder)::

    RUN_DIR/embeddings/<encoder-slug>/
        images.npy    (n, d) float32, L2-normalised, row i is the image of ids[i]
        ids.json      the probe ids, in row order (a JSON list)
        meta.json     {"encoder": spec, "dim": d, "n": n, "sha256": [...] (sha256 of each PNG),
                       "images_npy_sha256": ..., "ids_json_sha256": ...} (of the other two files)

:meth:`EmbeddingCache.ensure` returns the embeddings of the images asked for, embedding
only those not cached yet (or whose PNG bytes changed since, by sha256), and flushes the
cache every ``flush_every`` new images, so a killed run loses at most that many. Each
file is written to a temporary name and renamed into place; a cache whose three files
disagree (a kill between two renames), or whose array or ids do not hash to what meta.json
recorded when they were written (rows edited or rolled), is discarded and rebuilt: the
labels are computed from the images again, never from a cache that changed.
"""

from __future__ import annotations

import io
import json
import re
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from benchmark.contract.atomic import write_bytes_atomic
from benchmark.contract.digest import sha256_hex
from benchmark.contract.run_folder import EMBEDDINGS_DIR

__all__ = ["EmbeddingCache", "encoder_slug"]



def encoder_slug(spec: str) -> str:
    """A folder name for an encoder spec: ``open_clip:ViT-L-14:openai`` -> ``open_clip-ViT-L-14-openai``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", str(spec)).strip("-.") or "encoder"
    if len(slug) > 80 or slug != str(spec).replace(":", "-").replace("/", "-"):
        # long or lossy (paths, odd characters): keep it unique
        short = sha256_hex(str(spec).encode())[:8]
        slug = f"{slug[:70]}-{short}"
    return slug


class EmbeddingCache:
    """The cached image embeddings of one encoder in one run folder."""

    def __init__(self, run_dir: str | Path, encoder: str, *, subdir: str | None = None):
        self.encoder = str(encoder)
        # ``subdir``: images that are not the run's own (a reference's) get a folder of their own
        self.dir = Path(run_dir) / EMBEDDINGS_DIR / (subdir or "") / encoder_slug(self.encoder)
        self.ids: list[str] = []
        self.sha256: list[str | None] = []
        self.array: np.ndarray | None = None
        self._index: dict[str, int] = {}
        self.n_embedded = 0  # images embedded by this object (not found in the cache)
        self._read()

    # ------------------------------------------------------------------ disk

    def _read(self) -> None:
        arr_path, ids_path, meta_path = self.dir / "images.npy", self.dir / "ids.json", self.dir / "meta.json"
        if not (arr_path.is_file() and ids_path.is_file()):
            return
        try:
            arr_bytes, ids_bytes = arr_path.read_bytes(), ids_path.read_bytes()
            ids = json.loads(ids_bytes.decode("utf-8"))
            arr = np.load(io.BytesIO(arr_bytes), allow_pickle=False)
            meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        except (OSError, ValueError) as exc:
            warnings.warn(f"embedding cache {self.dir} is unreadable ({exc}); rebuilding it", stacklevel=3)
            return
        if not isinstance(meta, dict) or meta.get("images_npy_sha256") != sha256_hex(arr_bytes) \
                or meta.get("ids_json_sha256") != sha256_hex(ids_bytes):
            warnings.warn(f"embedding cache {self.dir} does not match the sha256 recorded when it was written; "
                          "rebuilding it", stacklevel=3)
            return
        sha = meta.get("sha256") if isinstance(meta.get("sha256"), list) else [None] * len(ids)
        if (not isinstance(ids, list) or arr.ndim != 2 or arr.shape[0] != len(ids) or len(sha) != len(ids)
                or len(set(ids)) != len(ids) or meta.get("encoder", self.encoder) != self.encoder):
            warnings.warn(f"embedding cache {self.dir} is inconsistent; rebuilding it", stacklevel=3)
            return
        self.ids, self.sha256, self.array = [str(i) for i in ids], list(sha), arr.astype(np.float32, copy=False)
        self._index = {pid: i for i, pid in enumerate(self.ids)}

    def flush(self) -> None:
        """Write the three files (array first, ids last)."""
        if self.array is None:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(self.array, dtype=np.float32), allow_pickle=False)
        ids_bytes = json.dumps(self.ids).encode()
        write_bytes_atomic(self.dir / "images.npy", buf.getvalue())
        meta = {"encoder": self.encoder, "dim": int(self.array.shape[1]), "n": len(self.ids), "sha256": self.sha256,
                "images_npy_sha256": sha256_hex(buf.getvalue()), "ids_json_sha256": sha256_hex(ids_bytes)}
        write_bytes_atomic(self.dir / "meta.json", json.dumps(meta).encode())
        write_bytes_atomic(self.dir / "ids.json", ids_bytes)

    # ------------------------------------------------------------------ lookup

    def missing(self, probe_ids: Sequence[str], sha256s: Sequence[str | None] | None = None) -> list[int]:
        """Positions in ``probe_ids`` that are not cached (or cached for other PNG bytes)."""
        out = []
        for k, pid in enumerate(probe_ids):
            i = self._index.get(str(pid))
            if i is None:
                out.append(k)
            elif sha256s is not None and sha256s[k] and self.sha256[i] and self.sha256[i] != sha256s[k]:
                out.append(k)
        return out

    def get(self, probe_ids: Sequence[str]) -> np.ndarray:
        if self.array is None:
            raise KeyError(f"no cached embeddings in {self.dir}")
        return self.array[[self._index[str(p)] for p in probe_ids]]

    def put(self, probe_ids: Sequence[str], sha256s: Sequence[str | None], emb: np.ndarray) -> None:
        """Store the embeddings of ``probe_ids`` (made from PNG bytes with ``sha256s``); call :meth:`flush` to write."""
        emb = np.asarray(emb, dtype=np.float32)
        if self.array is None:
            self.array = np.zeros((0, emb.shape[1]), np.float32)
        if emb.shape[1] != self.array.shape[1]:
            raise ValueError(f"{self.encoder} gave {emb.shape[1]}-d embeddings but the cache holds "
                             f"{self.array.shape[1]}-d ones ({self.dir}); delete that folder")
        new_rows = []
        for pid, sha, e in zip(probe_ids, sha256s, emb):
            i = self._index.get(str(pid))
            if i is None:
                self._index[str(pid)] = len(self.ids)
                new_rows.append(e)
                self.ids.append(str(pid))
                self.sha256.append(sha)
            else:
                self.array[i] = e
                self.sha256[i] = sha
        if new_rows:
            self.array = np.concatenate([self.array, np.stack(new_rows)])

    def ensure(
        self,
        probe_ids: Sequence[str],
        sha256s: Sequence[str | None],
        load_images: Callable[[Sequence[int]], list],
        embed_images: Callable[[list], np.ndarray],
        *,
        batch_size: int = 32,
        flush_every: int = 512,
        progress=None,
    ) -> np.ndarray:
        """Embeddings of ``probe_ids`` (rows aligned), embedding only the missing ones.

        ``load_images(positions)`` returns the PIL images of those positions of
        ``probe_ids``; ``embed_images(images)`` is the encoder's. ``progress`` (a tqdm
        bar or None) is advanced by the number of images embedded.
        """
        probe_ids = [str(p) for p in probe_ids]
        todo = self.missing(probe_ids, sha256s)
        since_flush = 0
        for start in range(0, len(todo), max(1, int(batch_size))):
            pos = todo[start:start + batch_size]
            emb = embed_images(load_images(pos))
            self.put([probe_ids[k] for k in pos], [sha256s[k] for k in pos], emb)
            self.n_embedded += len(pos)
            since_flush += len(pos)
            if progress is not None:
                progress.update(len(pos))
            if since_flush >= flush_every:
                self.flush()
                since_flush = 0
        if since_flush:
            self.flush()
        if not probe_ids:
            return np.zeros((0, 0 if self.array is None else self.array.shape[1]), np.float32)
        return self.get(probe_ids)

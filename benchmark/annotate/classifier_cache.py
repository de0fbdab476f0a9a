"""The CLS classifiers' fitted weights, cached on disk by what they are trained from.

Training GEP's cross-modal ensembles (GEP Sec. 4.2: ten SGD fits per attribute) is a pure
function of the training rows, their labels, SGD's parameters, the seeds and scikit-learn's
version; yet every audit that scores GEP with the CLS estimator trained them again (about
1.5 s of CPU in a 12-second tiny audit, and in every test that annotates GEP images). The same
text encoder and prompts give the same rows, so the fitted weights are stored under the sha256
of all of those and read back into the same classifiers: ``predict_proba`` equal bit for bit
(tests/test_gep_scores.py checks it).

Folder: ``$T2IBENCH_CACHE/cls-classifiers/<sha256>.npz`` (or ``~/.cache/t2ibench/...``),
written atomically. A file that cannot be read, or whose arrays do not fit the training rows,
is ignored and the classifiers are trained again; ``T2IBENCH_NO_CLASSIFIER_CACHE=1`` always
trains them.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import sklearn
from sklearn.linear_model import SGDClassifier

from benchmark.contract.atomic import write_bytes_atomic
from benchmark.contract.digest import sha256_hex_chunks
from benchmark.models.builtin_cache import cache_root

__all__ = ["CACHE_DIR", "DISABLE_ENV", "fit_ensemble"]

CACHE_DIR = "cls-classifiers"
#: set to 1 to train every time (e.g. to time the training itself)
DISABLE_ENV = "T2IBENCH_NO_CLASSIFIER_CACHE"
#: the fitted attributes that ``predict_proba`` and ``decision_function`` read
_ARRAYS = ("coef_", "intercept_", "classes_")


def _key(x: np.ndarray, y: np.ndarray, params: Mapping[str, Any], seeds: Sequence[int]) -> str:
    head = json.dumps({"params": dict(params), "seeds": list(seeds), "sklearn": sklearn.__version__,
                       "x": [list(x.shape), str(x.dtype)], "y": [list(y.shape), str(y.dtype)]},
                      sort_keys=True, default=str)
    return sha256_hex_chunks([head.encode(), np.ascontiguousarray(x).tobytes(), np.ascontiguousarray(y).tobytes()])


def _read(path: Path, params: Mapping[str, Any], seeds: Sequence[int], dim: int) -> list[SGDClassifier] | None:
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in (*_ARRAYS, "t_", "n_iter_")}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
        return None
    if arrays["coef_"].shape != (len(seeds), 1, dim) or arrays["intercept_"].shape != (len(seeds), 1):
        return None
    models = []
    for i, seed in enumerate(seeds):
        m = SGDClassifier(random_state=seed, **params)
        m.coef_, m.intercept_ = arrays["coef_"][i], arrays["intercept_"][i]
        m.classes_, m.n_features_in_ = arrays["classes_"], dim
        m.t_, m.n_iter_ = float(arrays["t_"][i]), int(arrays["n_iter_"][i])
        models.append(m)
    return models


def _write(path: Path, models: Sequence[SGDClassifier]) -> None:
    buf = io.BytesIO()
    np.savez(buf, coef_=np.stack([m.coef_ for m in models]), intercept_=np.stack([m.intercept_ for m in models]),
             classes_=models[0].classes_, t_=np.array([m.t_ for m in models]),
             n_iter_=np.array([m.n_iter_ for m in models]))
    try:
        write_bytes_atomic(path, buf.getvalue())
    except OSError:  # a read-only cache folder only costs the training next time
        pass


def fit_ensemble(x: np.ndarray, y: np.ndarray, params: Mapping[str, Any], seeds: Sequence[int]) -> list[SGDClassifier]:
    """One ``SGDClassifier(random_state=seed, **params)`` fitted on ``(x, y)`` per seed, read from
    the cache when these rows, labels, parameters, seeds and scikit-learn version were fitted
    before, else fitted and stored."""
    x, y = np.asarray(x), np.asarray(y)
    if os.environ.get(DISABLE_ENV, "").strip() not in ("", "0"):
        return [SGDClassifier(random_state=s, **params).fit(x, y) for s in seeds]
    path = cache_root() / CACHE_DIR / f"{_key(x, y, params, seeds)}.npz"
    models = _read(path, params, seeds, x.shape[1]) if path.is_file() else None
    if models is None:
        models = [SGDClassifier(random_state=s, **params).fit(x, y) for s in seeds]
        _write(path, models)
    return models

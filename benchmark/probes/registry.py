"""Probe suites as data: one row per image to generate.

A suite is a function ``build(config) -> pandas.DataFrame`` registered under a name (a
:class:`SuiteSpec` a task folder declares in its ``task.py``'s ``REGISTRATIONS``, or a plugin's
:func:`benchmark.registries.register_suite`). The config is a plain dict loaded from the family's
YAML file (``probes.yaml`` in the task folder, ``benchmark/tasks/<paper>/``, declared beside the
suites: group sets,
attributes, contexts, occupations...), so a variant of a suite (for example with a
non-binary gender indicator) is a YAML file, not a code edit.

Every row has the common columns of ``COMMON_COLUMNS``; each suite adds the
structured fields its score needs.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import re
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from benchmark.registries import PROBE_CONFIGS, SUITES, SuiteSpec

__all__ = ["COMMON_COLUMNS", "SuiteSpec", "SUITES", "PROBE_CONFIGS",
           "stable_seed", "slug", "make_probe_id", "expand_samples", "default_config_path", "load_config", "get_suite",
           "list_suites", "build_suite"]

COMMON_COLUMNS = ("probe_id", "suite", "prompt", "sample_index", "seed")


def stable_seed(*parts: Any) -> int:
    """A seed in [0, 2**31) that depends only on ``parts`` (not on Python's hash salt)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def slug(text: str) -> str:
    """Lower-case, dash-separated form of ``text`` for readable, stable probe ids."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "none"


def make_probe_id(suite: str, *keys: Any, sample_index: int) -> str:
    """``suite/key1/key2/.../NN``: stable, readable, unique within a suite."""
    return "/".join([suite, *(slug(k) for k in keys), f"{int(sample_index):02d}"])


def expand_samples(suite: str, prompts: list[dict], n_samples: int, key_fields: list[str]) -> pd.DataFrame:
    """One row per (prompt, sample): adds ``probe_id``, ``suite``, ``sample_index``, ``seed``.

    ``prompts`` are dicts holding at least ``prompt`` and the fields named in
    ``key_fields`` (which identify the prompt inside the suite and build its id).
    The seed is derived from the probe id alone, so an image does not depend on the
    order or batch in which probes are generated.
    """
    rows = []
    for p in prompts:
        for k in range(int(n_samples)):
            probe_id = make_probe_id(suite, *(p[f] for f in key_fields), sample_index=k)
            rows.append({"probe_id": probe_id, "suite": suite, "prompt": p["prompt"], "sample_index": k,
                         "seed": stable_seed(probe_id), **{f: v for f, v in p.items() if f != "prompt"}})
    return pd.DataFrame(rows)


def default_config_path(family: str) -> Path:
    """The family's registered YAML file (a family without one gets a path that does not exist)."""
    return PROBE_CONFIGS.get(family, Path(f"{family}.yaml"))


#: libyaml's safe loader where PyYAML was built with it (the same documents, several times faster)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=64)
def _parsed_yaml(path: str, mtime_ns: int, size: int) -> dict:
    """A config file parsed once per version of it (its modification time and size are part of
    the key): a run opens the built-in probe set, and so every family's config, many times."""
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_SAFE_LOADER) or {}  # noqa: S506 - a safe loader


def load_config(family: str, path: str | Path | None = None, overrides: dict | None = None) -> dict:
    """The family's default YAML config, optionally replaced by ``path`` and updated by ``overrides``."""
    src = Path(path) if path is not None else default_config_path(family)
    if not src.is_file():
        raise ValueError(f"no probe config for {family!r} at {src}")
    stat = src.stat()
    config = copy.deepcopy(_parsed_yaml(str(src.resolve()), stat.st_mtime_ns, stat.st_size))
    if overrides:
        config.update(overrides)
    return config


def get_suite(name: str) -> SuiteSpec:
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; known suites: {', '.join(sorted(SUITES))}")
    return SUITES[name]


def list_suites() -> list[str]:
    """Every suite: the task folders' in folder order, then plugins' (in registration order)."""
    return list(SUITES)  # ranked by the module that defines each builder (benchmark.registries)


def build_suite(name: str, config: dict | None = None, config_path: str | Path | None = None) -> pd.DataFrame:
    """Rows of suite ``name``; checks the common columns and unique probe ids."""
    spec = get_suite(name)
    if config is None:
        config = load_config(spec.family, config_path)
    df = spec.build(config)
    missing = [c for c in COMMON_COLUMNS if c not in df.columns]
    if missing:
        raise AssertionError(f"suite {name!r} rows lack columns {missing}")
    dup = df["probe_id"][df["probe_id"].duplicated()]
    if len(dup):
        raise AssertionError(f"suite {name!r} has duplicate probe ids, e.g. {dup.iloc[0]!r}")
    ordered = list(COMMON_COLUMNS) + [c for c in df.columns if c not in COMMON_COLUMNS]
    return df[ordered].reset_index(drop=True)

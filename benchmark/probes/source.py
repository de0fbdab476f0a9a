"""Where an audit's probes come from: the built-in suites, a probe dataset folder, or a
published probe dataset on the Hub at a pinned revision.

``t2ibench run --probes SOURCE [--probes-revision REV]`` opens one with
:func:`open_probe_set`:

* ``None`` / ``"builtin"``: the suites registered in :mod:`benchmark.probes`, built from the
  package's YAML configs;
* a folder written by ``t2ibench probes build`` (or ``python -m dataset_builders.probes``):
  one parquet config per suite plus ``probe_set.json``, which names each suite's family and
  holds the family configs the suites were built from (so annotators and scorers use the
  variant's lists: its groups, questions, attribute sets);
* a Hub dataset ID: the same folder, downloaded at ``revision`` (resolved to a commit).

A :class:`ProbeSet` gives the rows of any of its suites and :meth:`ProbeSet.record`, what the
run folder and ``results.json`` keep to tell probe sets apart: source, revision and a
fingerprint of the rows audited (the same rows give the same fingerprint whatever their
source), plus each suite's family and the family configs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

import benchmark
from benchmark.contract.digest import sha256_hex_chunks
from benchmark.hub.access import hub_errors
from benchmark.probes.registry import SUITES, build_suite, default_config_path, get_suite, list_suites, load_config
from benchmark.contract.values import plain_value

__all__ = ["BUILTIN", "PROBE_SET_FILE", "PROBES_SPLIT", "ProbeSet", "open_probe_set", "rows_fingerprint",
           "probe_set_manifest", "configs_of_record", "families_of_record", "rows_of_record", "suite_families"]

BUILTIN = "builtin"
#: written beside the parquet configs of a probe dataset folder
PROBE_SET_FILE = "probe_set.json"
PROBES_SPLIT = "test"
PROBE_SET_FORMAT = 1


def rows_fingerprint(table: pd.DataFrame) -> str:
    """sha256 over every field of every row (canonical JSON, rows in order): the same probes give
    the same fingerprint whether they were built here or read back from parquet."""
    return sha256_hex_chunks(_canonical_row(row) for row in table.to_dict("records"))


def _canonical_row(row: Mapping) -> bytes:
    """A probe row as one line of canonical JSON (the fields that are None left out: a column
    another suite adds is absent here)."""
    clean = {k: plain_value(v) for k, v in row.items()}
    clean = {k: v for k, v in clean.items() if v is not None}
    return json.dumps(clean, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8") + b"\n"


def probe_set_manifest(families: Mapping[str, str], configs: Mapping[str, dict], *, papers: Mapping[str, str],
                       package_version: str) -> dict:
    """The content of ``probe_set.json``."""
    return {"format": PROBE_SET_FORMAT, "package_version": package_version,
            "suites": {s: {"family": f, "paper": papers.get(s)} for s, f in families.items()},
            "configs": {k: dict(v) for k, v in configs.items()}}


@dataclass
class ProbeSet:
    """The suites of one probe source, their families and family configs."""

    kind: str                                  # builtin | folder | hub
    source: str                                # "builtin", a folder path, or a Hub dataset ID
    revision: str | None                       # package version, None (folder) or the resolved commit
    families: dict[str, str]                   # suite -> probe family (the task that scores it)
    configs: dict[str, dict]                   # family -> the config its suites were built from
    folder: Path | None = None
    _tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    def suites(self) -> list[str]:
        return list(self.families)

    def check_suites(self, suites: Sequence[str]) -> list[str]:
        unknown = [s for s in suites if s not in self.families]
        if unknown:
            where = "the built-in probes" if self.kind == BUILTIN else f"probe set {self.source}"
            raise ValueError(f"unknown suite {unknown[0]!r} in {where}; its suites: {', '.join(self.families)}")
        return list(dict.fromkeys(suites))

    def suite_table(self, suite: str) -> pd.DataFrame:
        self.check_suites([suite])
        if suite not in self._tables:
            if self.kind == BUILTIN:
                self._tables[suite] = build_suite(suite, config=self.configs.get(self.families[suite]))
            else:
                files = sorted((self.folder / suite).glob(f"{PROBES_SPLIT}-*.parquet"))
                if not files:
                    raise ValueError(f"probe set {self.source} has no parquet files for suite {suite!r}")
                self._tables[suite] = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
        return self._tables[suite]

    def table(self, suites: Sequence[str]) -> pd.DataFrame:
        """Rows of ``suites`` in that order (every probe: no limit)."""
        suites = self.check_suites(suites)
        if not suites:
            raise ValueError("no suites to generate")
        return pd.concat([self.suite_table(s) for s in suites], ignore_index=True)

    def record(self, suites: Sequence[str]) -> dict:
        """What run_config.json and results.json keep about the probes of ``suites``."""
        suites = self.check_suites(suites)
        families = {s: self.families[s] for s in suites}
        configs = {f: self.configs[f] for f in dict.fromkeys(families.values()) if f in self.configs}
        return {"kind": self.kind, "source": self.source, "revision": self.revision,
                "fingerprint": self._fingerprint(suites, families, configs), "suites": families,
                "configs": configs}

    def _fingerprint(self, suites: list[str], families: dict, configs: dict) -> str:
        if self.kind != BUILTIN:
            return rows_fingerprint(self.table(suites))
        # the built-in rows are a function of the suites, their family configs and this code: a
        # process that opens the built-in probes again and again (every stage of every run in it)
        # fingerprints them once
        key = json.dumps([suites, families, configs], sort_keys=True, default=str)
        if key not in _BUILTIN_FINGERPRINTS:
            _BUILTIN_FINGERPRINTS[key] = rows_fingerprint(self.table(suites))
        return _BUILTIN_FINGERPRINTS[key]


#: fingerprint of built-in rows by (suites, families, configs): see ProbeSet._fingerprint
_BUILTIN_FINGERPRINTS: dict[str, str] = {}


def _builtin() -> ProbeSet:
    families = {s: get_suite(s).family for s in list_suites()}
    # a plugin's family may build its suites without a YAML config
    configs = {f: load_config(f) if default_config_path(f).is_file() else {} for f in dict.fromkeys(families.values())}
    return ProbeSet(BUILTIN, BUILTIN, benchmark.__version__, families, configs)


def _from_folder(folder: Path, *, kind: str = "folder", source: str | None = None,
                 revision: str | None = None) -> ProbeSet:
    path = folder / PROBE_SET_FILE
    if not path.is_file():
        raise ValueError(f"{source or folder} is not a probe dataset: no {PROBE_SET_FILE} (build one with "
                         "`t2ibench probes build --out DIR`)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        suites = manifest["suites"]
        families = {str(s): str(v["family"]) for s, v in suites.items()}
        configs = {str(k): dict(v) for k, v in (manifest.get("configs") or {}).items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path} is not a valid probe set manifest ({exc})") from None
    return ProbeSet(kind, source or str(folder.resolve()), revision, families, configs, folder=folder)


def _from_hub(repo_id: str, revision: str | None) -> ProbeSet:
    with hub_errors(repo_id, action="download probes from"):
        from huggingface_hub import HfApi, snapshot_download

        info = HfApi().dataset_info(repo_id, revision=revision)
        folder = snapshot_download(repo_id, repo_type="dataset", revision=info.sha,
                                   allow_patterns=["*.parquet", PROBE_SET_FILE, "README.md"])
    return _from_folder(Path(folder), kind="hub", source=repo_id, revision=info.sha)


def open_probe_set(source: str | os.PathLike | None = None, revision: str | None = None) -> ProbeSet:
    """The probe set of ``source`` (see the module docstring); one-line errors for a folder that
    is no probe dataset, a Hub ID that cannot be reached, or a revision given with a folder."""
    if source is None or str(source) == BUILTIN:
        if revision:
            raise ValueError("--probes-revision needs --probes with a Hub dataset ID")
        return _builtin()
    text = str(source)
    folder = Path(os.path.expanduser(text))
    if folder.is_dir():
        if revision:
            raise ValueError(f"--probes-revision {revision} does not apply to the local folder {text}")
        return _from_folder(folder)
    from benchmark.models.hub_access import looks_like_path

    if looks_like_path(text) or text.count("/") > 1:
        raise ValueError(f"probe folder {text} does not exist")
    return _from_hub(text, revision)


def rows_of_record(record: Mapping[str, Any] | None, suites: Sequence[str],
                   probe_ids: Sequence[str]) -> tuple[pd.DataFrame, dict]:
    """The rows of ``probe_ids`` in ``suites`` of the probe set a results file's ``probes`` record
    names (the built-in one when it names none), in probe-set order, and the probe set's record
    of those suites; ValueError (one line) when the set cannot be opened here, its rows are not
    those recorded (fingerprint) or it lacks some of the ids."""
    record = record or {}
    kind = record.get("kind") or BUILTIN
    try:
        probe_set = open_probe_set(None if kind == BUILTIN else record.get("source"),
                                   record.get("revision") if kind == "hub" else None)
        found = probe_set.record(suites)
    except ValueError as exc:
        raise ValueError(f"its probe set cannot be opened here: {exc}") from None
    if record.get("fingerprint") and found["fingerprint"] != record["fingerprint"]:
        raise ValueError("its probe set's rows are not those it was scored on (the fingerprint differs)")
    table = probe_set.table(suites)
    rows = table[table["probe_id"].astype(str).isin(set(probe_ids))].reset_index(drop=True)
    if len(rows) != len(set(probe_ids)):
        raise ValueError(f"{len(set(probe_ids)) - len(rows)} of its probe ids are not in its probe set")
    return rows, found


def families_of_record(record: Mapping[str, Any] | None) -> dict[str, str]:
    """suite -> family of a run's probes record (empty for run folders written before it existed)."""
    return dict((record or {}).get("suites") or {})


def suite_families(record: Mapping[str, Any] | None, suites: Sequence[str]) -> dict[str, str]:
    """suite -> probe family of ``suites``: as a run's probes record says, else as the suite is
    registered ("" for a suite neither knows)."""
    recorded = families_of_record(record)
    list_suites()  # registers the built-in suites
    return {s: recorded.get(s) or (SUITES[s].family if s in SUITES else "") for s in suites}


def configs_of_record(record: Mapping[str, Any] | None) -> dict[str, dict]:
    return dict((record or {}).get("configs") or {})

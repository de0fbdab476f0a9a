"""The probes a run generates: the probe set opened, its suites and task inputs checked
(:func:`choose_probes`), the ``--limit`` subset (:func:`limit_probes`) and its fingerprint.

Limit semantics (``limit`` = N probes per suite): probes of a suite are ranked by
sample round first (sample 0 of every prompt, then sample 1, ...) and, inside a round,
by prompts spread evenly over the suite's prompt list (van der Corput order of prompt
positions); the first N of that ranking are kept, in suite order. So with N >= the
number of prompts every prompt gets floor(N/P) or ceil(N/P) samples, and with fewer,
the prompts kept are spread over the whole list (both genders, many groups) instead of
being its first block. A smaller limit's probes are a subset of a larger limit's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from benchmark.contract.audit_request import ProbeChoice
from benchmark.contract.digest import sha256_hex_chunks
from benchmark.probes.source import open_probe_set
from benchmark.tasks import check_probe_config
from benchmark.tasks.inputs import declared_inputs, plan_inputs


def _spread_order(n: int) -> list[int]:
    """Positions 0..n-1 in van der Corput order: every prefix is spread over the whole range."""
    if n <= 0:
        return []
    bits = max(1, (n - 1).bit_length())
    order, seen = [], set()
    for j in range(1 << bits):
        rev = int(format(j, f"0{bits}b")[::-1], 2)  # radical inverse of j in base 2, times 2**bits
        pos = (rev * n) >> bits
        if pos not in seen:
            seen.add(pos)
            order.append(pos)
    return order


def prompt_key(probe_id: str) -> str:
    """The prompt a probe belongs to: its id without the trailing ``/NN`` sample number."""
    return probe_id.rsplit("/", 1)[0] if "/" in probe_id else probe_id


def limit_probes(probes: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    """Keep ``limit`` probes per suite (see the module docstring), rows in their original order."""
    probes = probes.reset_index(drop=True)
    if limit is None:
        return probes
    limit = int(limit)
    if limit < 1:
        raise ValueError(f"limit must be a positive number of probes per suite, got {limit}")
    keep = []
    for _, df in probes.groupby("suite", sort=False):
        if len(df) <= limit:
            keep.extend(df.index)
            continue
        prompts = list(dict.fromkeys(prompt_key(p) for p in df["probe_id"]))
        rank_of_prompt = {prompts[pos]: r for r, pos in enumerate(_spread_order(len(prompts)))}
        round_in_prompt: dict[str, int] = {}
        keys = []
        for idx, pid in zip(df.index, df["probe_id"]):
            pk = prompt_key(pid)
            rnd = round_in_prompt.get(pk, 0)
            round_in_prompt[pk] = rnd + 1
            keys.append((rnd, rank_of_prompt[pk], idx))
        keep.extend(idx for _, _, idx in sorted(keys)[:limit])
    return probes.loc[sorted(keep)].reset_index(drop=True)


def build_probes(suites: Sequence[str], limit_per_suite: int | None = None, probe_set: Any = None) -> pd.DataFrame:
    """The ordered probe list of ``suites`` (suite order as given), limited per suite, from
    ``probe_set`` (:class:`benchmark.probes.source.ProbeSet`; default: the built-in probes)."""
    if not suites:
        raise ValueError("no suites to generate")
    probe_set = probe_set if probe_set is not None else open_probe_set()
    return limit_probes(probe_set.table(list(suites)), limit_per_suite)


def probes_fingerprint(probes: pd.DataFrame) -> str:
    """sha256 over (probe_id, prompt, seed) of every probe, in order."""
    return sha256_hex_chunks(f"{pid}\x1f{prompt}\x1f{int(seed)}\x1e".encode("utf-8")
                             for pid, prompt, seed in zip(probes["probe_id"], probes["prompt"], probes["seed"]))


@dataclass
class ChosenProbes:
    """The probes a run generates: the probe set's record (source, revision, configs), every
    probe of the chosen suites, the ``--limit`` subset, and the task inputs the run was given
    (``inputs``: name -> identity) with the suites each replaces (``replaced``: name -> suites)."""

    suites: list[str]
    record: dict
    all_probes: pd.DataFrame
    limited: pd.DataFrame
    inputs: dict[str, dict] = field(default_factory=dict)
    replaced: dict[str, list[str]] = field(default_factory=dict)


def choose_probes(choice: ProbeChoice, *, run_dir: str | Path | None = None) -> ChosenProbes:
    """Open the probe set ``choice.source`` at ``choice.revision`` (None for the built-in probes,
    a probe dataset folder or a Hub dataset ID; :func:`benchmark.probes.source.open_probe_set`),
    check the suites (an unknown one fails here), load and check the task inputs given by name
    (``choice.inputs``; :func:`benchmark.tasks.inputs.plan_inputs`: e.g. a reference whose images
    replace the suites that would generate them) and refuse a probe config no task can score."""
    probe_set = open_probe_set(choice.source, choice.revision)
    asked = probe_set.check_suites(list(choice.suites) if choice.suites else probe_set.suites())
    planned = plan_inputs(run_dir, probe_set, asked, dict(choice.inputs))
    suites = planned.suites
    record = probe_set.record(suites)
    for family, config in record["configs"].items():
        check_probe_config(family, config)
    all_probes = build_probes(suites, None, probe_set)
    return ChosenProbes(list(suites), record, all_probes, limit_probes(all_probes, choice.limit_per_suite),
                        planned.identities, planned.replaced)


def announce_inputs(chosen: ChosenProbes) -> None:
    """One line on stderr per task input that replaces generated suites."""
    for task_input in declared_inputs():
        replaced = chosen.replaced.get(task_input.name)
        if replaced:
            print(task_input.replaced_text(chosen.inputs[task_input.name], replaced), file=sys.stderr)

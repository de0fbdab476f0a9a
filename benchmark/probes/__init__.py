"""Probe sets of the five papers. ``build_suite("gep_neutral")`` -> DataFrame, one row per image.
``dataset`` builds them as one Hub dataset, registered here as the dataset builder ``probes``."""

from benchmark.probes.registry import (
    COMMON_COLUMNS,
    SUITES,
    SuiteSpec,
    build_suite,
    get_suite,
    list_suites,
    load_config,
    make_probe_id,
    stable_seed,
)
from benchmark.registries import DatasetBuilderSpec, Registrations

REGISTRATIONS = Registrations(dataset_builders=(DatasetBuilderSpec(
    "probes", "Build the probe sets as one Hub-layout dataset folder (a config per suite, split `test`) with its "
    "dataset card, and optionally publish it.", f"{__name__}.dataset"),))

__all__ = [
    "COMMON_COLUMNS", "SUITES", "SuiteSpec", "build_suite", "get_suite", "list_suites", "load_config",
    "make_probe_id", "stable_seed",
]

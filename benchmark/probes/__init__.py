"""Probe sets of the five papers. ``build_suite("gep_neutral")`` -> DataFrame, one row per image."""

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

__all__ = [
    "COMMON_COLUMNS", "SUITES", "SuiteSpec", "build_suite", "get_suite", "list_suites", "load_config",
    "make_probe_id", "stable_seed",
]

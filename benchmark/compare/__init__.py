"""Comparing audits: did a change reduce bias? (``t2ibench compare``, docs/compare.md)

:func:`compare_runs` rescores two or more run folders (or results files rebuilt from the per-probe
labels they carry) on the probes they share, alone and together, and returns a :class:`Comparison`
(``.rows``, ``.to_dict()``): per score the difference, its interval (checked), the Holm-corrected
p-value of the paired randomization test (:mod:`benchmark.scores.randomization`), the minimum
detectable difference of the test that decides and better / worse by the score's direction, or
why it was not tested
(:func:`compare_loaded`: the same for runs already loaded). The names load
lazily, so that ``t2ibench --help`` (which reads :mod:`benchmark.compare.cli`) stays light.
"""

from importlib import import_module

__all__ = ["CompareError", "Comparison", "compare_loaded", "compare_runs"]
_WHERE = {"CompareError": "benchmark.compare.runs", "Comparison": "benchmark.compare.comparison",
          "compare_loaded": "benchmark.compare.comparison", "compare_runs": "benchmark.compare.comparison"}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

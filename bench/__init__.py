"""Benchmark scripts (performance): run them as ``python bench/<script>.py --help``.

Not part of the installed package; see ``bench/README.md`` and ``docs/performance.md``.
"""

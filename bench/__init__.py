"""Benchmark scripts (performance, issue 8): run them as ``python bench/<script>.py --help``.

Not part of the installed package; see ``bench/README.md`` and ``docs/performance.md``.
"""

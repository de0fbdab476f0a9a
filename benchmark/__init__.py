"""t2i-bias-benchmark: audit text-to-image models for social bias and compositional skill.

Layers (data flows one way): ``probes`` (what to generate) -> ``models`` (how images
are made) -> ``annotate`` (images to labels) -> ``scores`` (pure functions over
labels) -> ``runner`` (joins them) -> results, report and leaderboard.
"""

from pathlib import Path

__version__ = "0.1.0"


def metric_path(name: str) -> str:
    """Folder of the evaluate module ``name`` (e.g. "gep"), for ``evaluate.load(metric_path(name))``.

    The installed wheel's copy (benchmark/metric_modules/, written by setup.py) comes first, then
    the checkout's metrics/ (an editable install). Nothing is fetched: the module loads offline.
    """
    here = Path(__file__).resolve().parent
    bases = [here / "metric_modules", here.parent / "metrics"]
    for base in bases:
        if (base / name / f"{name}.py").is_file():
            return str(base / name)
    known = sorted({p.parent.name for b in bases if b.is_dir() for p in b.glob("*/*.py") if p.stem == p.parent.name})
    raise ValueError(f"no evaluate module named {name!r}; the modules are: {', '.join(known) or 'none found'}")

"""t2i-bias-benchmark: audit text-to-image models for social bias and compositional skill.

Data flows one way: ``probes`` (what to generate) -> ``models`` (how images are made) ->
``annotate`` (images to labels) -> ``scores`` (pure functions over labels) -> ``runner``
(joins them) -> results, report and leaderboard. Imports point down the layers, bottom to
top (tests/test_layers.py ``LAYERS`` checks it):

1. ``registries``, ``contract``, ``papers``, ``scores``, ``present``, ``extras``, ``cli_types``, ``frozen_imports``
2. ``probes``, ``probe_build_args``, ``models``, ``hub``
3. ``reference_attributes``
4. ``annotate``
5. ``tasks`` (one folder per paper; they fill the registries when imported)
6. ``runner``, ``compare`` (two runs scored again in memory and compared)
7. ``human``, ``commands``, ``calibration`` (the simulations that check compare)
8. ``cli``, ``__main__``

This package's ``__init__`` stands above them all: it installs the registries' loader
(:func:`load_tasks`), which registers the package's own generic entries
(:data:`PACKAGE_REGISTRATIONS`), then the task folders', then plugins'.
"""

from collections.abc import Sequence
from importlib import import_module
from pathlib import Path

from benchmark import registries

__version__ = "0.1.0"

#: the package's modules that declare generic registry entries (their ``REGISTRATIONS``: label
#: files, annotator kinds, the ITA of the papers, the Monk swatches, the probe-set and human-label
#: dataset builders), registered first and listed in this order, before the task folders'
PACKAGE_REGISTRATIONS = (
    "benchmark.annotate.label_files", "benchmark.annotate.clip_labels", "benchmark.annotate.vqa_labels",
    "benchmark.annotate.skin_tone_labels", "benchmark.annotate.detections", "benchmark.annotate.skin_tone",
    "benchmark.reference_attributes", "benchmark.probes", "benchmark.human",
)


def _load_registries() -> None:
    """The registries' loader: the package's generic entries, then the task folders' and the
    plugins' (:func:`benchmark.tasks.discovery.import_task_folders`)."""
    for module in PACKAGE_REGISTRATIONS:
        registries.register_all(import_module(module).REGISTRATIONS, registries.PACKAGE)
    # Imported when first called: ``import benchmark`` stays light (``t2ibench --help``), and
    # the task folders import benchmark.registries, which is being imported when this is installed.
    from benchmark.tasks.discovery import import_task_folders

    import_task_folders()


def load_tasks(plugins: Sequence[str] = ()) -> None:
    """Import the task folders and the ``t2ibench.plugins`` entry points once, then the modules
    ``plugins``: what fills the registries. The command line and the library's entry points
    (``run_audit``, ``score_run``, the leaderboard) call it before they read a registry; a
    registry read first calls it too (:mod:`benchmark.registries`)."""
    from benchmark.tasks.registry import load_plugins  # the top imports down; see _import_task_folders

    load_plugins(plugins)


registries.install_loader(_load_registries)


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
